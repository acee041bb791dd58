"""The book as two PDFs, one per language, printed by Chromium from the built site.

    python -m attention_core.book.pdf [--html _build/html] [--out _build/pdf]

reads the pages that ``jupyter-book build`` wrote (the notebooks' committed outputs, nothing is
executed), keeps one language of every bilingual block and heading, joins the pages in the order
of ``_toc.yml`` into one HTML document per language, and prints it with Chromium under the print
stylesheet ``book/_static/pdf.css``: a title page, a table of contents with page numbers,
bookmarks from the headings, running heads and page numbers (CSS page-margin boxes), links
between chapters and to the bibliography as links inside the PDF. The page numbers of the table
of contents come from a first printing: Chromium writes a named destination for every link
target, and ``pdfinfo -dests`` (poppler-utils) says on which page each one landed.

Writes ``<out>/attention-en.pdf`` and ``<out>/attention-zh.pdf`` and copies both into
``<html>/pdf/``, where the site's header links to them.
"""
from __future__ import annotations

import argparse
import datetime
import html as html_lib
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import yaml
from bs4 import BeautifulSoup, NavigableString, Tag

LANGS = ("en", "zh")
HTML_LANG = {"en": "en", "zh": "zh-Hans"}
SEP = " · "
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]

# Every sentence the PDF adds, in both languages.
TEXT = {
    "en": {
        "title": "Attention Mechanisms",
        "subtitle": "An interactive textbook, on paper",
        "authors": "The attention_core authors",
        "edition": "Printed {date} from the outputs committed in the notebooks. The site and the "
                   "notebooks have the interactive figures; this PDF shows each one's default frame.",
        "contents": "Contents",
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
        "title": "注意力机制",
        "subtitle": "交互式教材 · 纸质版",
        "authors": "attention_core 作者组",
        "edition": "{date} 依据笔记本中已提交的输出排印。交互式图形见网站与笔记本；"
                   "本 PDF 给出每幅交互图的默认画面。",
        "contents": "目录",
        "folded": "代码已折叠：",
        "folded_tail": "（见笔记本与网站）",
        "interactive": "网站上可交互操作：此处为该图的默认画面。",
        "playground": "网站和笔记本中此处有一个注意力交互演示：它随读者拖动查询和键实时计算，纸面无法呈现。",
        "translator": "网站和笔记本中此处有一个输入框：读者输入英文数字或日期，本章的模型随即翻译，并画出其注意力。",
    },
}
CJK_RE = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


# --- the pages, in the order of _toc.yml ---------------------------------------------------

def toc_entries(toc_path: Path) -> list[tuple[str | None, str]]:
    """[(part caption or None, docname)] in reading order, the root first."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    entries = [(None, toc["root"])]
    for part in toc.get("parts", []):
        for i, chapter in enumerate(part.get("chapters", [])):
            entries.append((part.get("caption") if i == 0 else None, chapter["file"]))
    return entries


def slug(docname: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", docname)


def pick(text: str, lang: str) -> str:
    """One language of "English · 中文" (a leading chapter number stays)."""
    if SEP not in text:
        return text
    en, zh = text.split(SEP, 1)
    if lang == "en":
        return en
    number = re.match(r"\s*\d+(\.\d+)*\.?\s+", en)
    return (number.group(0) if number else "") + zh


def split_bilingual(el: Tag, lang: str) -> None:
    """Keep one side of the first " · " in an element's text, markup inside kept."""
    first = next((t for t in el.find_all(string=True) if SEP in t), None)
    if first is None:
        return
    before, after = first.split(SEP, 1)
    head = "".join(str(t) for t in el.find_all(string=True)
                   if t is not first and _precedes(t, first)) + before
    # drop the other side: every sibling after (English) or before (Chinese) the separator,
    # at each level from the text node up to the element
    node = first
    while node is not el:
        siblings = list(node.next_siblings if lang == "en" else node.previous_siblings)
        for sibling in siblings:
            sibling.extract()
        node = node.parent
    if lang == "en":
        first.replace_with(before)
    else:
        number = re.match(r"\s*\d+(\.\d+)*\.?\s+", head)
        first.replace_with((number.group(0) if number else "") + after)


