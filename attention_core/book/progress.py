"""A progress bar for a slow cell that leaves nothing behind: shown while the cell runs, gone
from the notebook once it is done.

``for n in progress(lengths, "timing"): ...`` iterates as the loop would. In a Jupyter kernel
with ipywidgets it shows tqdm's notebook bar meanwhile, and when the loop ends it clears the
cell's output area, so the saved notebook (and the site built from it) holds only what the cell
printed afterwards. Use it before the cell prints anything: clearing takes everything shown so
far. A loop left early (an error, a ``break``) clears nothing, and its bar shows where it
stopped. Outside a kernel (plain Python, a script timing the chapters) it shows nothing.

The bar is displayed with its widget view alone, without tqdm's text fallback: a notebook test
that compares a cell's text outputs then sees nothing of it either.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from ..contracts import contract, instance_of

T = TypeVar("T")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


@contract(desc=instance_of(str))
def progress(iterable: Iterable[T], desc: str, total: int | None = None) -> Iterator[T]:
    """Yield the items of ``iterable``, with a transient bar in Jupyter (see the module)."""
    if not _in_kernel():
        yield from iterable
        return
    try:
        from tqdm.notebook import tqdm
        bar = tqdm(iterable, desc=desc, total=total, display=False, leave=False)
    except ImportError:  # no ipywidgets: tqdm has no notebook bar to show
        yield from iterable
        return
    from IPython.display import clear_output, display

    view = {"model_id": bar.container.model_id, "version_major": 2, "version_minor": 0}
    display({WIDGET_VIEW: view}, raw=True)
    finished = False
    try:
        yield from bar
        finished = True
    finally:
        bar.close()
        bar.container.close()
        if finished:
            clear_output()
