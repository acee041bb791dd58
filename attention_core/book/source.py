"""Show the package's real source in a chapter: the code the reader sees is the code tested."""
from __future__ import annotations

import inspect

from IPython.display import Markdown


def show_source(*objs) -> Markdown:
    """The source of functions, classes or methods as highlighted code blocks.

    Rendered as Markdown so that Jupyter and the static site both highlight it; a header
    names each object (a method with its class) and the line where it is defined.
    """
    if not objs:
        raise TypeError("show_source needs at least one function, class or method")
    parts = []
    for obj in objs:
        try:
            lines, start = inspect.getsourcelines(obj)
        except (TypeError, OSError) as err:
            raise TypeError(f"show_source needs a function, class or method defined in Python "
                            f"source, got {obj!r}") from err
        module = inspect.getmodule(obj).__name__
        name = getattr(obj, "__qualname__", getattr(obj, "__name__", ""))
        code = "".join(lines).rstrip()
        parts.append(f"`{module}.{name}`, line {start}\n\n```python\n{code}\n```")
    return Markdown("\n\n".join(parts))

