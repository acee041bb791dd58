"""Every page of the built site works offline and stays light: no outside request, no console
error, math and Chinese from the site itself, slider frames and icons as files, code without
the spans that draw nothing."""
import gzip
import re
import sys

import pytest
from browser import needs_chromium
from built_site import CHAPTER, CHAPTERS, HTML, PAGES, ROOT, Visit, needs_site
from fontTools.ttLib import TTFont

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from light_pages import _unstyled_tokens  # noqa: E402
from offline_site import switch_glyphs  # noqa: E402

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    needs_site,
]


def test_pages_found():
    assert "index.html" in PAGES and CHAPTER in PAGES


@pytest.mark.parametrize("page_path", PAGES)
def test_no_outside_request_and_no_console_error(browser, page_path):
    v = Visit(browser, page_path)
    v.page.wait_for_timeout(300)  # let deferred scripts (MathJax) run
    assert v.outside == [], f"outside requests: {v.outside}"
    assert v.errors == [], f"console errors: {v.errors}"
    v.context.close()


def test_math_renders_offline(browser):
    v = Visit(browser, CHAPTER)
    v.page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
    v.page.evaluate("MathJax.startup.promise")
    assert v.page.locator("mjx-container").count() > 10
    assert v.page.locator("mjx-merror").count() == 0  # no TeX error
    v.context.close()


def test_shipped_cjk_font_covers_every_chinese_character():
    """A reader without any CJK system font still sees every Chinese character."""
    font = HTML / "_static" / "fonts" / "book-cjk.woff2"
    cmap = TTFont(font).getBestCmap()
    chars = set()
    for page in [*PAGES, "_static/lang-switch.js"]:  # and the localised interface strings
        chars |= set(re.findall(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]",
                                (HTML / page).read_text(encoding="utf-8")))
    assert len(chars) > 300  # the book has real Chinese text
    missing = sorted(c for c in chars if ord(c) not in cmap)
    assert not missing, f"characters without a glyph: {''.join(missing)}"
    assert font.stat().st_size < 1_000_000  # a subset, not the 16 MB font


def test_every_chinese_text_is_set_in_a_font_list_that_holds_the_books_chinese_face(browser):
    """In 中文 mode, every element that shows Chinese names "Book CJK" in its font list (a
    slider's value named only monospace fonts: boxes where no system font had the glyphs)."""
    v = Visit(browser, "book/intro.html")
    v.page.evaluate("localStorage.setItem('attention-book-lang', 'zh')")
    bare = {}
    for page_path in [p for p in PAGES if p.startswith(("chapters/", "solutions/", "book/"))]:
        v.goto(page_path)
        found = v.page.evaluate(r"""() => {
            const out = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let n; (n = walker.nextNode());) {
              const e = n.parentElement;
              if (!/[\u3400-\u9fff]/.test(n.nodeValue) || !e) continue;
              if (!e.getClientRects().length) continue;
              if (e.closest('mjx-assistive-mml')) continue;  // MathML for screen readers
              if (!getComputedStyle(e).fontFamily.includes('Book CJK'))
                out.push(e.tagName + ': ' + n.nodeValue.trim().slice(0, 20));
            }
            return out; }""")
        if found:
            bare[page_path] = found[:3]
    v.context.close()
    assert not bare, bare


def test_the_switch_face_holds_exactly_the_switchs_glyphs():
    """book.css's last face covers the Chinese the language switch shows in every mode, and its
    font file has those glyphs: an English page needs nothing else."""
    css = (HTML / "_static" / "book.css").read_text(encoding="utf-8")
    last = re.findall(r"@font-face\s*\{([^}]*)\}", css)[-1]
    assert "fonts/book-cjk-switch.woff2" in last
    points = {int(x, 16) for x in re.findall(r"U\+([0-9A-F]+)", last)}
    glyphs = switch_glyphs((HTML / "_static" / "lang-switch.js").read_text(encoding="utf-8"))
    assert glyphs and points == {ord(c) for c in glyphs}
    cmap = TTFont(HTML / "_static" / "fonts" / "book-cjk-switch.woff2").getBestCmap()
    assert points <= set(cmap)


@pytest.mark.parametrize("lang, page_path", [("en", "book/references.html"), ("en", CHAPTER),
                                             ("zh", "book/references.html")])
