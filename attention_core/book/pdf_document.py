"""One language's book as one HTML document, ready for Chromium to print.

``build_document`` joins the built pages in the order of ``_toc.yml`` (each made ready for paper
by ``pdf_page``) after a title page and a table of contents whose page numbers come from a
previous printing, and gives every page a running head with its title (CSS page-margin
boxes, book/_static/pdf.css).
"""
from __future__ import annotations

import datetime
import html
import os
from pathlib import Path

import yaml
from bs4 import BeautifulSoup, Tag

from .bilingual import HTML_LANG, pick
from .pdf_page import page_article, slug

# Every sentence the document adds around the pages, in both languages.
TEXT = {
    "en": {
        "title": "Attention Mechanisms",
        "subtitle": "An interactive textbook, on paper",
        "authors": "The attention_core authors",
        "version": "Version {version}",
        "edition": "Printed {date} from the outputs committed in the notebooks. The site and the "
                   "notebooks have the interactive figures; this PDF shows each one's default "
                   "frame.",
        "contents": "Contents",
    },
    "zh": {
        "title": "注意力机制",
        "subtitle": "交互式教材 · 纸质版",
        "authors": "attention_core 作者组",
        "version": "版本 {version}",
        "edition": "{date} 依据笔记本中已提交的输出排印。交互式图形见网站与笔记本；"
                   "本 PDF 给出每幅交互图的默认画面。",
        "contents": "目录",
    },
}
CJK_RANGE = "unicode-range: U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+FF00-FFEF;"


def toc_entries(toc_path: Path) -> list[tuple[str | None, str]]:
    """[(part caption or None, docname)] in reading order, the root first."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    entries = [(None, toc["root"])]
    for part in toc.get("parts", []):
        for i, chapter in enumerate(part.get("chapters", [])):
            entries.append((part.get("caption") if i == 0 else None, chapter["file"]))
    return entries


def build_document(html_dir: Path, out_dir: Path, lang: str, page_numbers: dict[str, int],
                   toc_path: Path) -> tuple[str, list]:
    """The HTML of one language's book, and its table of contents [(level, id, text)].
    page_numbers: {id of a contents entry: its page}, from a previous printing."""
    entries = toc_entries(toc_path)
    pages = {"__root__": str(html_dir.resolve())}
    for _, doc in entries:
        pages[doc + ".html"] = doc
    skeleton = BeautifulSoup("", "lxml")  # a factory for new tags
    articles, toc, heads = [], [], []
    for i, (caption, doc) in enumerate(entries):
        article, title = page_article(html_dir / (doc + ".html"), doc, lang, pages, out_dir)
        wrapper = skeleton.new_tag("div", attrs={"class": "pdf-page", "id": slug(doc),
                                                 "style": f"page: p{i}"})
        wrapper["data-doc"] = doc
        for child in list(article.children):
            wrapper.append(child.extract() if isinstance(child, Tag) else str(child))
        articles.append(wrapper)
        if caption:
            toc.append((0, None, pick(caption, lang)))
        toc.append((1, slug(doc), title))
        if doc.startswith("chapters/"):
            for h2 in wrapper.select("section > section > h2"):
                sec = h2.parent.get("id")
                if sec:
                    toc.append((2, sec, h2.get_text(" ", strip=True)))
        heads.append((i, title))

    # the bibliography's "cited in" links name each chapter in this language
    titles = {slug(doc): title for (_, doc), (_, title) in zip(entries, heads, strict=True)}
    for wrapper in articles:
        for a in wrapper.select("a.citation-backlink"):
            target = a.get("href", "#")[1:].split("--")[0]
            if target in titles:
                a.string = titles[target]

    head = _head(html_dir, out_dir, lang) + [_running_heads(heads, TEXT[lang]["title"])]
    body = [_title_page(lang), _contents(toc, page_numbers, lang)]
    body.extend(str(wrapper) for wrapper in articles)
    return (f'<!DOCTYPE html>\n<html lang="{HTML_LANG[lang]}" class="pdf-{lang}"><head>'
            + "\n".join(head) + "</head>\n<body>\n" + "\n".join(body) + "\n</body></html>"), toc


def _head(html_dir: Path, out_dir: Path, lang: str) -> list[str]:
    """The fonts (out_dir/fonts, written by pdf_fonts.prepare: TrueType outlines, so that
    Chromium embeds them as fonts), the site's stylesheets and MathJax."""
    static = os.path.relpath(html_dir / "_static", out_dir)
    return [
        '<meta charset="utf-8">',
        f'<title>{html.escape(TEXT[lang]["title"])}</title>',
        # one weight only: declared for all, so that bold Chinese is not thickened by Chromium,
        # which would print it as Type 3 drawings (pdf.css sets Chinese emphasis in the sans face)
        "<style>" + "\n".join(
            f'@font-face {{ font-family: "{family}"; src: url("fonts/{file}"); '
            f'font-weight: 100 900; {CJK_RANGE} }}' for family, file in
            [("Book CJK", "book-cjk.ttf"), ("Book CJK Serif", "book-cjk-serif.ttf"),
             ("Book CJK Mono", "book-cjk-mono.ttf")]) + "</style>",
        f'<link rel="stylesheet" href="{static}/pygments.css">',
        f'<link rel="stylesheet" href="{static}/pdf.css">',
        '<script>window.MathJax = {"options": {"processHtmlClass": '
        '"tex2jax_process|mathjax_process|math|output_area"}, '
        '"chtml": {"fontURL": "fonts/mathjax"}};</script>',
        f'<script defer src="{static}/mathjax/tex-chtml.js"></script>',
    ]


def _title_page(lang: str) -> str:
    from .. import __version__
    t, date = TEXT[lang], datetime.date.today().isoformat()
    return (f'<section class="pdf-titlepage" id="pdf-title"><h1 class="pdf-book-title">'
            f'{t["title"]}</h1><p class="pdf-subtitle">{t["subtitle"]}</p>'
            f'<p class="pdf-authors">{t["authors"]}</p>'
            f'<p class="pdf-version">{t["version"].format(version=__version__)}</p>'
            f'<p class="pdf-edition">{t["edition"].format(date=date)}</p></section>')


def _contents(toc: list, page_numbers: dict[str, int], lang: str) -> str:
    """The table of contents: each entry links to its page, with the page number from the
    previous printing (000 before the first)."""
    out = [f'<section class="pdf-toc" id="pdf-contents"><h1>{TEXT[lang]["contents"]}</h1><ul>']
    for level, target, text in toc:
        if target is None:
            out.append(f'<li class="pdf-toc-part">{html.escape(text)}</li>')
            continue
        number = page_numbers.get(target, "000")
        out.append(
            f'<li class="pdf-toc-{level}"><a href="#{target}"><span class="pdf-toc-text">'
            f'{html.escape(text)}</span><span class="pdf-toc-leader"></span>'
            f'<span class="pdf-toc-page">{number}</span></a></li>')
    out.append("</ul></section>")
    return "".join(out)


def _running_heads(heads: list[tuple[int, str]], book_title: str) -> str:
    """The book's title at the top left of every page but the title page, the page's title
    at the top right."""
    def css_string(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    rules = [f"@page p{i} {{ @top-right {{ content: {css_string(title)}; }} }}"
             for i, title in heads]
    rules.append(f"@page {{ @top-left {{ content: {css_string(book_title)}; }} }}")
    rules.append("@page title { @top-left { content: none; } }")
    return "<style>" + "\n".join(rules) + "</style>"
