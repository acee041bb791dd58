"""The built site as a reader's browser sees it, with every outside request refused.

Needs the built site (`make book`) and a Chromium (Debian's `chromium` package); Playwright's
Python package drives it, and no browser is downloaded. Without Chromium these tests skip;
`.ci/run` installs it where it can.
"""
import functools
import http.server
import json
import os
import re
import threading
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from browser import CHROMIUM, FLAGS, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html")).resolve()  # another build

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    pytest.mark.skipif(not (HTML / "index.html").exists(), reason="site not built: make book"),
]

CHAPTER = "chapters/02_attention_pooling.html"
PAGES = sorted(str(p.relative_to(HTML)) for p in HTML.glob("**/*.html")
               if "_static" not in p.parts and "_sources" not in p.parts)


@pytest.fixture(scope="module")
def playwright():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright):
    b = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
    yield b
    b.close()


class Visit:
    """One page in a fresh context, recording outside requests and console errors."""

    def __init__(self, browser, page_path, locale="en-US"):
        self.context = browser.new_context(locale=locale)
        self.page = self.context.new_page()
        self.outside, self.errors = [], []
        self.context.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.goto(page_path)

    def _route(self, route):
        url = route.request.url
        if url.startswith(("file://", "data:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def goto(self, page_path):
        self.page.goto((HTML / page_path).as_uri())
        self.page.wait_for_load_state("load")

    def visible(self, selector):
        return self.page.locator(selector).first.is_visible()


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


def test_language_switch_hides_the_other_language_and_is_remembered(browser):
    v = Visit(browser, CHAPTER, locale="en-US")
    assert v.page.get_attribute("html", "data-book-lang") == "en"  # from the browser language
    assert v.visible(".lang-en") and not v.visible(".lang-zh")
    v.page.click(".lang-switch button[value=zh]")
    # the choice is stored by the click's handler: wait for it before leaving (under load the
    # next page could start before the handler ran, seen once in a fresh-clone run)
    v.page.wait_for_selector(".lang-switch button[value=zh][aria-pressed=true]")
    assert v.visible(".lang-zh") and not v.visible(".lang-en")
    v.goto("book/intro.html")  # another page keeps the choice
    assert v.page.get_attribute("html", "data-book-lang") == "zh"
    assert v.visible(".lang-zh") and not v.visible(".lang-en")
    v.page.click(".lang-switch button[value=both]")
    assert v.visible(".lang-zh") and v.visible(".lang-en")
    assert v.page.get_attribute(".lang-switch button[value=both]", "aria-pressed") == "true"
    v.context.close()


def test_chinese_browser_defaults_to_chinese(browser):
    v = Visit(browser, "book/intro.html", locale="zh-CN")
    assert v.page.get_attribute("html", "data-book-lang") == "zh"
    assert v.visible(".lang-zh") and not v.visible(".lang-en")
    v.context.close()


def _english(markup):
    """The text an English reader sees of a slider's value: its English span, or the number."""
    markup = re.sub(r'<span class="lang-(zh|sep)"[^>]*>.*?</span>', "", markup)
    return re.sub(r"<[^>]+>", "", markup)


def test_kernel_free_sliders_work_and_no_dead_widget(browser):
    v = Visit(browser, CHAPTER)
    assert v.page.locator(".jupyter-widgets, .widget-view, [data-jupyter-widgets-cdn]").count() == 0
    figures = v.page.locator(".ac-slider-figure")
    assert figures.count() >= 1
    for n in range(figures.count()):
        fig = figures.nth(n)
        fig.scroll_into_view_if_needed()
        assert fig.is_visible()
        data = json.loads(fig.locator("script[id$='-data']").inner_text())
        img = fig.locator("img")
        # move the first slider to each end: the frame and the readout follow
        slider, readout = fig.locator("input[type=range]").first, fig.locator("output").first
        for end in (0, data["sizes"][0] - 1):
            before = img.get_attribute("src")
            slider.evaluate(f"(el) => {{ el.value = {end}; el.dispatchEvent(new Event('input')); }}")
            assert readout.inner_text() == _english(data["outputs"][0][end])
            assert img.get_attribute("src").removeprefix("data:image/png;base64,") in data["frames"]
            if before != img.get_attribute("src"):
                break
        else:
            pytest.fail("moving the slider never changed the frame")
    v.context.close()


def test_shipped_cjk_font_covers_every_chinese_character():
    """A reader without any CJK system font still sees every Chinese character."""
    import re

    from fontTools.ttLib import TTFont

    font = HTML / "_static" / "fonts" / "book-cjk.woff"
    cmap = TTFont(font).getBestCmap()
    chars = set()
    for page in [*PAGES, "_static/lang-switch.js"]:  # and the localised interface strings
        chars |= set(re.findall(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]",
                                (HTML / page).read_text(encoding="utf-8")))
    assert len(chars) > 300  # the book has real Chinese text
    missing = sorted(c for c in chars if ord(c) not in cmap)
    assert not missing, f"characters without a glyph: {''.join(missing)}"
    assert font.stat().st_size < 1_000_000  # a subset, not the 16 MB font


# --- the site as a reader meets it (issue 13) ---------------------------------------------

CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
PROSE_PAGES = [p for p in PAGES if p.startswith(("chapters/", "book/"))]


@pytest.fixture(scope="module")
def served():
    """The site over HTTP on the loopback address, as a host serves it: the search page
    fetches pages for its snippets, which a file:// page may not do."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


def _article_text(page_path):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((HTML / page_path).read_text(encoding="utf-8"), "html.parser")
    article = soup.select_one("article.bd-article")
    if article is None:
        return ""
    for tag in article.select("script, style"):
        tag.decompose()
    return article.get_text(" ").lower()


def _search(browser, base, query, locale="en-US", lang=None):
    context = browser.new_context(locale=locale)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    url = base + "search.html?q=" + query + (f"&lang={lang}" if lang else "")
    page.goto(url)
    page.wait_for_function(
        "typeof Search !== 'undefined' && Search.status && Search.title"
        " && !Search.status.classList.contains('search-progress')"
        " && /\\d|not match|没有/.test(Search.status.innerText)"
        " && !/Preparing|Searching|正在/.test(Search.status.innerText)", timeout=20_000)
    page.wait_for_timeout(300)  # snippets arrive after the list
    hits = page.eval_on_selector_all(
        "#search-results ul.search li > a",
        "els => els.map(e => new URL(e.href).pathname.split('/').slice(-2).join('/'))")
    return context, page, {h for h in hits}, errors


SEARCH_TERMS = ["位置编码", "编码", "束搜索", "掩蔽", "softmax", "beam search", "注意力"]


@pytest.mark.parametrize("term", SEARCH_TERMS)
def test_search_finds_every_page_whose_text_has_the_term(browser, served, term):
    expected = {p for p in PROSE_PAGES if term.lower() in _article_text(p)}
    assert expected, f"no page contains {term!r}: the test would prove nothing"
    context, page, hits, errors = _search(browser, served, term)
    missing = sorted(expected - hits)
    assert not missing, f"search for {term!r} misses {missing} (found {sorted(hits)})"
    assert not errors
    context.close()


def test_chinese_search_segments_a_query_typed_without_spaces(browser, served):
    # "the formula of positional encoding", as a reader types it: no spaces between words
    context, page, hits, _ = _search(browser, served, "位置编码的公式")
    assert "chapters/06_positional_encoding.html" in hits
    context.close()


def test_search_snippets_show_no_raw_tex(browser, served):
    context, page, hits, _ = _search(browser, served, "softmax")
    page.wait_for_function("document.querySelectorAll('#search-results p.context').length >= 3",
                           timeout=10_000)
    snippets = page.eval_on_selector_all("#search-results p.context", "els => els.map(e => e.innerText)")
    tex = [s for s in snippets if re.search(r"\\[a-zA-Z]+|\\\(|\\\[|\$\$", s)]
    assert not tex, f"raw TeX in search snippets: {tex[:2]}"
    context.close()


def test_search_page_text_follows_the_language(browser, served):
    context, page, hits, _ = _search(browser, served, "softmax", lang="zh")
    assert page.inner_text("#search-results h2") == "搜索结果"
    assert "找到" in page.inner_text("#search-results p.search-summary")
    assert page.get_attribute("form.bd-search input", "placeholder") == "在本书中搜索…"
    context.close()


def test_url_language_is_applied_once_and_the_readers_choice_wins_on_reload(browser):
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    page.goto((HTML / CHAPTER).as_uri() + "?lang=zh")
    page.wait_for_load_state("load")
    assert page.get_attribute("html", "data-book-lang") == "zh"
    assert "lang=" not in page.url  # removed from the address
    page.click(".lang-switch button[value=en]")
    page.reload()
    page.wait_for_load_state("load")
    assert page.get_attribute("html", "data-book-lang") == "en"
    context.close()


@pytest.mark.parametrize("mode, html_lang", [("en", "en"), ("zh", "zh-Hans")])
def test_html_lang_follows_the_mode(browser, mode, html_lang):
    v = Visit(browser, CHAPTER)
    v.page.click(f".lang-switch button[value={mode}]")
    assert v.page.get_attribute("html", "lang") == html_lang
    v.goto("book/intro.html")  # and on the next page, before any click
    assert v.page.get_attribute("html", "lang") == html_lang
    v.context.close()


THEME_STRINGS = {  # selector: (English, 中文)
    ".prev-next-area .left-prev .prev-next-subtitle": ("previous", "上一页"),
    ".prev-next-area .right-next .prev-next-subtitle": ("next", "下一页"),
    "#pst-back-to-top": ("Back to top", "回到顶部"),
    ".sidebar-primary-item .search-button__default-text": ("Search", "搜索"),
    ".page-toc.tocsection.onthispage": ("Contents", "目录"),
    ".component-author": ("By The attention_core authors", "作者：attention_core 作者组"),
}


def test_theme_interface_is_chinese_in_chinese_mode(browser):
    v = Visit(browser, CHAPTER, locale="zh-CN")
    for selector, (en, zh) in THEME_STRINGS.items():
        assert v.page.locator(selector).first.text_content().strip() == zh, selector
    button = ".theme-switch-button"
    assert v.page.get_attribute(button, "aria-label") == "颜色模式"
    v.page.click(".lang-switch button[value=en]")  # and back: the theme's own English
    for selector, (en, zh) in THEME_STRINGS.items():
        assert v.page.locator(selector).first.text_content().strip() == en, selector
    assert v.page.get_attribute(button, "aria-label") == "Color mode"
    v.context.close()


def test_notation_table_shows_the_column_of_the_chosen_language(browser):
    v = Visit(browser, "book/notation.html", locale="en-US")
    heads = lambda: [h for h in v.page.locator("article table thead th").all() if h.is_visible()]
    texts = lambda: [h.inner_text().strip() for h in heads()]
    assert "meaning" in texts() and "含义" not in texts()
    v.page.click(".lang-switch button[value=zh]")
    assert "含义" in texts() and "meaning" not in texts()
    v.page.click(".lang-switch button[value=both]")
    assert "含义" in texts() and "meaning" in texts()
    v.context.close()


@pytest.mark.parametrize("width", [1366, 1024])
def test_sidebar_title_does_not_break_inside_a_word(browser, width):
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto((HTML / "book/intro.html").as_uri())
    lines = page.evaluate("""() => {
        const title = document.querySelector('.navbar-brand .logo__title');
        const node = [...title.childNodes].find(n => n.nodeType === 3 && n.nodeValue.trim());
        const text = node.nodeValue;
        const words = text.trim().split(/\\s+|·/).filter(w => w);
        return words.map(w => {
          const r = document.createRange(), at = text.indexOf(w);
          r.setStart(node, at); r.setEnd(node, at + w.length);
          return [w, new Set([...r.getClientRects()].map(x => Math.round(x.top))).size];
        });
    }""")
    broken = [w for w, n in lines if n != 1]
    assert not broken, f"title words broken over lines: {broken}"
    context.close()


def _visible_prose(page):
    """The article's text as a Chinese reader sees it; code and math stand for one symbol."""
    return page.evaluate("""() => {
        const copy = document.querySelector('article.bd-article').cloneNode(true);
        copy.querySelectorAll('script, style, .lang-en').forEach(e => e.remove());
        copy.querySelectorAll('pre, code, mjx-container, .math').forEach(e => e.replaceWith('§'));
        document.body.appendChild(copy);
        const text = copy.innerText;
        copy.remove();
        return text;
    }""")


# innerText collapses the source's whitespace, so a tab in it is a table's cell boundary (the
# playground's header 键 | 值 | 分数 | 权重), not a space a reader sees inside Chinese text
STRAY_SPACE = re.compile(rf"[{CJK}][ \u00a0]+[{CJK}]")


def test_no_stray_space_inside_chinese_text(browser):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    found = {}
    for page_path in PROSE_PAGES:
        page.goto((HTML / page_path).as_uri())
        page.wait_for_load_state("load")
        stray = STRAY_SPACE.findall(_visible_prose(page))
        if stray:
            found[page_path] = stray
    assert not found, f"{sum(map(len, found.values()))} stray spaces: {found}"
    context.close()


def test_spaces_around_latin_words_and_math_stay():
    import sys
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from cjk_spacing import tighten

    assert tighten("输入。 本书") == "输入。本书"
    assert tighten("斯坦福、\n微软") == "斯坦福、微软"
    assert tighten("用 softmax\n归一化") == "用 softmax\n归一化"
    assert tighten("第 1 章 注意力提示") == "第 1 章注意力提示"
    assert tighten("第 $i$ 个 token 的") == "第 $i$ 个 token 的"


def test_code_keeps_its_colours_without_the_spans_that_draw_nothing():
    """Names, punctuation and whitespace in code lose their spans (they are coloured as the
    block's text), keywords keep theirs; a theme that colours names keeps every span."""
    import sys
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from light_pages import _unstyled_tokens

    page = (HTML / "chapters" / "08_transformer.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<div class="highlight"><pre>.*?</pre></div>', page, re.S)
    assert blocks and not any(re.search(r'<span class="[npw]">', b) for b in blocks)
    assert sum(b.count('<span class="k">') for b in blocks) >= 20  # keywords still coloured
    css = (HTML / "_static" / "pygments.css").read_text(encoding="utf-8")
    assert _unstyled_tokens(css)
    assert not _unstyled_tokens(css.replace('.highlight .n { color: #080808 }',
                                            '.highlight .n { color: #0000ff }'))


def _phone(browser, width):
    """A phone-like context: overlay scrollbars, which take no room and show only while
    scrolling (as on phones and macOS), so only a styled scrollbar is visible at rest."""
    return browser.new_context(viewport={"width": width, "height": 800}, is_mobile=True,
                               has_touch=True)


@pytest.fixture(scope="module")
def browser_with_scrollbars(playwright):
    # headless Chromium hides every scrollbar unless told not to
    b = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS,
                                   ignore_default_args=["--hide-scrollbars"])
    yield b
    b.close()


UNSCROLLED = """(selector) => [...document.querySelectorAll(selector)].filter(el => {
    // wider than the box that shows it, and no scrollable box with a visible bar around it
    const wide = el.scrollWidth > el.clientWidth + 1 ||
                 el.getBoundingClientRect().right > document.documentElement.clientWidth + 1;
    if (!wide) return false;
    for (let box = el; box && box.tagName !== 'ARTICLE'; box = box.parentElement) {
      const s = getComputedStyle(box);
      if (['auto', 'scroll'].includes(s.overflowX) && box.scrollWidth > box.clientWidth + 1)
        return !(box.offsetHeight - box.clientHeight > 0);  // the bar takes room: visible
    }
    return true;
  }).map(el => (el.textContent || '').slice(0, 40))"""


@pytest.mark.parametrize("width", [1366, 390])
def test_no_display_equation_is_clipped_without_a_visible_scroll(browser_with_scrollbars, width):
    context = _phone(browser_with_scrollbars, width)
    page = context.new_page()
    clipped, wide = {}, 0
    for page_path in PROSE_PAGES:
        page.goto((HTML / page_path).as_uri())
        page.wait_for_load_state("load")
        if page.locator("div.math").count() == 0:
            continue
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")
        wide += page.evaluate("[...document.querySelectorAll('mjx-container[display=true]')]"
                              ".filter(c => c.scrollWidth > c.clientWidth + 1).length")
        bad = page.evaluate(UNSCROLLED, "mjx-container[display=true]")
        if bad:
            clipped[page_path] = bad
    assert wide >= 1, "no wide equation: the check would prove nothing"
    assert not clipped, f"clipped display math at {width}px: {clipped}"
    context.close()


def test_wide_tables_scroll_visibly_on_a_phone(browser_with_scrollbars):
    context = _phone(browser_with_scrollbars, 390)
    page = context.new_page()
    clipped = {}
    for page_path in PROSE_PAGES:
        page.goto((HTML / page_path).as_uri())
        page.wait_for_load_state("load")
        bad = page.evaluate(UNSCROLLED, "article table")
        if bad:
            clipped[page_path] = bad
    assert not clipped, f"tables clipped at 390px: {clipped}"
    context.close()


def test_language_buttons_fit_on_one_line_on_a_phone(browser):
    context = browser.new_context(viewport={"width": 390, "height": 800}, is_mobile=True)
    page = context.new_page()
    page.goto((HTML / CHAPTER).as_uri())
    page.wait_for_load_state("load")
    boxes = page.evaluate("""() => [...document.querySelectorAll('.lang-switch button')].map(b => {
        const r = b.getBoundingClientRect(), s = getComputedStyle(b);
        const range = document.createRange(); range.selectNodeContents(b);
        const tops = new Set([...range.getClientRects()].filter(x => x.width > 0)
                             .map(x => Math.round(x.top)));
        return {top: Math.round(r.top), right: r.right, lines: tops.size};
    })""")
    assert len(boxes) == 3
    assert all(b["lines"] == 1 for b in boxes), boxes  # no "中/文"
    assert len({b["top"] for b in boxes}) == 1, boxes  # one row
    assert max(b["right"] for b in boxes) <= 390, boxes  # inside the screen
    context.close()


@pytest.mark.parametrize("page_path", CHAPTERS)
def test_chapter_html_is_light(page_path):
    html = (HTML / page_path).read_text(encoding="utf-8")
    assert "base64," not in html, "slider frames must be image files, not inline base64"
    assert (HTML / page_path).stat().st_size <= 300_000


@pytest.mark.parametrize("page_path", CHAPTERS)
def test_first_view_of_a_chapter_is_light(browser, served, page_path):
    """What a reader with an empty cache downloads for the first screen of a chapter, as a
    host that compresses text (README.md) sends it: at most 1.5 MB."""
    import gzip

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    sent = {}

    def record(response):
        try:
            body = response.body()
        except Exception:  # a redirect or an aborted request has no body
            return
        compressible = response.url.split("?")[0].endswith((".html", ".js", ".css", ".json", ".svg"))
        sent[response.url] = len(gzip.compress(body, 6)) if compressible else len(body)

    page.on("response", record)
    page.goto(served + page_path)
    # bytes, not time, are asserted: beside CI's portable nbval pass, chapter 3's page took
    # longer than playwright's default 30 s to fall quiet (recording every body as it comes)
    page.wait_for_load_state("networkidle", timeout=180_000)
    assert not [u for u in sent if "fontawesome.js" in u]  # the theme's icon font suffices
    frames = [u for u in sent if "/_images/acframe-" in u]
    assert len(frames) <= page.locator(".ac-slider-figure").count()  # the others on demand
    total = sum(sent.values())
    assert total <= 1_500_000, f"first view sends {total} bytes: {sorted(sent.items(), key=lambda x: -x[1])[:5]}"
    context.close()


def _soup(path):
    """A built page's HTML, parsed (the links and labels checked below are written at build
    time, so reading the files checks what a browser shows, without loading each page)."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_citations_use_one_author_year_label_and_link_back():
    references = HTML / "book" / "references.html"
    entries = [{"id": d["id"], "label": d.select_one(".label").get_text().strip("[]"),
                "back": [a["href"] for a in d.select("a.citation-backlink")]}
               for d in _soup(references).select("div.citation")]
    assert len(entries) >= 10
    for entry in entries:
        assert re.fullmatch(r"[^\d\[\]]+, \d{4}[a-z]?", entry["label"]), entry  # not [BCB14]
        assert entry["back"], f"{entry['label']} links back to no page"
    # every link back lands on a citation in the text that shows the same label
    pages = functools.lru_cache(maxsize=None)(_soup)
    plain = lambda t: " ".join(re.sub(r"[\[\],]", " ", t).split())  # [A, 2014] or A [2014]
    for entry in entries:
        page, anchor = entry["back"][0].split("#")
        cited = pages((references.parent / page).resolve()).find(id=anchor)
        assert cited is not None and plain(entry["label"]) in plain(cited.get_text()), (entry, cited)
        assert entry["id"] in [a["href"].split("#")[-1] for a in cited.find_all("a", href=True)]


def test_no_empty_general_index():
    """genindex.html is either useful (it lists entries) or not built, and nothing links to it."""
    index = HTML / "genindex.html"
    if index.exists():
        text = index.read_text(encoding="utf-8")
        assert re.search(r'<table class="indextable[^>]*>.*?<a ', text, re.S), "an empty index"
    else:
        assert not [p for p in PAGES if "genindex.html" in (HTML / p).read_text(encoding="utf-8")]


@pytest.mark.parametrize("width, side_by_side", [(1366, True), (390, False)])
def test_both_languages_side_by_side_on_a_wide_screen(browser, width, side_by_side):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto((HTML / CHAPTER).as_uri() + "?lang=both")
    page.wait_for_load_state("load")
    en, zh = page.evaluate("""() => {
        const en = document.querySelector('article section > div.lang-en');
        const zh = en.nextElementSibling;
        return [en.getBoundingClientRect().toJSON(), zh.getBoundingClientRect().toJSON()];
    }""")
    if side_by_side:
        assert abs(en["top"] - zh["top"]) < 2 and zh["left"] >= en["right"]
    else:
        assert zh["top"] >= en["bottom"] - 1
    context.close()


def test_slider_labels_are_separated_in_both_languages_mode(browser):
    v = Visit(browser, CHAPTER)
    v.page.click(".lang-switch button[value=both]")
    label = v.page.locator(".ac-slider-figure label").first.inner_text()
    assert re.fullmatch(r".+\S · \S.+", label), label  # "bandwidth σ · 带宽 σ", not "bandwidth σ带宽 σ"
    v.context.close()


def test_search_icon_does_not_cover_the_query(browser):
    """Icons are drawn by the theme's icon font (fontawesome.js is dropped): the search form's
    magnifier must still sit beside the query, not on top of it."""
    v = Visit(browser, "search.html")
    icon, text_left = v.page.evaluate("""() => {
        const form = document.querySelector('.bd-search-container form.bd-search');
        const input = form.querySelector('input');
        const left = input.getBoundingClientRect().left + parseFloat(getComputedStyle(input).paddingLeft);
        return [form.querySelector('.fa-magnifying-glass').getBoundingClientRect().toJSON(), left];
    }""")
    assert icon["width"] > 0 and icon["right"] <= text_left + 1
    v.context.close()


def _chapter_pages():
    return [p for p in PAGES if p.startswith("chapters/")]


@pytest.mark.parametrize("page_path", _chapter_pages())
def test_figures_are_sharp_on_high_dpi_screens(browser, page_path):
    """Every figure of a chapter (plots and slider frames) carries at least twice the pixels
    it is shown with on a 1366 px screen, so it stays sharp on a high-DPI screen or zoomed."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto((HTML / page_path).as_uri())
    sizes = page.evaluate("""async () => {
        const imgs = [...document.querySelectorAll('.cell_output img')];
        imgs.forEach(i => i.loading = 'eager');
        await Promise.all(imgs.map(i => i.decode().catch(() => null)));
        return imgs.map(i => [i.currentSrc.split('/').pop(), i.naturalWidth, i.getBoundingClientRect().width]);
    }""")
    assert sizes, "no figure found"
    blurry = [(src, nat, round(shown)) for src, nat, shown in sizes if nat < 1.9 * shown]
    assert not blurry, f"figures with fewer than 2 pixels per displayed pixel: {blurry}"
    context.close()


@pytest.mark.parametrize("page_path", _chapter_pages())
def test_a_cells_printed_lines_are_one_output(browser, page_path):
    """A table printed line by line is one output box, not one box per write."""
    v = Visit(browser, page_path)
    split = v.page.evaluate("""() => [...document.querySelectorAll('.cell_output')]
        .filter(o => o.querySelectorAll(':scope > .output.stream').length > 1).length""")
    assert split == 0, f"{split} cells show their printed text in several boxes"
    v.context.close()


def test_slider_values_and_image_descriptions_in_both_languages(browser):
    """Chapter 1's goal slider names its values (none / read / ...): in 中文 mode they are
    Chinese, and every slider frame's alt text describes it in both languages."""
    v = Visit(browser, "chapters/01_attention_cues.html", locale="zh-CN")
    figures = v.page.locator(".ac-slider-figure")
    words = 0
    for n in range(figures.count()):
        fig = figures.nth(n)
        fig.scroll_into_view_if_needed()
        alt = fig.locator("img").get_attribute("alt")
        assert re.search(r"[a-z]", alt) and re.search(r"[\u4e00-\u9fff]", alt), alt
        for readout in fig.locator("output").all():
            text = readout.inner_text()
            if re.search(r"[A-Za-z]{2,}", text) or re.search(r"[\u4e00-\u9fff]", text):
                words += 1
                assert re.fullmatch(r"[\u4e00-\u9fff]+", text), f"slider value {text!r} in 中文 mode"
    assert words >= 1, "chapter 1's goal slider shows no named value"
    v.context.close()


def test_package_names_link_to_the_api_reference():
    """Chapters name package functions as inline code; on the site each links to its entry in
    the API reference, generated from the docstrings (book/api.md)."""
    api = (HTML / "book" / "api.html").read_text(encoding="utf-8")
    for name in ("attention_core.attention.attend", "attention_core.multihead.MultiHeadAttention",
                 "attention_core.efficient.chunked_attention", "attention_core.decoding.beam_search"):
        assert f'id="{name}"' in api, f"{name} missing from the API reference"
    assert "n_q" in api and "d_head" in api  # the shape legend
    linked = 0
    for page_path in _chapter_pages():
        hrefs = [a["href"] for a in _soup(HTML / page_path).select("a.api-link")]
        linked += len(hrefs)
        for href in hrefs:
            assert href.split("#")[0].endswith("book/api.html"), f"{page_path}: {href}"
            target = href.split("#")[1]
            assert f'id="{target}"' in api, f"{page_path}: link to missing entry {target}"
    assert linked >= 40, f"only {linked} links from the chapters to the API reference"


@pytest.mark.parametrize("page_path", _chapter_pages())
def test_check_cells_are_folded_and_open_on_click(browser, page_path):
    """A cell that checks a claim is folded under the claim in words, in the reader's language;
    a click opens it and shows the check's code."""
    v = Visit(browser, page_path, locale="zh-CN")
    folds = v.page.locator("details.hide.above-input")
    assert folds.count() >= 2, "the import cell and at least one check should be folded"
    for n in range(folds.count()):
        fold = folds.nth(n)
        assert fold.get_attribute("open") is None, f"fold {n} is open before a click"
        assert not fold.locator(".cell_input").first.is_visible()
        label = fold.locator("summary p.collapsed").inner_text()
        assert re.search(r"[\u4e00-\u9fff]", label), f"fold {n}'s label in 中文 mode: {label!r}"
    fold = folds.nth(folds.count() - 1)
    fold.scroll_into_view_if_needed()
    fold.locator("summary").click()
    assert fold.get_attribute("open") is not None
    assert fold.locator(".cell_input").first.is_visible()
    code = fold.locator(".cell_input").first.inner_text()
    assert code.strip(), "an opened fold shows no code"
    v.page.evaluate("document.querySelector('.lang-switch button[value=en]').click()")
    label = folds.first.locator("summary p.collapsed").inner_text()
    assert re.search(r"[A-Za-z]{3,}", label) and not re.search(r"[\u4e00-\u9fff]", label), \
        f"the first fold's label in English mode: {label!r}"
    v.context.close()


SOLUTIONS = [p for p in PAGES if p.startswith("solutions/")]


@pytest.mark.parametrize("page_path", SOLUTIONS)
@pytest.mark.parametrize("locale, title", [("en-US", r"^Solution \d+\.\d+$"), ("zh-CN", r"^解答 \d+\.\d+$")])
def test_each_exercise_has_a_folded_solution_that_opens(browser, page_path, locale, title):
    """A reader who wants to try first is not shown the answer: every solution is folded under
    a title in the reader's language, and a click opens it on its prose, code and output."""
    v = Visit(browser, page_path, locale=locale)
    exercises = v.page.locator("div.exercise.admonition")
    solutions = v.page.locator("div.solution.dropdown.admonition")
    assert solutions.count() == exercises.count() >= 3, (exercises.count(), solutions.count())
    for n in range(solutions.count()):
        solution = solutions.nth(n)
        label = solution.locator(":scope > .admonition-title").inner_text().strip()
        assert re.match(title, label), f"solution {n} is titled {label!r} in {locale}"
        assert exercises.nth(n).locator(":scope > section").is_visible(), f"exercise {n} is hidden"
        assert not solution.locator(":scope > section").is_visible(), f"solution {n} is open unasked"
    solution = solutions.nth(solutions.count() - 1)
    solution.scroll_into_view_if_needed()
    solution.locator(":scope > .admonition-title").click()
    v.page.wait_for_timeout(300)
    assert solution.locator(":scope > section").is_visible()
    assert solution.locator(".cell_input").first.is_visible()
    assert solution.locator(".cell_output").first.is_visible()
    assert not v.outside and not v.errors, (v.outside, v.errors)
    v.context.close()


def test_chapters_link_each_exercise_to_its_solution():
    """From every exercise of every chapter that has a solutions page, in each language, a link
    to the exercise restated there; the link's anchor is there."""
    linked, solved = 0, [p for p in CHAPTERS if (HTML / "solutions" / Path(p).name).exists()]
    assert solved, "no solutions page was built"
    for page_path in solved:
        html = (HTML / page_path).read_text(encoding="utf-8")
        hrefs = re.findall(r'href="(\.\./solutions/[^"#]+\.html)#(ex-\d\d-\d+)"', html)
        assert hrefs, f"{page_path} links to no solution"
        for target, anchor in hrefs:
            page = (HTML / page_path).parent / target
            assert f'id="{anchor}"' in page.read_text(encoding="utf-8"), f"{page_path} -> {target}#{anchor}"
        assert len(hrefs) == 2 * len(set(hrefs)), f"{page_path}: not one link per exercise per language"
        linked += len(set(hrefs))
    assert linked >= 5 * len(solved), f"only {linked} exercises link to a solution"


def test_chapter_3_playground_computes_on_the_page(browser):
    """The attention playground runs from the page itself: dragging the query changes what it
    shows, to PyTorch's numbers for the new position, and in 中文 mode it speaks Chinese."""
    from attention_core.book.playground import additive_score, playground_attention

    v = Visit(browser, "chapters/03_attention_scoring.html", locale="zh-CN")
    figure = v.page.locator(".ac-playground")
    assert figure.count() == 1
    figure.scroll_into_view_if_needed()
    pg = f"window.acPlaygrounds['{figure.get_attribute('id')}']"
    before = v.page.evaluate(f"() => {pg}.shown()")
    box = figure.locator("[data-point=q]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    v.page.mouse.move(x, y)
    v.page.mouse.down()
    v.page.mouse.move(x + 60, y - 30, steps=4)
    v.page.mouse.up()
    state, shown = v.page.evaluate(f"() => [{pg}.state(), {pg}.shown()]")
    assert shown["weights"] != before["weights"]
    _, weights, output = playground_attention(
        state["query"], state["keys"], state["values"], score=state["score"], beta=state["beta"],
        valid_len=state["valid"], additive=additive_score(0))
    assert max(abs(a - b) for a, b in zip(shown["weights"], weights.tolist())) < 1e-12
    assert abs(shown["output"] - output.item()) < 1e-12
    assert figure.locator("select option").first.text_content() == "点积"
    assert figure.locator("th .lang-zh").first.is_visible()
    assert not figure.locator("th .lang-en").first.is_visible()
    assert v.outside == [] and v.errors == []
    v.context.close()


@pytest.mark.parametrize("page_path", ["chapters/01_attention_cues.html",
                                       "chapters/03_attention_scoring.html",
                                       "chapters/04_seq2seq_attention.html"])
def test_one_separator_between_the_languages(browser, page_path):
    """In the both-languages mode a label reads "English source · 英文源句", never with two dots
    (the slider pages' separator was once added where the markup had its own)."""
    v = Visit(browser, page_path)
    v.page.click(".lang-switch button[value=both]")
    text = v.page.locator("article").inner_text()
    assert "· ·" not in text, text[max(0, text.index("· ·") - 60):text.index("· ·") + 60]
    assert " · " in text
    v.context.close()


@pytest.mark.parametrize("chapter, model", [("04_seq2seq_attention", "bahdanau"),
                                           ("08_transformer", "transformer")])
def test_the_translators_run_the_shipped_models_on_the_page(browser, chapter, model):
    """Chapters 4 and 8 load their shipped weights from the site's _static only when asked,
    then decode a typed sentence to PyTorch's tokens; in 中文 mode they speak Chinese."""
    from attention_core.book.translator import translate_sentence
    from attention_core.worlds.pretrained import chapter4_corpus, load_model

    v = Visit(browser, f"chapters/{chapter}.html", locale="zh-CN")
    requested = []
    v.page.on("request", lambda r: requested.append(r.url))
    figure = v.page.locator(".ac-translator")
    assert figure.count() == 1
    assert (HTML / "_static" / "ac-models" / f"{model}.js").exists()
    figure.scroll_into_view_if_needed()
    assert not any("ac-models" in url for url in requested)  # not before the reader asks
    figure.locator('[data-control="load"]').click()
    box = figure.locator('[data-control="source"]')
    v.page.wait_for_function("() => document.querySelector('.ac-translator-output').textContent")
    box.fill("august 22nd , 2012 ; three hundred and three thousand and three")
    data, _, _, _ = chapter4_corpus()
    shipped, _, _ = load_model(model, data)
    expected = translate_sentence(shipped, data, box.input_value())
    assert figure.locator(".ac-translator-output").inner_text() == "".join(expected.output)
    drawn = figure.locator(".ac-translator-heatmap tr" if model == "bahdanau"
                           else ".ac-translator-heatmap svg line")
    assert drawn.count() >= len(expected.weights)
    assert figure.locator(".ac-translator-status .lang-zh").is_visible()
    assert not figure.locator(".ac-translator-status .lang-en").is_visible()
    assert sum(f"ac-models/{model}.js" in url for url in requested) == 1
    assert v.outside == [] and v.errors == []
    v.context.close()
