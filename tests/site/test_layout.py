"""The pages from a phone to a wide screen: nothing clipped without a visible scrollbar, no
word broken, figures sharp on high-DPI screens, a cell's printed lines in one box."""
import pytest
from browser import CHROMIUM, FLAGS, needs_chromium
from built_site import CHAPTER, CHAPTERS, HTML, PAGES, PROSE_PAGES, Visit, needs_site

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    needs_site,
]


@pytest.fixture(scope="module")
def browser_with_scrollbars(playwright):
    # headless Chromium hides every scrollbar unless told not to
    b = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS,
                                   ignore_default_args=["--hide-scrollbars"])
    yield b
    b.close()


def _phone(browser, width):
    """A phone-like context: overlay scrollbars, which take no room and show only while
    scrolling (as on phones and macOS), so only a styled scrollbar is visible at rest."""
    return browser.new_context(viewport={"width": width, "height": 800}, is_mobile=True,
                               has_touch=True)


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


@pytest.mark.parametrize("width", [1366, 1024])
def test_sidebar_title_does_not_break_inside_a_word(browser, width):
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto((HTML / "book/intro.html").as_uri())
    page.click(".lang-switch button[value=both]")  # both halves: the longest title
    lines = page.evaluate("""() => {
        const title = document.querySelector('.navbar-brand .logo__title');
        const walker = document.createTreeWalker(title, NodeFilter.SHOW_TEXT);
        const out = [];
        for (let node; (node = walker.nextNode());) {
          const text = node.nodeValue;
          for (const w of text.trim().split(/\\s+|·/).filter(w => w)) {
            const r = document.createRange(), at = text.indexOf(w);
            r.setStart(node, at); r.setEnd(node, at + w.length);
            out.push([w, new Set([...r.getClientRects()].map(x => Math.round(x.top))).size]);
          }
        }
        return out;
    }""")
    assert len(lines) >= 3
    broken = [w for w, n in lines if n != 1]
    assert not broken, f"title words broken over lines: {broken}"
    context.close()


# every page a reader sees (index.html only redirects to the introduction)
SHOWN = [p for p in PAGES if p != "index.html"]


