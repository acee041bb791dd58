"""The built site as a reader's browser sees it, with every outside request refused.

Needs the built site (`make book`) and a Chromium (Debian's `chromium` package); Playwright's
Python package drives it, and no browser is downloaded. Without Chromium these tests skip;
`.ci/run` installs it where it can.
"""
import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic"]

if os.environ.get("CI") == "true" and not CHROMIUM:  # in CI the browser checks must run
    raise RuntimeError("CI=true but no Chromium found: .ci/run installs Debian's chromium")

pytestmark = [
    pytest.mark.skipif(not CHROMIUM, reason="no Chromium: apt-get install chromium"),
    pytest.mark.skipif(not (HTML / "index.html").exists(), reason="site not built: make book"),
]

CHAPTER = "chapters/02_attention_pooling.html"
PAGES = sorted(str(p.relative_to(HTML)) for p in HTML.glob("**/*.html")
               if "_static" not in p.parts and "_sources" not in p.parts)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
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
            assert readout.inner_text() == data["labels"][0][end]
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
    for page in PAGES:
        chars |= set(re.findall(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]",
                                (HTML / page).read_text(encoding="utf-8")))
    assert len(chars) > 300  # the book has real Chinese text
    missing = sorted(c for c in chars if ord(c) not in cmap)
    assert not missing, f"characters without a glyph: {''.join(missing)}"
    assert font.stat().st_size < 1_000_000  # a subset, not the 16 MB font
