"""Chapters executed without a Jupyter kernel: where a machine has no nbclient (the lent GPUs).

Each notebook's code cells run in order in one namespace of this process, as a kernel would
run them: the value of a cell's last expression goes through IPython's display formatter (so a
slider's frames are drawn), and every figure left open is rendered as the inline backend's
retina PNG, then closed. On CUDA each cell ends with a synchronize, so its time is its own.
Prints each chapter's seconds and slowest cells, and any cell that raised (the rest still run);
writes every cell's time and printed output (the last 1500 characters) to ``--json``.

What it leaves out: starting a kernel (about 4 s on a 2-core machine) and sending outputs to a
front end. ``bench/reader_wait.py`` measures a reader's kernel; this measures the cells.

    python bench/run_in_process.py chapters/04_seq2seq_attention.ipynb ... [--json out.json]
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
ROOT = Path(__file__).resolve().parents[1]


def run_cell(source: str, name: str, namespace: dict, show) -> None:
    """Run one cell; display its last expression; render and close every open figure."""
    import matplotlib.pyplot as plt

    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, name, "exec"), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
        if value is not None and show is not None:
            show(value)
    for number in plt.get_fignums():  # the inline backend's "retina": twice the pixels
        figure = plt.figure(number)
        figure.savefig(io.BytesIO(), format="png", dpi=2 * figure.dpi, bbox_inches="tight")
    plt.close("all")


def execute(path: Path, show) -> dict:
    import torch

    notebook = json.loads(path.read_text())
    namespace = {"__name__": "__main__"}
    cells, here = [], os.getcwd()
    os.chdir(path.parent)  # as a kernel started beside the notebook
    start = time.perf_counter()
    try:
        for index, cell in enumerate(notebook["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            printed, began, error = io.StringIO(), time.perf_counter(), None
            try:
                with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                    run_cell(source, f"{path.name}[{index}]", namespace, show)
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
            except Exception as e:  # report it and go on: later cells may not need it
                error = f"{type(e).__name__}: {str(e)[:300]}"
            cells.append({"cell": index, "seconds": round(time.perf_counter() - began, 2),
                          "first_line": source.splitlines()[0][:60] if source else "",
                          "error": error, "output": printed.getvalue()[-1500:]})
    finally:
        os.chdir(here)
    return {"seconds": time.perf_counter() - start, "cells": cells}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="+", type=Path)
    p.add_argument("--json", type=Path, help="write every cell's time and output here")
    p.add_argument("--cells", type=int, default=6, help="show the N slowest cells per chapter")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch
    try:
        from IPython.core.formatters import DisplayFormatter
        show = DisplayFormatter().format
    except ImportError:
        show = None
    where = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    print(f"torch {torch.__version__} on {where}, {torch.get_num_threads()} threads", flush=True)
    results = {}
    for path in args.notebooks:
        result = results[str(path)] = execute(path.resolve(), show)
        errors = [c for c in result["cells"] if c["error"]]
        print(f"\n{path.name}: {result['seconds']:.1f} s, {len(errors)} cells raised", flush=True)
        for c in sorted(result["cells"], key=lambda c: -c["seconds"])[:args.cells]:
            print(f"  cell {c['cell']:3d} {c['seconds']:7.2f} s  {c['first_line']}")
        for c in errors:
            print(f"  cell {c['cell']} raised {c['error']}")
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
