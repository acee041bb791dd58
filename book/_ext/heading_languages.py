"""Headings in the reader's language, and everything that repeats them.

A heading carries both languages, "3. Attention Scoring · 注意力评分函数" (the bilingual label
of ``attention_core.book.bilingual``). Before Sphinx collects the page's titles, each such
title becomes a shared leading number, an English span, the separator and a Chinese span, so
the sidebar, the page's contents, the previous/next links and the breadcrumbs, which copy the
titles, carry the spans too, and the language switch shows the reader's half (both, with the
separator, in the "both" mode). The text of a title is unchanged: anchors, the search index
and the PDFs read it as before. The toctree captions and the book's title in the sidebar are
written by the theme from plain strings (so is the title Jupyter Book prints); they are rendered
as spans once the pages are written.
The window title cannot hold markup: each page names its title in both languages in two meta
tags, and the language switch sets the one it shows.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes

from attention_core.book.bilingual import SEP, is_label, leading_number, pick, spans, split

# theme markup that holds a bilingual label as plain text: toctree captions, the book's title
# and its link at the top of the sidebar, the page title that Jupyter Book prints when a reader
# prints the page from the browser
PLAIN_LABELS = re.compile(r'(<span class="caption-text">|<p class="title logo__title">|'
                          r'<div id="jb-print-docs-body" class="onlyprint">\s*<h1>|'
                          r'<ul class="nav bd-sidenav bd-sidenav__home-link">\s*'
                          r'<li class="toctree-l1[^"]*">\s*'
                          r'<a class="reference internal" href="[^"]*">'
                          r'\s*)([^<]*?)(\s*</span>|\s*</p>|\s*</h1>|\s*</a>)')


def split_title(title: nodes.Element) -> None:
    """Title children -> [number, English span, separator span, Chinese span], when the title
    is a bilingual label whose separator lies in a text node of its own level."""
    if not is_label(title.astext()):
        return
    children = list(title.children)
    at = next((i for i, c in enumerate(children)
               if isinstance(c, nodes.Text) and SEP in c.astext()), None)
    if at is None:
        return
    before, after = children[at].astext().split(SEP, 1)
    english = [*children[:at], *([nodes.Text(before)] if before else [])]
    first = english[0].astext() if english and isinstance(english[0], nodes.Text) else ""
    number = leading_number(first)
    if number:  # shared by both languages: "3. " stays outside the spans
        english[0] = nodes.Text(first[len(number):])
    chinese = [*([nodes.Text(after)] if after else []), *children[at + 1:]]
    title.children = []
    if number:
        title += nodes.Text(number)
    title += nodes.inline("", "", *english, classes=["lang-en"])
    title += nodes.inline(SEP, SEP, classes=["lang-sep"])
    title += nodes.inline("", "", *chinese, classes=["lang-zh"])


def split_titles(app, doctree):
    for title in list(doctree.findall(nodes.title)):
        split_title(title)


def title_metas(app, pagename, templatename, context, doctree):
    """<meta name="book-title-en|zh">: the window title in each language."""
    page = re.sub(r"<[^>]+>", "", context.get("title") or "")
    page = html.unescape(page)
    site = app.config.html_title or ""
    metas = []
    for lang in ("en", "zh"):
        text = pick(page, lang) + (" — " + pick(site, lang) if site else "")
        metas.append(f'<meta name="book-title-{lang}" content="{html.escape(text)}">')
    context["metatags"] = context.get("metatags", "") + "\n".join(metas) + "\n"


def label_spans(label: str) -> str:
    """A plain label as the titles are rendered: the shared number, then the two spans."""
    if not is_label(label):
        return html.escape(label)
    en, zh = split(label)
    number = leading_number(en)
    return html.escape(number) + spans(en[len(number):], zh)


def plain_labels_as_spans(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        spanned = PLAIN_LABELS.sub(
            lambda m: m.group(1) + label_spans(html.unescape(m.group(2).strip())) + m.group(3),
            text)
        if spanned != text:
            page.write_text(spanned, encoding="utf-8")


def setup(app):
    # before Sphinx's collectors copy the titles into the tables of contents (priority 500)
    app.connect("doctree-read", split_titles, priority=400)
    app.connect("html-page-context", title_metas)
    app.connect("build-finished", plain_labels_as_spans, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
