"""Chapter 3's solutions: how many operations a call dispatches, whatever their size.

A FLOP count (``worlds.complexity.count_ops``) says how much arithmetic a call does. At small
sizes the time goes elsewhere: every operation a call dispatches (a product, a comparison, an
index, a copy) costs a roughly fixed amount before it touches any data. ``dispatched_ops``
lists those operations, so that two implementations can be compared by how many fixed costs
they pay. Run it on the ``meta`` device: the list is the same on every machine.
"""
from __future__ import annotations

from collections.abc import Callable

from torch.utils._python_dispatch import TorchDispatchMode

_RESHAPES = {"_unsafe_view"}


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        # A view gives existing data a new shape: nothing to compute. _unsafe_view is the same
        # thing for a freshly computed result (reshape after a product), though not marked a view.
        if not func.is_view and name not in _RESHAPES:
            self.names.append(name)
        return func(*args, **(kwargs or {}))


def dispatched_ops(fn: Callable, *args) -> list[str]:
    """The names of the operations that ``fn(*args)`` dispatches, in order, views and
    reshapes left out."""
    recorder = _Recorder()
    with recorder:
        fn(*args)
    return recorder.names
