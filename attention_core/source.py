"""Show the package's real source in a chapter: the code the reader sees is the code tested."""
from __future__ import annotations

import inspect

from IPython.display import Markdown


def show_source(obj) -> Markdown:
    """The source of a function, class or method as a highlighted code block.

    Rendered as Markdown so that Jupyter and the static site both highlight it; the module
    and line number say where to find it.
    """
    try:
        lines, start = inspect.getsourcelines(obj)
    except (TypeError, OSError) as err:
        raise TypeError(f"show_source needs a function, class or method defined in Python "
                        f"source, got {obj!r}") from err
    module = inspect.getmodule(obj).__name__
    header = f"`{module}`, line {start}"
    return Markdown(f"{header}\n\n```python\n{''.join(lines).rstrip()}\n```")
