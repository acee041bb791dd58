"""Exercises and their folded solutions speak the reader's language, and can be linked to.

Each solutions page (solutions/NN_*.ipynb) restates exercise k of chapter NN under the heading
"Exercise N.k · 练习 N.k" in a sphinx-exercise ``exercise`` labelled ``ex-NN-k``, and folds
its worked solution in a gated ``solution`` dropdown. sphinx-exercise titles both in the site's
one Sphinx language ("Exercise", "Solution to Exercise"); this titles them in the book's two,
as the fold labels are ("Question · 题目", "Solution 2.3 · 解答 2.3").

A chapter's exercise links to its solution with a plain Markdown link,
``[Solution →](../solutions/02_attention_pooling.ipynb#ex-02-1)``, which Jupyter follows too.
MyST checks such an anchor against the target page's heading slugs only; the exercise labels
are registered beside them, so that a link to a missing exercise still fails the build.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx_exercise.nodes import exercise_node, solution_node

from attention_core.book.bilingual import spans

LABEL = re.compile(r"^ex-(\d\d)-(\d+)$")


def number(label: str) -> str:
    m = LABEL.match(label or "")
    return f"{int(m.group(1))}.{m.group(2)}" if m else ""


def register_labels(app, doctree):
    slugs = app.env.metadata[app.env.docname].setdefault("myst_slugs", {})
    for node in doctree.findall(exercise_node):
        label = node.get("label", "")
        if LABEL.match(label):
            slugs[label] = (node.line or 0, label, f"Exercise {number(label)}")


def retitle(node, en: str, zh: str) -> None:
    title = node.children[0]
    if isinstance(title, nodes.title):
        title.children = [nodes.raw("", spans(en, zh), format="html")]


def bilingual_titles(app, doctree, docname):
    if app.builder.format != "html":
        return
    for node in doctree.findall(exercise_node):
        retitle(node, "Question", "题目")
    for node in doctree.findall(solution_node):
        n = number(node.get("target_label", ""))
        retitle(node, f"Solution {n}", f"解答 {n}")


def setup(app):
    app.setup_extension("sphinx_exercise")
    app.connect("doctree-read", register_labels)
    app.connect("doctree-resolved", bilingual_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