def _precedes(a, b) -> bool:
    """Whether node a comes before node b in document order."""
    for node in b.previous_elements:
        if node is a:
            return True
    return False


# Code and printed output: DejaVu Sans Mono at 7.8 pt (pdf.css) advances 4.7 pt a character,
# and a <pre> in the 170 mm text block holds 99 of them. A longer line is wrapped here, at a
# space where it can, and goes on under its own indentation plus two, after a "↪"; Chromium's
# own wrapping (pre-wrap) would restart it at the left edge, where it reads as a dedent.
WRAP_COLUMNS = 97


def _columns(text: str) -> float:
    return sum(1.7 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cuts(line: str, columns: int) -> list[tuple[int, int]]:
    """Where to break one long line: [(offset in the line, indentation of what follows)]."""
    indent = len(line) - len(line.lstrip(" "))
    follow = min(indent + 2, columns // 2)
    cuts, start, room = [], 0, columns
    while _columns(line[start:]) > room:
        end = start
        while _columns(line[start:end + 1]) <= room:
            end += 1
        space = line.rfind(" ", start + 1, end)
        cut = space + 1 if space > start + indent + 8 else end  # after a space, else hard
        cuts.append((cut, follow))
        start, room = cut, columns - follow - 2
    return cuts


def wrap_code(pre: Tag, columns: int = WRAP_COLUMNS) -> None:
    """Break the long lines of a <pre> in place (its markup kept)."""
    nodes = list(pre.find_all(string=True))
    text = "".join(nodes)
    if max((_columns(line) for line in text.split("\n")), default=0) <= columns:
        return
    inserts, offset = [], 0
    for line in text.split("\n"):
        inserts += [(offset + cut, follow) for cut, follow in _cuts(line, columns)]
        offset += len(line) + 1
    starts, position = [], 0
    for node in nodes:
        starts.append(position)
        position += len(node)
    for at, follow in reversed(inserts):
        i = max(k for k, start in enumerate(starts) if start <= at)  # the node holding `at`
        node, start = nodes[i], starts[i]
        before, after = str(node)[:at - start], str(node)[at - start:]
        marker = BeautifulSoup(f'<span class="pdf-wrap">{" " * follow}↪ </span>',
                               "html.parser").span
        new_before = NavigableString(before.rstrip(" ") + "\n")
        node.replace_with(new_before)
        new_before.insert_after(marker)
        rest = NavigableString(after)
        marker.insert_after(rest)
        nodes[i] = new_before  # later (earlier-offset) cuts fall in `before`


def page_article(html_file: Path, doc: str, lang: str, pages: dict[str, str],
                 out_dir: Path, soup_out: BeautifulSoup) -> tuple[Tag, str]:
    """The article of one built page, in one language, ids and links made document-wide."""
    soup = BeautifulSoup(html_file.read_text(encoding="utf-8"), "lxml")
    article = soup.select_one("article.bd-article")
    other = "zh" if lang == "en" else "en"
    for sel in ["a.headerlink", f".lang-{other}", ".lang-sep", "script", "style",
                ".ac-slider-controls", "button", ".toggle-details", ".lang-switch"]:
        for el in article.select(sel):
            el.decompose()
    # Tables with a column per language (notation: meaning · 含义): keep this language's.
    for table in article.select("table"):
        heads = [th.get_text(strip=True) for th in table.select("thead th")]
        drop = [i for i, h in enumerate(heads)
                if (h.lower() == "meaning" and lang == "zh") or (h == "含义" and lang == "en")]
        for tr in table.select("tr"):
            cells = tr.find_all(["td", "th"], recursive=False)
            for i in sorted(drop, reverse=True):
                if i < len(cells):
                    cells[i].decompose()
    for el in article.select("h1, h2, h3, h4, h5, h6, th, caption, figcaption, "
                             "p.admonition-title, .caption-text, a.reference.internal"):
        split_bilingual(el, lang)
    # Table cells of the form "scalar · 标量" (English, then Chinese) keep one side too.
    for td in article.select("td"):
        words = td.get_text()
        if SEP in words and CJK_RE.search(words.split(SEP, 1)[1]) and \
                not CJK_RE.search(words.split(SEP, 1)[0]):
            split_bilingual(td, lang)
    # Folded cells: on paper, one line in place of the code; their outputs stay.
    for details in article.select("details.hide.above-input"):
        label = details.select_one("p.collapsed")
        text = label.get_text(" ", strip=True) if label else ""
        note = soup.new_tag("p", attrs={"class": "pdf-folded"})
        note.append(soup.new_tag("span", attrs={"class": "pdf-folded-mark"}))
        gap = " " if lang == "en" else ""
        note.append(f"{TEXT[lang]['folded']}{gap}{text}{gap}{TEXT[lang]['folded_tail']}")
        details.replace_with(note)
    for details in article.select("details"):  # any other fold: open on paper
        details["open"] = ""
    # Interactive figures: the default frame, and one line saying where the rest is.
    for note in article.select(".ac-slider-note"):
        note.clear()
        note.append(TEXT[lang]["interactive"])
    for kind in ("playground", "translator"):  # computed live: nothing to print
        for live in article.select(f".ac-{kind}"):
            note = soup.new_tag("p", attrs={"class": "ac-slider-note"})
            note.append(TEXT[lang][kind])
            live.replace_with(note)
    # Printed output up to 30% wider than the block (a table, as a rule) is set smaller, so that
    # its columns stay aligned; code, and wider output, wrap.
    for pre in article.select("pre"):
        longest = max(_columns(line) for line in pre.get_text().split("\n"))
        if pre.find_parent(class_=["stream", "text_plain"]) and \
                WRAP_COLUMNS < longest <= 1.3 * WRAP_COLUMNS:
            pre["style"] = f"font-size: {7.8 * (WRAP_COLUMNS - 1) / longest:.2f}pt"
        else:
            wrap_code(pre)
    # Images: load now (no lazy loading when printing), paths from the document's folder.
    page_dir = html_file.parent
    for img in article.select("img"):
        img.attrs.pop("loading", None)
        src = img.get("src", "")
        if src and not re.match(r"^(https?:|data:)", src):
            img["src"] = os.path.relpath((page_dir / src).resolve(), out_dir.resolve())
    # Ids: prefixed with the page, so that one document holds every page's anchors.
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
            tdoc = pages[rel]
            a["href"] = "#" + slug(tdoc) + ("--" + frag if frag else "")
        else:
            a.unwrap()  # a file of the site, not of the book: keep the words
    title_el = article.find("h1")
    title = title_el.get_text(" ", strip=True) if title_el else doc
    return article, title


# --- the document ---------------------------------------------------------------------------

def build_document(html_dir: Path, out_dir: Path, lang: str, page_numbers: dict[str, int],
                   toc_path: Path) -> tuple[str, list]:
    """The HTML of one language's book, and its table of contents [(level, id, text)]."""
    entries = toc_entries(toc_path)
    pages = {"__root__": str(html_dir.resolve())}
    for _, doc in entries:
        pages[doc + ".html"] = doc
    skeleton = BeautifulSoup("", "lxml")  # a factory for new tags
    static = os.path.relpath(html_dir / "_static", out_dir)
    from attention_core.book.plot import cjk_font_path
    cjk = Path(cjk_font_path())
    cjk_mono = cjk.with_name("NotoSansMonoCJKsc-Regular.otf")
    cjk_range = "unicode-range: U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+FF00-FFEF;"
    head = [
        '<meta charset="utf-8">',
        f'<title>{html_lib.escape(TEXT[lang]["title"])}</title>',
        f'<style>@font-face {{ font-family: "Book CJK"; src: url("{cjk.as_uri()}"); '
        f'{cjk_range} }}\n@font-face {{ font-family: "Book CJK Mono"; src: url("'
        f'{(cjk_mono if cjk_mono.exists() else cjk).as_uri()}"); {cjk_range} }}</style>',
        f'<link rel="stylesheet" href="{static}/pygments.css">',
        f'<link rel="stylesheet" href="{static}/pdf.css">',
        '<script>window.MathJax = {"options": {"processHtmlClass": '
        '"tex2jax_process|mathjax_process|math|output_area"}};</script>',
        f'<script defer src="{static}/mathjax/tex-chtml.js"></script>',
    ]
    body = []

    t = TEXT[lang]
    date = datetime.date.today().isoformat()
    body.append(
        f'<section class="pdf-titlepage" id="pdf-title"><h1 class="pdf-book-title">'
        f'{t["title"]}</h1><p class="pdf-subtitle">{t["subtitle"]}</p>'
        f'<p class="pdf-authors">{t["authors"]}</p>'
        f'<p class="pdf-edition">{t["edition"].format(date=date)}</p></section>')

    articles, toc, heads = [], [], []
    for i, (caption, doc) in enumerate(entries):
        html_file = html_dir / (doc + ".html")
        article, title = page_article(html_file, doc, lang, pages, out_dir, skeleton)
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
    titles = {slug(doc): title for (_, doc), (_, title) in zip(entries, heads)}
    for wrapper in articles:
        for a in wrapper.select("a.citation-backlink"):
            target = a.get("href", "#")[1:].split("--")[0]
            if target in titles:
                a.string = titles[target]

    # table of contents: each entry links to its page, with the page number from pass one
    toc_html = [f'<section class="pdf-toc" id="pdf-contents"><h1>{t["contents"]}</h1><ul>']
    for level, target, text in toc:
        if target is None:
            toc_html.append(f'<li class="pdf-toc-part">{html_lib.escape(text)}</li>')
            continue
        number = page_numbers.get(target, "000")
        toc_html.append(
            f'<li class="pdf-toc-{level}"><a href="#{target}"><span class="pdf-toc-text">'
            f'{html_lib.escape(text)}</span><span class="pdf-toc-leader"></span>'
            f'<span class="pdf-toc-page">{number}</span></a></li>')
    toc_html.append("</ul></section>")
    body.append("".join(toc_html))
    body.extend(str(wrapper) for wrapper in articles)

    # running heads: the book's title on the left, the page's title on the right
    def css_string(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    rules = [f"@page p{i} {{ @top-right {{ content: {css_string(title)}; }} }}"
             for i, title in heads]
    rules.append(f"@page {{ @top-left {{ content: {css_string(t['title'])}; }} }}")
    rules.append("@page title { @top-left { content: none; } }")
    head.append("<style>" + "\n".join(rules) + "</style>")
    return (f'<!DOCTYPE html>\n<html lang="{HTML_LANG[lang]}" class="pdf-{lang}"><head>'
            + "\n".join(head) + "</head>\n<body>\n" + "\n".join(body) + "\n</body></html>"), toc


def named_destinations(pdf: Path) -> dict[str, int]:
    """{destination name: page number} from poppler's pdfinfo."""
    out = subprocess.run(["pdfinfo", "-dests", str(pdf)], check=True, capture_output=True,
                         text=True).stdout
    dests = {}
    for line in out.splitlines():
        m = re.match(r'\s*(\d+)\s+\[.*\]\s+"(.*)"\s*$', line)
        if m:
            dests.setdefault(m.group(2), int(m.group(1)))
    return dests


PREPARE_JS = """async () => {
  await document.fonts.ready;
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await Promise.all([...document.images].map(img => img.complete ? null :
      new Promise(r => { img.onload = img.onerror = r; })));
  // what is wider than the text block is scaled down to fit (display math, tables)
  const width = document.querySelector('.pdf-page').clientWidth;
  for (const el of document.querySelectorAll('mjx-container[display="true"], table')) {
    if (el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().width > width + 1) {
      const w = Math.max(el.scrollWidth, el.getBoundingClientRect().width);
      el.style.zoom = Math.max(0.5, (width - 2) / w);
    }
  }
  // Chinese text that reached the CJK face through a fallback list while the face was loading
  // keeps the primary font's empty boxes (the first Chinese words of the English document):
  // a fresh text node is shaped again, now with the face loaded.
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const cjk = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (/[\u3400-\u9fff]/.test(n.data)) cjk.push(n);
  for (const n of cjk) n.replaceWith(document.createTextNode(n.data));
  await document.fonts.ready;
  return document.images.length;
}"""


def print_pdfs(documents: dict[str, Path], pdfs: dict[str, Path]) -> None:
    from playwright.sync_api import sync_playwright
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or \
        shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("no Chromium: apt-get install chromium (see README.md)")
    import tempfile
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True, args=CHROMIUM_FLAGS,
            offline=True)
        try:
            page = browser.new_page()
            for lang, document in documents.items():
                page.goto(document.resolve().as_uri(), wait_until="load", timeout=180_000)
                page.emulate_media(media="print")
                page.evaluate(PREPARE_JS)
                page.pdf(path=str(pdfs[lang]), prefer_css_page_size=True, outline=True,
                         tagged=True, print_background=True)
        finally:
            browser.close()


def build(html_dir: Path, out_dir: Path, toc_path: Path, langs=LANGS) -> dict[str, Path]:
    if not (html_dir / "_static" / "pdf.css").exists():
        raise SystemExit(f"{html_dir} holds no built site with pdf.css: run `make book` first")
    out_dir.mkdir(parents=True, exist_ok=True)
    documents = {lang: out_dir / f"attention-{lang}.html" for lang in langs}
    pdfs = {lang: out_dir / f"attention-{lang}.pdf" for lang in langs}
    numbers: dict[str, dict[str, int]] = {lang: {} for lang in langs}
    for attempt in range(3):
        tocs = {}
        for lang in langs:
            text, tocs[lang] = build_document(html_dir, out_dir, lang, numbers[lang], toc_path)
            documents[lang].write_text(text, encoding="utf-8")
        print_pdfs(documents, pdfs)
        found = {lang: named_destinations(pdfs[lang]) for lang in langs}
        wanted = {lang: {target: found[lang].get(target) for _, target, _ in tocs[lang]
                         if target} for lang in langs}
        if wanted == numbers:
            break  # the numbers printed are the pages the entries landed on
        numbers = wanted
    else:
        raise SystemExit("the table of contents' page numbers did not settle")
    site_copy = html_dir / "pdf"
    site_copy.mkdir(exist_ok=True)
    for pdf in pdfs.values():
        shutil.copy2(pdf, site_copy / pdf.name)
    return pdfs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # paths from the repository root, where make runs
    parser.add_argument("--html", type=Path, default=Path("_build") / "html")
    parser.add_argument("--out", type=Path, default=Path("_build") / "pdf")
    parser.add_argument("--toc", type=Path, default=Path("_toc.yml"))
    parser.add_argument("--lang", choices=LANGS, action="append")
    parser.add_argument("--if-possible", action="store_true",
                        help="without Chromium or poppler-utils, say so and stop (make book)")
    args = parser.parse_args(argv)
    missing = [tool for tool, found in
               [("chromium", os.environ.get("CHROMIUM") or shutil.which("chromium")
                 or shutil.which("chromium-browser")), ("poppler-utils", shutil.which("pdfinfo"))]
               if not found]
    if missing:
        message = (f"no PDFs: this machine lacks {' and '.join(missing)} "
                   f"(apt-get install chromium poppler-utils; see README.md)")
        if args.if_possible:
            print(message)
            return 0
        raise SystemExit(message)
    start = time.perf_counter()
    pdfs = build(args.html, args.out, args.toc, tuple(args.lang or LANGS))
    for pdf in pdfs.values():
        print(f"{pdf} ({pdf.stat().st_size / 1e6:.1f} MB)")
    print(f"PDFs in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