def test_a_reader_without_a_chinese_font_fetches_it_only_to_read_chinese(browser, served, lang,
                                                                         page_path):
    """As on a machine without any CJK font (book.css's local() fonts taken out): a page that
    shows no Chinese but the switch's fetches the switch's two glyphs only; one that shows more
    (Chinese mode; or, in English mode, the bilingual labels in a chapter's code) fetches the
    book's font."""
    css = (HTML / "_static" / "book.css").read_text(encoding="utf-8")
    without_local = re.sub(r'local\("[^"]*"\),\s*', "", css)
    assert without_local != css
    context = browser.new_context()
    page = context.new_page()
    page.route("**/_static/book.css*",
               lambda route: route.fulfill(body=without_local, content_type="text/css"))
    fonts = []
    page.on("request", lambda r: "/fonts/" in r.url and fonts.append(r.url.split("/")[-1]))
    page.goto(served + "book/intro.html")
    page.evaluate(f"localStorage.setItem('attention-book-lang', '{lang}')")
    fonts.clear()
    page.goto(served + page_path)
    page.wait_for_load_state("networkidle")
    page.evaluate("document.fonts.ready")
    shown = set(re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]",
                           page.evaluate("document.body.innerText")))
    context.close()
    fetched = {f.split("?")[0] for f in fonts}
    switch = switch_glyphs((HTML / "_static" / "lang-switch.js").read_text(encoding="utf-8"))
    assert shown >= switch
    assert ("book-cjk.woff2" in fetched) == (not shown <= switch), (fonts, shown - switch)
    if lang == "en" and page_path != CHAPTER:
        assert fetched == {"book-cjk-switch.woff2"}, fonts


# Uncompressed HTML. Chapter 8, the heaviest, is 334 KB with its source listings, live
# translator, per-head tables, its practice section and every sidebar title in two language
# spans; what a reader downloads is bounded by the first-view test below. Lighter code
# rendering would bring every page down (site weight).
@pytest.mark.parametrize("page_path", CHAPTERS)
def test_chapter_html_is_light(page_path):
    html = (HTML / page_path).read_text(encoding="utf-8")
    assert "base64," not in html, "slider frames must be image files, not inline base64"
    assert (HTML / page_path).stat().st_size <= 345_000


@pytest.mark.parametrize("page_path", CHAPTERS)
def test_first_view_of_a_chapter_is_light(browser, served, page_path):
    """What a reader with an empty cache downloads for the first screen of a chapter, as a
    host that compresses text (README.md) sends it: at most 1.5 MB."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    sent = {}

    def record(response):
        try:
            body = response.body()
        except Exception:  # a redirect or an aborted request has no body
            return
        compressible = response.url.split("?")[0].endswith(
            (".html", ".js", ".css", ".json", ".svg"))
        sent[response.url] = len(gzip.compress(body, 6)) if compressible else len(body)

    page.on("response", record)
    page.goto(served + page_path)
    # bytes, not time, are asserted: on a busy machine a page may take longer than playwright's
    # default 30 s to fall quiet (recording every body as it comes)
    page.wait_for_load_state("networkidle", timeout=180_000)
    assert not [u for u in sent if "fontawesome.js" in u]  # the theme's icon font suffices
    assert not [u for u in sent if "searchindex.js" in u]  # the search page loads it
    frames = [u for u in sent if "/_images/acframe-" in u]
    assert len(frames) <= page.locator(".ac-slider-figure").count()  # the others on demand
    total = sum(sent.values())
    largest = sorted(sent.items(), key=lambda x: -x[1])[:5]
    assert total <= 1_500_000, f"first view sends {total} bytes: {largest}"
    context.close()


def test_code_keeps_its_colours_without_the_spans_that_draw_nothing():
    """Names, punctuation and whitespace in code lose their spans (they are coloured as the
    block's text), keywords keep theirs; a theme that colours names keeps every span."""
    page = (HTML / "chapters" / "08_transformer.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<div class="highlight"><pre>.*?</pre></div>', page, re.S)
    assert blocks and not any(re.search(r'<span class="[npw]">', b) for b in blocks)
    assert sum(b.count('<span class="k">') for b in blocks) >= 20  # keywords still coloured
    css = (HTML / "_static" / "pygments.css").read_text(encoding="utf-8")
    assert _unstyled_tokens(css)
    assert not _unstyled_tokens(css.replace('.highlight .n { color: #080808 }',
                                            '.highlight .n { color: #0000ff }'))


def test_search_icon_does_not_cover_the_query(browser):
    """Icons are drawn by the theme's icon font (fontawesome.js is dropped): the search form's
    magnifier must still sit beside the query, not on top of it."""
    v = Visit(browser, "search.html")
    icon, text_left = v.page.evaluate("""() => {
        const form = document.querySelector('.bd-search-container form.bd-search');
        const input = form.querySelector('input');
        const left = input.getBoundingClientRect().left +
                     parseFloat(getComputedStyle(input).paddingLeft);
        return [form.querySelector('.fa-magnifying-glass').getBoundingClientRect().toJSON(), left];
    }""")
    assert icon["width"] > 0 and icon["right"] <= text_left + 1
    v.context.close()


def test_no_empty_general_index():
    """genindex.html is either useful (it lists entries) or not built, and nothing links to it."""
    index = HTML / "genindex.html"
    if index.exists():
        text = index.read_text(encoding="utf-8")
        assert re.search(r'<table class="indextable[^>]*>.*?<a ', text, re.S), "an empty index"
    else:
        assert not [p for p in PAGES if "genindex.html" in (HTML / p).read_text(encoding="utf-8")]
