"""The package's names in the chapters' text link to the API reference (book/api.md).

The chapters name package functions as inline code (`attend`, `ac.MultiHeadAttention`,
`beam_search(...)`), which must stay plain Markdown so the notebooks read well in Jupyter.
When the site is written, each such literal whose name the API reference documents becomes a
link to its entry. Names are matched after dropping a leading ``ac.`` / ``attention_core.``
and a trailing call; a short name links only when exactly one documented module-level object
has it (``Class.method`` links to the method, a module links by its dotted name). Code cells
are left alone.

The docstrings write a group of axes as the contracts do, ``(B, *h, n_q, d)``; for the API
page, which reads docstrings as reStructuredText, such a star is escaped so that it is not
taken for the start of emphasis (``*last*`` stays emphasis).
"""
from __future__ import annotations

import re

from docutils import nodes

CALL = re.compile(r"\(.*\)$", re.S)
AXES_GROUP = re.compile(r"(?<![\\\w*])\*(?=\w+(?![\w*]))")  # *h, but not *emphasis*
PREFIXES = ("attention_core.", "ac.")


def _index(env):
    """short or dotted name -> the documented full names it could mean."""
    names: dict[str, set[str]] = {}
    for full, entry in env.get_domain("py").objects.items():
        if not full.startswith("attention_core."):
            continue
        parts = full.split(".")
        if entry.objtype == "module":  # by its dotted name only: attention_core.worlds.cues
            names.setdefault(full[len("attention_core."):], set()).add(full)
            continue
        # every dotted tail: "attend", "attention.attend", "MultiHeadAttention.forward", ...
        for i in range(1, len(parts)):
            tail = ".".join(parts[i:])
            if "." not in tail and entry.objtype in ("method", "attribute", "property"):
                continue  # a bare method name (forward, reorder) is too common to guess
            names.setdefault(tail, set()).add(full)
    return names


def link_package_names(app, doctree, docname):
    if app.builder.format != "html" or docname == "book/api":
        return
    objects = app.env.get_domain("py").objects
    index = app.api_links_index
    for literal in list(doctree.findall(nodes.literal)):
        if isinstance(literal.parent, (nodes.reference, nodes.literal_block)):
            continue
        name = CALL.sub("", literal.astext().strip())
        for prefix in PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
        targets = index.get(name, set())
        if len(targets) != 1:
            continue
        entry = objects[next(iter(targets))]
        uri = app.builder.get_relative_uri(docname, entry.docname) + "#" + entry.node_id
        ref = nodes.reference("", "", internal=True, refuri=uri, classes=["api-link"],
                              reftitle=next(iter(targets)))
        literal.replace_self(ref)
        ref.append(literal)


def escape_axes_groups(app, what, name, obj, options, lines):
    lines[:] = [AXES_GROUP.sub(r"\\*", line) for line in lines]


def build_index(app, env):
    app.api_links_index = _index(env)  # every page has been read: the documented names are known


def setup(app):
    app.connect("autodoc-process-docstring", escape_axes_groups)
    app.connect("env-updated", build_index)
    app.connect("doctree-resolved", link_package_names)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
