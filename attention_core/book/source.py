"""Show the package's real source in a chapter: the code the reader sees is the code tested."""
from __future__ import annotations

import ast
import inspect
import textwrap

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
        parts.append(f"`{module}.{name}`, line {start}\n\n```python\n{''.join(lines).rstrip()}\n```")
    return Markdown("\n\n".join(parts))


def _is_check(node) -> bool:
    """A statement whose only job is validation: a check_*() call, raise, assert, or an ``if``
    that only validates."""
    if isinstance(node, (ast.Raise, ast.Assert)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name.lstrip("_").startswith("check")
    if isinstance(node, ast.If):
        return all(_is_check(n) for n in node.body + node.orelse)
    return False


def validation_share(source: str) -> tuple[int, int]:
    """(validation lines, non-blank lines) of a displayed source: the lines of its check calls,
    raise and assert statements and ``if`` statements that only validate, continuation lines
    included."""
    source = textwrap.dedent(source)
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and _is_check(node):
            lines.update(range(node.lineno, node.end_lineno + 1))
    text = source.splitlines()
    return sum(1 for i in lines if text[i - 1].strip()), sum(1 for t in text if t.strip())
