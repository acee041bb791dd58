"""The book's bilingual label, "English · 中文": the one place that reads, writes and renders it.

Headings, fold labels, slider values, figure descriptions and exercise titles carry both
languages in one string, the English first, joined by ``SEP``. ``join`` writes such a label,
``split`` and ``pick`` read it, and ``spans`` renders it for the site: an English span, the
separator, a Chinese span. The site's language switch (book/_static/book.css) shows the span of
the chosen language, or both with the separator between them; so what the HTML holds is what
the page shows, and nothing has to patch it afterwards. ``keep_language`` does for a parsed
element of a built page what ``pick`` does for a string (the PDFs print one language).
"""
from __future__ import annotations

import html
import re

SEP = " · "
LANGS = ("en", "zh")
HTML_LANG = {"en": "en", "zh": "zh-Hans"}
CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
# a leading chapter or section number ("2. ", "4.3 "), which both languages share
NUMBER = re.compile(r"\s*\d+(\.\d+)*\.?\s+")


def join(en: str, zh: str) -> str:
    """One label from its two halves: join("goal", "目标") == "goal · 目标"."""
    return f"{en}{SEP}{zh}"


def split(label: str) -> tuple[str, str | None]:
    """(English, Chinese) of a label, at its first separator; (label, None) if it has none."""
    en, sep, zh = label.partition(SEP)
    return (en, zh) if sep else (label, None)


def is_label(text: str) -> bool:
    """Whether ``text`` is a bilingual label: Latin before the separator, Chinese after it
    (a table cell such as "scalar · 标量", not a formula such as "q · k")."""
    en, zh = split(text)
    return zh is not None and bool(CJK.search(zh)) and not CJK.search(en)


def leading_number(en: str) -> str:
    """The chapter or section number a label starts with, with its space ("3. "), or ""."""
    match = NUMBER.match(en)
    return match.group(0) if match else ""


def pick(label: str, lang: str) -> str:
    """One language of a label; the Chinese keeps a leading chapter number:
    pick("4. Keys · 键", "zh") == "4. 键". Text without a separator is returned as it is."""
    en, zh = split(label)
    if zh is None or lang == "en":
        return en
    return leading_number(en) + zh


def spans(en: str, zh: str) -> str:
    """Both languages as HTML for the site's language switch: each in its span, with the
    separator between them, which shows only when both do."""
    return (f'<span class="lang-en" lang="en">{html.escape(en)}</span>'
            f'<span class="lang-sep" aria-hidden="true">{SEP}</span>'
            f'<span class="lang-zh" lang="zh-Hans">{html.escape(zh)}</span>')


def label_html(label: str) -> str:
    """A label as the page shows it: ``spans`` of its halves, or the escaped text if it has
    one language only."""
    en, zh = split(label)
    return html.escape(label) if zh is None else spans(en, zh)


def keep_language(element, lang: str) -> None:
    """Keep one side of the first separator in a parsed element's text (a BeautifulSoup tag),
    the markup inside that side kept; the Chinese side keeps a leading chapter number."""
    first = next((t for t in element.find_all(string=True) if SEP in t), None)
    if first is None:
        return
    before, after = first.split(SEP, 1)
    head = "".join(str(t) for t in element.find_all(string=True)
                   if t is not first and _precedes(t, first)) + before
    # drop the other side: every sibling after (English) or before (Chinese) the separator,
    # at each level from the text node up to the element
    node = first
    while node is not element:
        for sibling in list(node.next_siblings if lang == "en" else node.previous_siblings):
            sibling.extract()
        node = node.parent
    first.replace_with(before if lang == "en" else leading_number(head) + after)


def _precedes(a, b) -> bool:
    """Whether node a comes before node b in document order."""
    return any(node is a for node in b.previous_elements)