@pytest.mark.parametrize("lang", ["en", "zh", "both"])
def test_no_page_scrolls_sideways_on_a_phone(browser, lang):
    context = _phone(browser, 390)
    page = context.new_page()
    page.goto((HTML / SHOWN[0]).as_uri())
    page.evaluate(f"localStorage.setItem('attention-book-lang', '{lang}')")  # lang-switch.js
    wide = {}
    for page_path in SHOWN:
        page.goto((HTML / page_path).as_uri())
        assert page.evaluate("document.documentElement.dataset.bookLang") == lang
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            wide[page_path] = width
    context.close()
    assert not wide, f"pages wider than a 390 px phone: {wide}"


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
        return imgs.map(i => [i.currentSrc.split('/').pop(), i.naturalWidth,
                              i.getBoundingClientRect().width]);
    }""")
    assert sizes, "no figure found"
    blurry = [(src, nat, round(shown)) for src, nat, shown in sizes if nat < 1.9 * shown]
    assert not blurry, f"figures with fewer than 2 pixels per displayed pixel: {blurry}"
    context.close()


@pytest.mark.parametrize("page_path", CHAPTERS)
def test_a_cells_printed_lines_are_one_output(browser, page_path):
    """A table printed line by line is one output box, not one box per write."""
    v = Visit(browser, page_path)
    split = v.page.evaluate("""() => [...document.querySelectorAll('.cell_output')]
        .filter(o => o.querySelectorAll(':scope > .output.stream').length > 1).length""")
    assert split == 0, f"{split} cells show their printed text in several boxes"
    v.context.close()


def test_the_theme_follows_the_system_until_the_reader_chooses(browser):
    for scheme in ("dark", "light"):
        context = browser.new_context(color_scheme=scheme)
        page = context.new_page()
        page.goto((HTML / CHAPTER).as_uri())
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
        context.close()
    # a reader who chose light keeps it on a dark system, page after page
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    page.goto((HTML / CHAPTER).as_uri())
    page.evaluate("localStorage.setItem('mode', 'light')")
    page.goto((HTML / CHAPTERS[0]).as_uri())
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    context.close()


def test_every_page_has_the_books_own_favicon():
    from built_site import soup
    for page_path in SHOWN:
        icon = soup(HTML / page_path).find("link", rel="icon")
        assert icon is not None, page_path
        href = icon["href"]
        assert not href.startswith(("http:", "https:", "//")), (page_path, href)
        assert (HTML / page_path).parent.joinpath(href).resolve().is_file(), (page_path, href)


@pytest.mark.parametrize("width", [1280, 390])
def test_only_equations_that_scroll_are_tab_stops(browser, width):
    """No equation is a Tab stop (MathJax's menu is off), except one wider than its column,
    which scrolls inside its box: the keyboard must reach it to scroll it (wide-math.js)."""
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.goto((HTML / "chapters/03_attention_scoring.html").as_uri())
    page.wait_for_function("document.querySelectorAll('mjx-container').length > 50")
    page.evaluate("MathJax.startup.promise")
    page.wait_for_timeout(300)  # wide-math.js marks them after MathJax's promise
    stops, wide = page.evaluate("""() => {
        const all = [...document.querySelectorAll('mjx-container')];
        return [all.filter(m => m.tabIndex >= 0 || m.hasAttribute('tabindex')),
                all.filter(m => m.getAttribute('display') === 'true' &&
                                m.scrollWidth > m.clientWidth + 1)].map(l => l.length); }""")
    readable = page.evaluate("document.querySelectorAll('mjx-assistive-mml').length")
    page.close()
    assert stops == wide
    assert (wide >= 1) == (width == 390)  # ch3 has equations wider than a phone, none at 1280
    assert readable > 50  # each equation still carries MathML for a screen reader


def _luminance(rgb: str) -> float:
    r, g, b = (int(x) / 255 for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    return sum(w * (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
               for w, c in zip((0.2126, 0.7152, 0.0722), (r, g, b)))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_chosen_language_button_is_readable_in_both_themes(browser, scheme):
    context = browser.new_context(color_scheme=scheme)
    page = context.new_page()
    page.goto((HTML / CHAPTER).as_uri())
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    fg, bg = page.evaluate("""() => {
        const chosen = document.querySelector('.lang-switch button[aria-pressed=true]');
        const s = getComputedStyle(chosen);
        return [s.color, s.backgroundColor]; }""")
    context.close()
    light, dark = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    assert (light + 0.05) / (dark + 0.05) >= 4.5, (scheme, fg, bg)  # WCAG AA, normal text


def test_every_page_names_the_books_version():
    from built_site import soup

    import attention_core
    version = attention_core.__version__
    for page_path in SHOWN:
        footer = soup(HTML / page_path).select_one(".book-version")
        assert footer is not None, page_path
        assert footer.select_one(".lang-en").get_text() == f"Version {version}"
        assert footer.select_one(".lang-zh").get_text() == f"版本 {version}"


@pytest.mark.parametrize("width", [1366, 1024])
def test_a_chapters_number_shares_its_line_with_the_title_in_the_sidebar(browser, width):
    """In 中文 mode the sidebar's "4." stays beside 使用注意力机制的序列到序列学习, which is longer
    than the sidebar is wide, instead of standing alone above it."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto((HTML / "book/intro.html").as_uri())
    page.evaluate("localStorage.setItem('attention-book-lang', 'zh')")
    page.goto((HTML / "chapters/03_attention_scoring.html").as_uri())
    together = page.evaluate("""() => [...document.querySelectorAll(
        '.bd-sidebar-primary .toctree-l1 > a')].map(a => {
          const text = [...a.childNodes].find(n => n.nodeType === 3 && n.nodeValue.trim());
          const zh = a.querySelector('.lang-zh');
          if (!text || !zh) return null;
          const range = document.createRange();
          range.selectNodeContents(text);
          return [text.nodeValue.trim(), Math.round(range.getClientRects()[0].top) ===
                                         Math.round(zh.getClientRects()[0].top)];
        }).filter(x => x)""")
    context.close()
    assert len(together) >= 10
    assert all(same for _, same in together), together
