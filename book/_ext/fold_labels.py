"""Folded cells speak the reader's language.

A check cell is folded on the site (tag ``hide-input``) under a label that states its claim in
both languages, "✓ Every row sums to one · ✓ 每一行之和为一" (cell metadata
``mystnb.code_prompt_show``). myst-nb writes that label as one escaped string; this renders it
as an English and a Chinese span, so the language switch shows the reader's half (both, with
the separator, in the "both" mode), the same way as the slider labels.
"""
from __future__ import annotations

from html import escape

from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput


def bilingual(label: str) -> str:
    en, sep, zh = label.partition(" · ")
    if not sep:
        return escape(label)
    return (f'<span class="lang-en">{escape(en)}</span>'
            f'<span class="lang-sep" aria-hidden="true"> · </span>'
            f'<span class="lang-zh" lang="zh-Hans">{escape(zh)}</span>')


def visit_fold(self, node):
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n'
                     '<summary aria-label="Toggle hidden content">\n'
                     f'<p class="collapsed admonition-title">{bilingual(node["prompt_show"])}</p>\n'
                     f'<p class="expanded admonition-title">{bilingual(node["prompt_hide"])}</p>\n'
                     '</summary>\n')


def setup(app):
    app.add_node(HideCodeCellNode, override=True, html=(visit_fold, depart_HideCellInput))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
