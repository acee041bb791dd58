"""The book as two PDFs (attention_core/book/pdf.py, `make pdf`): one language each, every
chapter, Chinese that renders, nothing past the text block, links that resolve inside the PDF.

Reads the PDFs that `make pdf` (or `make book`) printed into _build/pdf with poppler-utils'
pdftotext, pdffonts, pdfinfo and pdftohtml; `make test` builds them before it runs this file.
Needs Chromium and poppler-utils (`apt-get install chromium poppler-utils`); in CI (CI=true)
nothing here may be skipped.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from functools import lru_cache
from html import unescape
from pathlib import Path

import pytest
from browser import CHROMIUM, browser_test
from bs4 import BeautifulSoup
from built_site import HTML, ROOT

from attention_core.book.bilingual import pick
from attention_core.book.pdf_document import toc_entries
from attention_core.book.pdf_page import TEXT

OUT = Path(os.environ.get("BOOK_PDF", ROOT / "_build" / "pdf")).resolve()
PDF = {lang: OUT / f"attention-{lang}.pdf" for lang in ("en", "zh")}
POPPLER = all(shutil.which(tool) for tool in
              ("pdftotext", "pdffonts", "pdftohtml", "pdfinfo", "pdfimages"))
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# A4 with 20 mm side margins (book/_static/pdf.css): the text block in points
PAGE_WIDTH, MARGIN = 595.0, 20 / 25.4 * 72


needs_pdfs = pytest.mark.skipif(
    not (POPPLER and all(p.exists() for p in PDF.values())),
    reason="no PDFs or no poppler-utils: apt-get install chromium poppler-utils; make pdf")

pytestmark = pytest.mark.site


@pytest.fixture(autouse=True, scope="module")
def _in_ci_the_pdfs_must_exist():
    """In CI a missing PDF is an error, not a skip (checked when these tests run, after `make
    book`, not when another pass only collects them)."""
    if os.environ.get("CI") == "true" and not (CHROMIUM and POPPLER and all(
            p.exists() for p in PDF.values())):
        raise RuntimeError("CI=true but the PDFs or their tools are missing: .ci/run installs "
                           "chromium and poppler-utils, and `make test` runs `make book` first")


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


@lru_cache
def pages_text(lang: str) -> list[str]:
    """The text of every page (pdftotext splits pages with a form feed)."""
    return run("pdftotext", "-layout", str(PDF[lang]), "-").split("\f")[:-1]


@lru_cache
def text(lang: str) -> str:
    """All pages, runs of spaces (pdftotext's layout) as one."""
    return re.sub(r" +", " ", "\n".join(pages_text(lang)))


def chapter_titles() -> list[tuple[str, str]]:
    """(English, Chinese) title of every chapter, from its notebook's first heading."""
    titles = []
    for _, doc in toc_entries(ROOT / "_toc.yml"):
        if not doc.startswith("chapters/"):
            continue
        nb = json.loads((ROOT / (doc + ".ipynb")).read_text(encoding="utf-8"))
        first = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
        heading = next(line for line in "".join(first["source"]).splitlines()
                       if line.startswith("# "))[2:].strip()
        titles.append((pick(heading, "en"), pick(heading, "zh")))
    return titles


# --- the PDFs -------------------------------------------------------------------------------

@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_count_in_a_sane_band(lang):
    pages = int(re.search(r"Pages:\s+(\d+)", run("pdfinfo", str(PDF[lang]))).group(1))
    assert 80 <= pages <= 400, pages
    assert len(pages_text(lang)) == pages
    assert PDF[lang].stat().st_size < 40e6


@needs_pdfs
def test_every_chapter_title_in_its_language_and_no_bilingual_heading():
    titles = chapter_titles()
    assert len(titles) >= 9
    en, zh = text("en"), text("zh")
    for title_en, title_zh in titles:
        assert title_en in en, title_en
        assert title_zh in zh, title_zh
        # headings carry one language: the site's "English · 中文" never reaches paper
        both = f"{title_en} · {title_zh.split(' ', 1)[1]}"
        assert both not in en and both not in zh, both
    # each chapter starts a page whose running head names it (from the chapter's 2nd page on)
    for lang, index in (("en", 0), ("zh", 1)):
        for title in (t[index] for t in titles):
            pages = [n for n in range(1, len(pages_text(lang)) + 1)
                     if running_head(lang, n).endswith(title)]
            assert len(pages) >= 3, (lang, title)


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_table_of_contents_gives_the_page_each_chapter_starts_on(lang):
    pages = [re.sub(r" +", " ", p) for p in pages_text(lang)]
    contents = "\n".join(pages[1:4])
    for title in (t[0 if lang == "en" else 1] for t in chapter_titles()):
        m = re.search(re.escape(title) + r"[ .]*(\d+)\s*$", contents, re.M)
        assert m, title
        number = int(m.group(1))
        # the running head names the chapter from that page on, not on the page before
        assert running_head(lang, number).endswith(title), (title, number)
        assert not running_head(lang, number - 1).endswith(title), (title, number)


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_figures_keep_their_shape_at_print_resolution(lang):
    """pdfimages' resolution of every image as placed: the same across and down (a figure
    squeezed to the text block's width but not in height would differ), and at least 150 ppi
    (the figures are retina PNGs: about 195 ppi at their natural size)."""
    rows = [line.split() for line in run("pdfimages", "-list", str(PDF[lang])).splitlines()[2:]]
    images = [(int(r[0]), float(r[12]), float(r[13])) for r in rows if r[2] == "image"]
    assert len(images) >= 30, len(images)
    for page, x_ppi, y_ppi in images:
        assert abs(x_ppi / y_ppi - 1) < 0.03, (page, x_ppi, y_ppi)
        assert min(x_ppi, y_ppi) >= 150, (page, x_ppi, y_ppi)


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_math_is_typeset_not_raw_tex(lang):
    raw = re.findall(r"\\(?:frac|mathbf|sum|alpha|begin|left|right|sqrt|mathrm|operatorname"
                     r"|top|cdot)\b|\\\(|\\\[|\$\$", run("pdftotext", str(PDF[lang]), "-"))
    assert not raw, raw[:10]


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bookmarks_name_every_chapter(lang):
    """The outline (bookmarks): Chromium writes each heading's text as a PDF string, literal
    for ASCII, UTF-16 in hex otherwise."""
    data = PDF[lang].read_bytes()
    assert b"/Outlines" in data
    titles = [t.decode("latin-1") for t in re.findall(rb"/Title \(([^)]*)\)", data)]
    titles += [bytes.fromhex(t.decode()).decode("utf-16")
               for t in re.findall(rb"/Title <([0-9A-Fa-f]+)>", data)]
    for title in (t[0 if lang == "en" else 1] for t in chapter_titles()):
        assert title in titles, title


@needs_pdfs
def test_chinese_pdf_holds_chinese_and_the_english_pdf_english():
    zh_cjk = len(CJK.findall(text("zh")))
    en_cjk = len(CJK.findall(text("en")))
    assert zh_cjk > 20000, zh_cjk
    # the English PDF keeps Chinese only in the glossary and figure labels
    assert en_cjk * 5 < zh_cjk, (en_cjk, zh_cjk)
    assert "The bandwidth decides how many keys" in text("en").replace("\n", " ") or \
        "bandwidth" in text("en")
    assert "带宽" in text("zh")


def prose_samples() -> list[tuple[str, str, str]]:
    """(chapter, English words, Chinese characters) from the first prose block of each language
    in every chapter: eight plain English words in a row, eight Chinese characters in a row."""
    samples = []
    for _, doc in toc_entries(ROOT / "_toc.yml"):
        if not doc.startswith("chapters/"):
            continue
        nb = json.loads((ROOT / (doc + ".ipynb")).read_text(encoding="utf-8"))
        text_ = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        en_block = text_.split('<div class="lang-en"', 1)[1].split("</div>", 1)[0]
        zh_block = text_.split('<div class="lang-zh"', 1)[1].split("</div>", 1)[0]
        word = r"[A-Za-z][A-Za-z-]*"
        en = re.search(rf"(?<![\w`$*-])({word} ){{7}}{word}(?![\w`$*-])", en_block).group(0)
        zh = re.search(r"[\u4e00-\u9fff]{8}", zh_block).group(0)
        samples.append((doc, en, zh))
    return samples


@needs_pdfs
def test_the_playground_prints_as_a_note_not_as_an_empty_figure():
    """Chapter 3's attention playground computes in the page; on paper a note says where it is."""
    for lang in PDF:
        letters = (lambda s: "".join(CJK.findall(s))) if lang == "zh" else \
            (lambda s: re.sub(r"[^A-Za-z]+", "", s))  # line-end hyphens and breaks drop out
        assert letters(TEXT[lang]["playground"]) in letters(text(lang)), lang


@needs_pdfs
def test_each_pdf_holds_its_language_of_every_bilingual_block():
    # letters only (English) and Chinese characters only: inline math, which the text layer
    # may give out of order, drops out
    raw = {lang: run("pdftotext", str(PDF[lang]), "-") for lang in PDF}
    flat = {lang: re.sub(r"[^A-Za-z]+", " ", raw[lang]) for lang in PDF}
    flat_zh = {lang: "".join(CJK.findall(raw[lang])) for lang in PDF}
    samples = prose_samples()
    assert len(samples) >= 9
    for doc, en, zh in samples:
        en = re.sub(r"[^A-Za-z]+", " ", en)
        assert en in flat["en"] and en not in flat["zh"], (doc, en)
        assert zh in flat_zh["zh"] and zh not in flat_zh["en"], (doc, zh)


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chinese_term_of_the_glossary_is_printed(lang):
    """Both PDFs print the glossary's Chinese column. A Chinese word shaped before the CJK face
    had loaded printed as empty boxes, which leave no text: every term must be in the text of
    the glossary's pages."""
    rows = re.findall(r"^\| [^|]+ \| ([^|]+) \|", (ROOT / "book" / "glossary.md").read_text(
        encoding="utf-8"), re.M)
    terms = ["".join(CJK.findall(t)) for t in rows[2:]]  # below the header row
    pages = [t for n, t in enumerate(pages_text(lang), 1)
             if re.search(r"Glossary|术语表", running_head(lang, n))]
    printed = "".join(CJK.findall("".join(pages)))
    missing = [t for t in terms if t and t not in printed]
    assert len(terms) >= 40 and pages and not missing, (len(terms), len(pages), missing[:10])


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_font_is_embedded_as_a_font(lang):
    """Embedded, and as fonts: no Type 3 (Chromium prints CFF outlines, such as Noto CJK's and
    MathJax's, and thickened fake bold as Type 3 drawings; pdf_fonts.py converts the fonts)."""
    rows = run("pdffonts", str(PDF[lang])).splitlines()[2:]
    assert len(rows) >= 5
    for row in rows:
        # columns: name type encoding emb sub uni object ID; the name may be "[none]"
        fields = row.split()
        assert fields[-5] == "yes", row
        assert "Type 3" not in row, row
    names = " ".join(row.split()[0] for row in rows)
    assert "MathJax_Main" in names  # the math, as a font
    assert lang == "en" or "NotoSansCJK" in names  # the Chinese, as a font


# pdftotext -bbox writes one <word> per line, its attributes always in this order
WORD = re.compile(
    r'<word xMin="([^"]+)" yMin="([^"]+)" xMax="([^"]+)" yMax="([^"]+)">([^<]*)</word>')


@lru_cache
def words(lang: str) -> list[list[tuple[float, float, float, float, str]]]:
    """Per page, every word pdftotext finds: (xmin, ymin, xmax, ymax, text). Read with a
    regular expression: the same words as an HTML parser gives, several times faster."""
    out = run("pdftotext", "-bbox", str(PDF[lang]), "-")
    pages = [[(float(x0), float(y0), float(x1), float(y1), unescape(text))
              for x0, y0, x1, y1, text in WORD.findall(page)] for page in out.split("<page ")[1:]]
    # another layout of pdftotext's output must fail here, not leave the checks nothing to read
    assert sum(map(len, pages)) == out.count("<word ") > 0, "pdftotext -bbox: unexpected format"
    return pages


def running_head(lang: str, number: int) -> str:
    """The words printed in the top margin of page `number` (1-based), left to right."""
    top = MARGIN  # the head sits in the 22 mm top margin, above this line
    return " ".join(w[4] for w in sorted(words(lang)[number - 1], key=lambda w: w[0])
                    if (w[1] + w[3]) / 2 < top)


@needs_pdfs
def test_no_stray_space_between_chinese_characters():
    """A gap between two Chinese characters on one line, with nothing printed in it, is a
    stray space (a line break inside Chinese source text kept as a space, or a justification
    gap). Inline math between two Chinese words is printed in the gap, so it does not count."""
    stray = []
    for number, page in enumerate(words("zh"), 1):
        for a in page:
            # prose is 10 pt (a Chinese glyph box about 23 pt tall), code and printed output
            # 7.8 pt: there a space between two characters is the program's own
            if not CJK.match(a[4][-1]) or a[3] - a[1] < 20:
                continue
            right = [b for b in page if b is not a and b[0] >= a[2] - 0.5 and
                     min(a[3], b[3]) - max(a[1], b[1]) > 0.5 * min(a[3] - a[1], b[3] - b[1])]
            if not right:
                continue
            b = min(right, key=lambda w: w[0])
            # a space is about a third of an em; the glyph box of a Chinese line is about two
            # ems tall; table cells are farther apart
            # two Chinese words of one line are set in one size: a running header next to
            # the larger title that starts below it is not a line with a gap in it
            same_size = abs((b[3] - b[1]) - (a[3] - a[1])) < 0.25 * (a[3] - a[1])
            if CJK.match(b[4][0]) and same_size and 0.8 < b[0] - a[2] < 0.3 * (a[3] - a[1]):
                stray.append((number, a[4][-6:] + " " + b[4][:6]))
    assert not stray, stray[:20]


# MathJax draws an overline (\overline{k}, the bar of a square root) as one dash glyph scaled
# to the bar's width; the text layer reports that glyph's unscaled box, thousands of points
# wide, although nothing is printed outside the bar.
STRETCHED_RULES = {"–", "—", "‾", "¯", "−", "─"}


CLOSING_MARKS = "）」』】〉》，。；：！？、"


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_text_runs_past_the_text_block(lang):
    """Every word, code and printed output included, lies between the side margins."""
    outside = []
    for number, page in enumerate(words(lang), 1):
        for xmin, _, xmax, _, word in page:
            if word in STRETCHED_RULES:
                continue
            # a full-width closing mark that ends a line is set in half its width (Chromium's
            # text-spacing-trim): its blank right half lies past the block, its ink does not
            slack = 3 + (5.5 if word[-1] in CLOSING_MARKS else 0)
            if xmax > PAGE_WIDTH - MARGIN + slack or xmin < MARGIN - 3:
                outside.append((number, word, xmin, xmax))
    assert not outside, outside[:10]


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_page_holds_fewer_than_three_lines(lang):
    """No page ends a chapter, or anything else, with a line or two left over."""
    top, bottom = 22 / 25.4 * 72, 841.92 - 20 / 25.4 * 72  # pdf.css: the page's text block
    short = []
    for number, page in enumerate(words(lang), 1):
        baselines = sorted({round(ymax) for _, ymin, _, ymax, _ in page
                            if top < ymin and ymax < bottom})
        lines = [y for i, y in enumerate(baselines) if i == 0 or y - baselines[i - 1] > 4]
        if len(lines) < 3:
            short.append((number, len(lines)))
    assert len(words(lang)) > 200
    assert not short, short


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_citations_and_chapter_links_resolve_inside_the_pdf(lang):
    xml = BeautifulSoup(run("pdftohtml", "-xml", "-i", "-stdout", "-q", str(PDF[lang])), "xml")
    pages = xml.find_all("page")
    refs_title = {"en": "References", "zh": "参考文献"}[lang]
    texts = pages_text(lang)
    # the bibliography: the pages whose running head names it (index of its first page)
    refs_start = min(n for n in range(1, len(texts) + 1)
                     if running_head(lang, n).endswith(refs_title)) - 1
    citations = 0
    for page in pages[:refs_start]:
        for a in page.find_all("a"):
            href = a.get("href", "")
            m = re.search(r"#(\d+)$", href)
            if href.startswith("http") or not m:
                continue
            target = int(m.group(1))
            assert 1 <= target <= len(texts), href
            if target - 1 < refs_start:
                continue  # a link to a chapter, a section or the API reference
            citations += 1
            author = re.match(r"\s*\[?([A-Z][a-z]+)", a.get_text())
            if author:  # (a label broken across lines comes in pieces)
                assert author.group(1) in texts[target - 1], (a.get_text(), target)
    assert citations >= 40, citations


@needs_pdfs
@browser_test
@pytest.mark.parametrize("mode", ["en", "zh"])
def test_site_header_links_to_both_pdfs(browser, mode):
    """Beside the language switch on a wide screen, and in the download menu on any screen
    (a phone has no room beside the switch); the menu's words follow the language."""
    menu_text = {"en": ["Book in English (.pdf)", "Book in Chinese (.pdf)"],
                 "zh": ["全书英文版 (.pdf)", "全书中文版 (.pdf)"]}[mode]
    for width in (1280, 390):
        context = browser.new_context(viewport={"width": width, "height": 800})
        page = context.new_page()
        page.goto((HTML / "chapters" / "02_attention_pooling.html").as_uri() +
                  f"?lang={mode}")
        page.wait_for_load_state("load")
        get = ("els => els.map(a => ({href: a.href, text: a.textContent.trim(), "
               "title: a.title, visible: a.offsetWidth > 0}))")
        inline = page.eval_on_selector_all(".bd-header-article .pdf-links a", get)
        assert [link["text"] for link in inline] == ["English", "中文"], inline
        assert all(link["visible"] for link in inline) == (width > 540), inline
        page.click(".dropdown-download-buttons .dropdown-toggle")
        menu = page.eval_on_selector_all(
            ".dropdown-download-buttons .dropdown-menu a.book-pdf-item", get)
        assert [link["text"] for link in menu] == menu_text, menu
        assert all(link["visible"] for link in menu), menu
        for links in (inline, menu):
            for link, lang in zip(links, ("en", "zh"), strict=True):
                assert link["href"].endswith(f"/pdf/attention-{lang}.pdf")
                path = Path(link["href"].removeprefix("file://"))
                assert path.exists() and path.read_bytes()[:5] == b"%PDF-"
                assert bool(CJK.search(link["title"])) == (mode == "zh"), link
        context.close()


@needs_pdfs
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reference_venues_are_set_in_italics(lang):
    """A venue is English in both PDFs and set in italics in both (the Chinese PDF marks its
    own emphasis with dots, which an English title must not get)."""
    pages = [n for n, page in enumerate(pages_text(lang), 1) if "Proceedings of the" in page]
    # and a citation's "et al." in the text, on the first chapter page that has one
    cited = [n for n, page in enumerate(pages_text(lang), 1)
             if "et al." in page and "Proceedings of the" not in page and n > 10]
    assert pages and cited
    for number in (pages[-1], cited[0]):
        fonts = run("pdffonts", "-f", str(number), "-l", str(number), str(PDF[lang]))
        assert re.search(r"Liberation\w*-Italic", fonts), (number, fonts)  # not math italic


@needs_pdfs
def test_no_line_of_the_chinese_pdf_begins_with_a_closing_mark():
    """"，" or "。" never starts a line (cjk_spacing.py glues them to the formula or code they
    follow; the browser breaks elsewhere on its own)."""
    starts = []
    for number, page in enumerate(words("zh"), 1):
        lines = {}
        for xmin, _, _, ymax, word in page:
            key = round(ymax)
            if key not in lines or xmin < lines[key][0]:
                lines[key] = (xmin, word)
        starts += [(number, word) for xmin, word in lines.values()
                   if xmin < MARGIN + 2 and word[:1] in CLOSING_MARKS]
    assert sum(map(len, words("zh"))) > 10_000
    assert not starts, starts[:10]
