"""How long a reader waits for "Run All": each chapter executed alone, as a reader's kernel runs it.

Each notebook runs in a fresh kernel (nbclient, the machine's default threads), one at a time,
``--runs`` times in turn (chapter 1..9, then again), so that a change of load on the machine
touches every chapter rather than one. Prints each run, the median per chapter and the sum of
the medians (the whole book); with ``--cells N``, the N slowest cells of each chapter's last run
(where the time goes). Run it on a quiet machine: nothing else should compete for the cores.
Nothing is written back to the notebooks.

    python bench/reader_wait.py [chapters/04_seq2seq_attention.ipynb ...] [--runs 3] [--cells 5]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path) -> tuple[float, list[tuple[float, int, str]]]:
    """Run a copy of the notebook; return (seconds, [(cell seconds, index, first line), ...])."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=1800, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        client.execute(cwd=tmp)
    seconds = time.perf_counter() - start
    cells = []
    for i, cell in enumerate(nb.cells):
        stamps = cell.metadata.get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in stamps:
            began = datetime.fromisoformat(stamps["iopub.execute_input"].replace("Z", "+00:00"))
            ended = datetime.fromisoformat(stamps["shell.execute_reply"].replace("Z", "+00:00"))
            first = cell.source.splitlines()[0][:60] if cell.source else ""
            cells.append(((ended - began).total_seconds(), i, first))
    return seconds, sorted(cells, reverse=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="*", type=Path)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cells", type=int, default=0, help="show the N slowest cells per chapter")
    args = p.parse_args()
    notebooks = [n.resolve() for n in args.notebooks] or sorted((ROOT / "chapters").glob("*.ipynb"))
    times = {n: [] for n in notebooks}
    slowest = {}
    for run in range(args.runs):
        for n in notebooks:
            seconds, cells = execute(n)
            times[n].append(seconds)
            slowest[n] = cells
            print(f"run {run + 1}  {n.name:<32} {seconds:7.1f} s", flush=True)
    print(f"\n{'chapter':<32} {'runs (s)':<26} median")
    for n, ts in times.items():
        print(f"{n.name:<32} {', '.join(f'{t:.1f}' for t in ts):<26} {statistics.median(ts):6.1f}")
    total = sum(statistics.median(ts) for ts in times.values())
    print(f"{'sum of the medians':<59} {total:6.1f} s = {total / 60:.1f} min")
    if args.cells:
        for n in notebooks:
            print(f"\n{n.name}: slowest cells of the last run")
            for seconds, i, first in slowest[n][:args.cells]:
                print(f"  cell {i:3d}  {seconds:6.1f} s  {first}")


if __name__ == "__main__":
    main()
