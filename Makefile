# Two commands matter (see README.md): `make book` builds the site, `make test` runs every test.
# Both create the virtual environment in .venv on first use; only python3 is needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check --no-input -q
# The chapters, then their worked solutions (solutions/, one companion notebook per chapter).
NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb)) $(sort $(wildcard solutions/*.ipynb))

.PHONY: all env book site pdf release check nbval test test-native test-portable test-browser execute lab bench clean

all: book

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever a requirements or project file changes. --no-compile: Python writes the
# bytecode of the modules actually imported on first use, instead of pip compiling all of
# torch's (~30 s of the ~110 s install).
$(VENV)/.installed: $(BIN)/activate requirements.txt requirements-nodeps.txt constraints.txt pyproject.toml
	$(PIP) install --no-compile -r requirements.txt -c constraints.txt
	$(PIP) install --no-compile --no-deps -r requirements-nodeps.txt -c constraints.txt
	$(PIP) install --no-compile --no-deps -e .
	touch $@

env: $(VENV)/.installed

# The site, from the outputs saved in the notebooks; any Sphinx warning fails the build. Then
# the two PDFs that its header links to, where Chromium and poppler-utils are installed.
book: site
	$(BIN)/python -m attention_core.book.pdf --if-possible
	@echo "Open _build/html/index.html"

site: env
	$(BIN)/jupyter-book build . -W -n --keep-going

# The book as two PDFs, _build/pdf/attention-en.pdf and attention-zh.pdf (also copied into
# _build/html/pdf/), printed by Chromium from the site's pages: needs `apt-get install chromium
# poppler-utils`. Nothing is executed: the pages hold the notebooks' committed outputs.
pdf: site
	$(BIN)/python -m attention_core.book.pdf

# A cell may take minutes when other jobs oversubscribe the two cores (OpenMP threads that
# spin-wait then run ~10x slower): the cell timeout only guards against a hang.
NBVAL := $(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with \
	tests/nbval_sanitize.cfg --nbval-cell-timeout=1200 -q

# nbval over every chapter and solutions notebook, two notebooks at a time, so that two workers share the two cores:
# the two chapters that train translation models go first and finish with the rest.
TRAINING := chapters/08_transformer.ipynb chapters/04_seq2seq_attention.ipynb
NBVAL_2 := $(NBVAL) -n 2 --dist loadscope --no-loadscope-reorder $(TRAINING) \
	$(filter-out $(TRAINING),$(NOTEBOOKS))

# A release: the offline site, both PDFs, the package's wheel and the changelog in one zip,
# dist/attention-book-<version>.zip (the version is attention_core.__version__).
release: pdf
	rm -rf dist/wheel
	$(PIP) wheel --no-deps --no-build-isolation -w dist/wheel .
	rm -rf build  # setuptools' scratch folder
	$(BIN)/python -m attention_core.book.release

# The contributor's quick loop (under two minutes): the linter, then the unit tests of the
# package (mechanisms, worlds, solutions' helpers) without the slow and browser ones.
check: env
	$(BIN)/ruff check .
	$(BIN)/python -m pytest tests/core tests/worlds tests/solutions_support tests/practice -q -p no:randomly -n 2 \
		-m "not slow and not browser"

# One notebook (or several) as CI runs it: natively, then portably with RETRAIN=1, e.g.
# make nbval NB=chapters/04_seq2seq_attention.ipynb
nbval: env
	@test -n "$(NB)" || { echo "usage: make nbval NB=chapters/04_seq2seq_attention.ipynb"; exit 2; }
	OMP_WAIT_POLICY=PASSIVE $(NBVAL) $(NB)
	RETRAIN=1 ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 $(NBVAL) $(NB)

# Everything: unit/property/cross-check tests; nbval over every chapter as the machine runs
# and as a reader runs it (chapters 4, 7, 8 and 10 load their shipped models); then, side by
# side, nbval again with portable kernels on one thread (another summation order, as on
# another CPU), training chapters 4, 7, 8 and 10 from scratch (RETRAIN=1), and the tests
# marked `site` (the built site in a browser, the live widgets in JupyterLab, the two PDFs;
# browser tests skip where Chromium is missing). Each side prints its output when it ends.
test: env
	$(BIN)/python -m pytest tests -q -p no:randomly -n 2 -m "not site"
	$(MAKE) test-native
	$(MAKE) -j2 --output-sync=target test-portable test-browser

# The machine's own thread count in each kernel. Two kernels at a time then run more OpenMP
# threads than there are cores; PASSIVE makes a waiting thread sleep rather than spin, which
# changes only scheduling, never a result.
test-native: env
	OMP_WAIT_POLICY=PASSIVE $(NBVAL_2)

# One thread per kernel: two kernels fill two cores. RETRAIN=1: the chapters train what they
# would otherwise load, and their assertions check what this pass trained.
test-portable: env
	RETRAIN=1 ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 $(NBVAL_2)

# The live kernels get one thread: they share the cores with test-portable.
test-browser: book
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests -q -p no:randomly -m site

# Re-run every notebook and save its outputs (commit them afterwards).
execute: env
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=1200 --ExecutePreprocessor.store_widget_state=False \
		--ExecutePreprocessor.record_timing=False $(NOTEBOOKS)

# JupyterLab with live widgets (ipywidgets 8 ships its JupyterLab extension), opened on the
# repository, so that a chapter's links to its solutions (../solutions/) open too.
lab: env
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/chapters

bench: env
	$(BIN)/python bench/bench_mha.py
	$(BIN)/python bench/bench_checks.py
	$(BIN)/python bench/bench_gqa.py
	$(BIN)/python bench/bench_kv_cache.py
	$(BIN)/python bench/bench_long.py

clean:
	rm -rf _build dist
