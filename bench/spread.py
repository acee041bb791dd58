"""How far do the hardware-decided outputs of a chapter move between CPU settings?

Runs a notebook once per setting, each time in a fresh kernel with the setting's environment,
and prints side by side what its cells tagged ``nbval-ignore-output`` printed (trained
losses and scores, timings). The bands those cells assert are chosen from this spread; a
setting under which a cell's assertion fails is reported as such.

    python bench/spread.py chapters/04_seq2seq_attention.ipynb [--settings native,portable]

Settings: native (the machine as it is), portable (ATEN_CPU_CAPABILITY=default with one
thread: what CI's second nbval run uses), avx2 (ATEN_CPU_CAPABILITY=avx2), one-thread
(OMP_NUM_THREADS=1), mkl-compatible (MKL_CBWR=COMPATIBLE), cpu (ATTENTION_CORE_DEVICE=cpu on
a GPU machine). Under every setting the chapters train what they would otherwise load
(RETRAIN=1): the spread is that of training.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

SETTINGS = {
    "native": {},
    "portable": {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "one-thread": {"OMP_NUM_THREADS": "1"},
    "mkl-compatible": {"MKL_CBWR": "COMPATIBLE"},
    "cpu": {"ATTENTION_CORE_DEVICE": "cpu"},
}
TAG = "nbval-ignore-output"


def run(path: Path, env: dict) -> tuple[list[str], list[str], float]:
    """Execute a copy of the notebook; return (texts of the tagged cells, errors, seconds)."""
    nb = nbformat.read(path, as_version=4)
    env = {"RETRAIN": "1", **env}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel is a child process and inherits the environment
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            NotebookClient(nb, timeout=900, allow_errors=True,
                           resources={"metadata": {"path": str(path.parent.resolve())}},
                           kernel_name="python3").execute(cwd=tmp)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    seconds = time.perf_counter() - start
    texts, errors = [], []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                errors.append(f"{out.ename}: {out.evalue} in\n{cell.source[:200]}")
        if TAG in cell.metadata.get("tags", []):
            texts.append("".join(o.get("text", "") for o in cell.get("outputs", [])
                                 if o.output_type == "stream" and o.name == "stdout"))
    return texts, errors, seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="+", type=Path)
    p.add_argument("--settings", default="native,portable,avx2,one-thread,mkl-compatible")
    args = p.parse_args()
    names = args.settings.split(",")
    for name in names:
        if name not in SETTINGS:
            sys.exit(f"unknown setting {name!r}; known: {', '.join(SETTINGS)}")
    for path in args.notebooks:
        results = {}
        for name in names:
            try:
                results[name] = run(path, SETTINGS[name])
            except Exception as err:  # a dead kernel loses one setting, not the whole run
                print(f"[{path.name}] {name}: did not finish ({type(err).__name__}: {err})")
                continue
            print(f"[{path.name}] {name}: {results[name][2]:.0f} s, "
                  f"{len(results[name][1])} failed cells", flush=True)
            for k, text in enumerate(results[name][0]):  # as it goes: a later crash keeps these
                print(f"--- {name}, tagged cell {k + 1}\n{text.rstrip()}", flush=True)
        names = [name for name in names if name in results]
        if not names:
            continue
        for k in range(len(results[names[0]][0])):
            print(f"\n===== {path.name}: tagged cell {k + 1} =====")
            for name in names:
                print(f"--- {name}")
                print(results[name][0][k].rstrip())
        for name in names:
            for err in results[name][1]:
                print(f"\n!!! {name}: {err}")


if __name__ == "__main__":
    main()
