"""The language switch: English, 中文 or both, remembered between pages, and in each mode the
page shows that language only, the theme's own words included; in both, one separator between
a label's halves and the two blocks side by side on a wide screen."""
import re

import pytest
from browser import needs_chromium
from built_site import CHAPTER, CJK, HTML, PROSE_PAGES, Visit, needs_site

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    needs_site,
]


def test_language_switch_hides_the_other_language_and_is_remembered(browser):
    v = Visit(browser, CHAPTER, locale="en-US")
    assert v.page.get_attribute("html", "data-book-lang") == "en"  # from the browser language
    assert v.visible(".lang-en") and not v.visible(".lang-zh")
    v.page.click(".lang-switch button[value=zh]")
    # the choice is stored by the click's handler: wait for it before leaving (under load the
    # next page could start before the handler ran)
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
    for selector, (_, zh) in THEME_STRINGS.items():
        assert v.page.locator(selector).first.text_content().strip() == zh, selector
    button = ".theme-switch-button"
    assert v.page.get_attribute(button, "aria-label") == "颜色模式"
    v.page.click(".lang-switch button[value=en]")  # and back: the theme's own English
    for selector, (en, _) in THEME_STRINGS.items():
        assert v.page.locator(selector).first.text_content().strip() == en, selector
    assert v.page.get_attribute(button, "aria-label") == "Color mode"
    v.context.close()


def test_notation_table_shows_the_column_of_the_chosen_language(browser):
    v = Visit(browser, "book/notation.html", locale="en-US")

    def texts():  # the visible column headings
        return [h.inner_text().strip() for h in v.page.locator("article table thead th").all()
                if h.is_visible()]

    assert "meaning" in texts() and "含义" not in texts()
    v.page.click(".lang-switch button[value=zh]")
    assert "含义" in texts() and "meaning" not in texts()
    v.page.click(".lang-switch button[value=both]")
    assert "含义" in texts() and "meaning" in texts()
    v.context.close()


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
    # "bandwidth σ · 带宽 σ", not "bandwidth σ带宽 σ"
    assert re.fullmatch(r".+\S · \S.+", label), label
    v.context.close()


@pytest.mark.parametrize("page_path", ["chapters/01_attention_cues.html",
                                       "chapters/03_attention_scoring.html",
                                       "chapters/04_seq2seq_attention.html"])
def test_one_separator_between_the_languages(browser, page_path):
    """In the both-languages mode a label reads "English source · 英文源句", with one separator
    between its halves, never two."""
    v = Visit(browser, page_path)
    v.page.click(".lang-switch button[value=both]")
    text = v.page.locator("article").inner_text()
    assert "· ·" not in text, text[max(0, text.index("· ·") - 60):text.index("· ·") + 60]
    assert " · " in text
    v.context.close()


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


# what repeats the page's headings, besides the headings themselves
TITLED = ["article.bd-article h1", "article.bd-article h2", "article.bd-article h3",
          "nav.bd-docs-nav", ".bd-toc-nav", ".prev-next-area", ".navbar-brand .logo__title",
          "#jb-print-docs-body h1"]


@pytest.mark.parametrize("mode, other", [("en", "zh"), ("zh", "en")])
def test_one_language_shows_headings_sidebar_contents_and_title_in_that_language(
        browser, mode, other):
    v = Visit(browser, CHAPTER)
    v.page.click(f".lang-switch button[value={mode}]")
    v.goto("chapters/03_attention_scoring.html")  # the next page, before any click
    shown = v.page.evaluate("""([selectors, other]) => selectors.map(sel =>
        [...document.querySelectorAll(sel)].map(el => [
          sel,
          [...el.querySelectorAll('.lang-' + other)].filter(s => s.getClientRects().length)
            .map(s => s.textContent),
          [...el.querySelectorAll('.lang-' + other)].length])).flat()""", [TITLED, other])
    assert sum(count for _, _, count in shown) > 40  # the spans are there, for the other mode
    leaks = [(sel, texts) for sel, texts, _ in shown if texts]
    assert not leaks, f"{other} text shown in {mode} mode: {leaks[:5]}"
    title = v.page.title()
    if mode == "en":
        assert title == "3. Attention Scoring Functions — Attention Mechanisms"
        visible = v.page.evaluate("(s) => s.map(q => [...document.querySelectorAll(q)]"
                                  ".map(e => e.innerText).join(' ')).join(' ')", TITLED[:7])
        assert not re.search(f"[{CJK}]", visible), "Chinese in English mode"
        v.goto("book/intro.html")  # the sidebar's link to the book's home, there the current one
        home = v.page.inner_text(".bd-sidenav__home-link")
        assert "Attention" in home and not re.search(f"[{CJK}]", home), home
        v.goto("chapters/03_attention_scoring.html")
    else:
        assert title == "3. 注意力评分函数 — 注意力机制"
    v.page.click(".lang-switch button[value=both]")  # both: both halves, the title as written
    assert v.page.title() == ("3. Attention Scoring Functions · 注意力评分函数 — "
                              "Attention Mechanisms · 注意力机制")
    assert v.page.locator("article.bd-article h1 .lang-zh").first.is_visible()
    assert v.page.locator("article.bd-article h1 .lang-en").first.is_visible()
    v.context.close()
