"""One page of the built site, made ready for paper in one language.

``page_article`` reads a page that ``jupyter-book build`` wrote and returns its article with
one language of every bilingual block, heading and label (``bilingual``), the folded cells as
one line each, a sentence in place of what only a browser can show, code fitted to the page
(``pdf_code``), and ids and links made unique across the one document that holds every page.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from bs4 import BeautifulSoup, Tag

from .bilingual import is_label, keep_language
from .pdf_code import fit_to_page

# Every sentence a printed page adds, in both languages.
TEXT = {
    "en": {
        "folded": "Code folded:",
        "folded_tail": "(in the notebook and on the site).",
        "interactive": "Interactive on the site: this is the figure's default frame.",
        "playground": "An attention playground is here on the site and in the notebook: it "
                      "computes as the reader drags the query and the keys, so paper cannot "
                      "show it.",
        "translator": "On the site and in the notebook a text box is here: the reader types an "
                      "English number or date and this chapter's model translates it, with its "
                      "attention, as they type.",
    },
    "zh": {
        "folded": "代码已折叠：",
        "folded_tail": "（见笔记本与网站）",
        "interactive": "网站上可交互操作：此处为该图的默认画面。",
        "playground": "网站和笔记本中此处有一个注意力交互演示：它随读者拖动查询和键实时计算，"
                      "纸面无法呈现。",
        "translator": "网站和笔记本中此处有一个输入框：读者输入英文数字或日期，本章的模型随即翻译，"
                      "并画出其注意力。",
    },
}
# what paper has no use for, besides the other language
DROPPED = ["a.headerlink", ".lang-sep", "script", "style", ".ac-slider-controls", "button",
           ".toggle-details", ".lang-switch"]
# where a bilingual label keeps one language
LABELS = ("h1, h2, h3, h4, h5, h6, th, caption, figcaption, p.admonition-title, .caption-text, "
          "a.reference.internal")
# the heading of a table column that holds one language (the notation table's meaning · 含义)
COLUMN_HEADS = {"en": "meaning", "zh": "含义"}


def slug(docname: str) -> str:
    """A page's id in the document: its docname with anything but letters, digits, _ and -
    as -."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", docname)


def page_article(html_file: Path, doc: str, lang: str, pages: dict[str, str],
                 out_dir: Path) -> tuple[Tag, str]:
    """The article of one built page, in one language, ids and links made document-wide, and
    its title. pages: {path of a page's HTML file under the site: its docname}, and the
    site's folder under "__root__"."""
    soup = BeautifulSoup(html_file.read_text(encoding="utf-8"), "lxml")
    article = soup.select_one("article.bd-article")
    one_language(article, lang)
    paper_only(article, soup, lang)
    for pre in article.select("pre"):
        fit_to_page(pre)
    page_dir = html_file.parent
    for img in article.select("img"):  # load now, from the document's folder
        img.attrs.pop("loading", None)
        src = img.get("src", "")
        if src and not re.match(r"^(https?:|data:)", src):
            img["src"] = os.path.relpath((page_dir / src).resolve(), out_dir.resolve())
    document_wide(article, doc, page_dir, pages)
    title_el = article.find("h1")
    title = title_el.get_text(" ", strip=True) if title_el else doc
    return article, title


def one_language(article: Tag, lang: str) -> None:
    """Drop the other language: its blocks and spans, its table columns, its half of every
    label."""
    other = "zh" if lang == "en" else "en"
    for sel in [f".lang-{other}", *DROPPED]:
        for el in article.select(sel):
            el.decompose()
    for table in article.select("table"):
        heads = [th.get_text(strip=True) for th in table.select("thead th")]
        drop = [i for i, h in enumerate(heads) if h.lower() == COLUMN_HEADS[other]]
        for tr in table.select("tr"):
            cells = tr.find_all(["td", "th"], recursive=False)
            for i in sorted(drop, reverse=True):
                if i < len(cells):
                    cells[i].decompose()
    for el in article.select(LABELS):
        keep_language(el, lang)
    for td in article.select("td"):  # cells such as "scalar · 标量"
        if is_label(td.get_text()):
            keep_language(td, lang)


def paper_only(article: Tag, soup: BeautifulSoup, lang: str) -> None:
    """Folded cells as one line in place of their code (their outputs stay), other folds
    open, and a sentence where a figure is interactive or computed live."""
    for details in article.select("details.hide.above-input"):
        label = details.select_one("p.collapsed")
        text = label.get_text(" ", strip=True) if label else ""
        note = soup.new_tag("p", attrs={"class": "pdf-folded"})
        note.append(soup.new_tag("span", attrs={"class": "pdf-folded-mark"}))
        gap = " " if lang == "en" else ""
        note.append(f"{TEXT[lang]['folded']}{gap}{text}{gap}{TEXT[lang]['folded_tail']}")
        details.replace_with(note)
    for details in article.select("details"):
        details["open"] = ""
    for note in article.select(".ac-slider-note"):  # a slider figure prints its first frame
        note.clear()
        note.append(TEXT[lang]["interactive"])
    for kind in ("playground", "translator"):  # computed live: nothing to print
        for live in article.select(f".ac-{kind}"):
            note = soup.new_tag("p", attrs={"class": "ac-slider-note"})
            note.append(TEXT[lang][kind])
            live.replace_with(note)


def document_wide(article: Tag, doc: str, page_dir: Path, pages: dict[str, str]) -> None:
    """Ids prefixed with the page, so that one document holds every page's anchors; links
    between pages of the book made links inside the document."""
    prefix = slug(doc) + "--"
    for el in article.select("[id]"):
        el["id"] = prefix + el["id"]
    for el in article.select("[for]"):
        el["for"] = prefix + el["for"]
    for a in article.select("a[href]"):
        href = a["href"]
        if re.match(r"^[a-z]+:", href):
            continue  # outside the book: stays a web link
        path, _, frag = href.partition("#")
        if not path:
            a["href"] = "#" + prefix + frag if frag else "#" + slug(doc)
            continue
        target = (page_dir / path).resolve()
        rel = target.relative_to(Path(pages["__root__"]).resolve()).as_posix() \
            if str(target).startswith(pages["__root__"]) else None
        if rel and rel in pages:
            a["href"] = "#" + slug(pages[rel]) + ("--" + frag if frag else "")
        else:
            a.unwrap()  # a file of the site, not of the book: keep the words
