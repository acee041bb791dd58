"""Folded cells speak the reader's language.

A check cell is folded on the site (tag ``hide-input``) under a label that states its claim in
both languages, "✓ Every row sums to one · ✓ 每一行之和为一" (cell metadata
``mystnb.code_prompt_show``). myst-nb writes that label as one escaped string; this renders it
as an English and a Chinese span (``attention_core.book.bilingual``), so the language switch
shows the reader's half (both, with the separator, in the "both" mode), the same way as the
slider labels.
"""
from __future__ import annotations

from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

from attention_core.book.bilingual import label_html


def visit_fold(self, node):
    classes = " ".join(node["classes"])
    show, hide = label_html(node["prompt_show"]), label_html(node["prompt_hide"])
    self.body.append(f'<details class="admonition hide {classes}">\n'
                     '<summary aria-label="Toggle hidden content">\n'
                     f'<p class="collapsed admonition-title">{show}</p>\n'
                     f'<p class="expanded admonition-title">{hide}</p>\n'
                     '</summary>\n')


def setup(app):
    app.add_node(HideCodeCellNode, override=True, html=(visit_fold, depart_HideCellInput))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
