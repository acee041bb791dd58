# Two commands matter (see README.md): `make book` builds the site, `make test` runs every test.
# Both create the virtual environment in .venv on first use; only python3 is needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check --no-input -q
NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb))

.PHONY: all env book test execute lab bench clean

all: book

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever a requirements or project file changes.
$(VENV)/.installed: $(BIN)/activate requirements.txt requirements-nodeps.txt constraints.txt pyproject.toml
	$(PIP) install -r requirements.txt -c constraints.txt
	$(PIP) install --no-deps -r requirements-nodeps.txt -c constraints.txt
	$(PIP) install --no-deps -e .
	touch $@

env: $(VENV)/.installed

# The site, from the outputs saved in the notebooks; any Sphinx warning fails the build.
book: env
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "Open _build/html/index.html"

# A cell may take minutes when other jobs oversubscribe the two cores (OpenMP threads that
# spin-wait then run ~10x slower): the cell timeout only guards against a hang.
NBVAL := $(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with \
	tests/nbval_sanitize.cfg --nbval-cell-timeout=1200 -q -p no:xdist $(NOTEBOOKS)

# Everything: unit/property/cross-check tests, nbval over every chapter twice (as the machine
# runs, then with portable kernels on one thread: another summation order, as on another CPU),
# the site build, and, where Chromium is installed, the site in a headless browser and the
# chapters' live widgets in JupyterLab.
test: env
	$(BIN)/python -m pytest tests -q -p no:randomly -n 2 --ignore=tests/test_site.py --ignore=tests/test_lab.py
	$(NBVAL)
	ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 $(NBVAL)
	$(MAKE) book
	$(BIN)/python -m pytest tests/test_site.py tests/test_lab.py -q

# Re-run every notebook and save its outputs (commit them afterwards).
execute: env
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=1200 --ExecutePreprocessor.store_widget_state=False \
		--ExecutePreprocessor.record_timing=False $(NOTEBOOKS)

# JupyterLab with live widgets (ipywidgets 8 ships its JupyterLab extension).
lab: env
	$(BIN)/jupyter lab chapters/

bench: env
	$(BIN)/python bench/bench_mha.py
	$(BIN)/python bench/bench_checks.py
	$(BIN)/python bench/bench_gqa.py
	$(BIN)/python bench/bench_kv_cache.py
	$(BIN)/python bench/bench_long.py

clean:
	rm -rf _build
