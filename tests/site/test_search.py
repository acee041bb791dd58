"""The site's search, served over HTTP as a host serves it: every page that holds a term, in
English and in Chinese typed without spaces, with snippets free of raw TeX."""
import re

import pytest
from browser import needs_chromium
from bs4 import BeautifulSoup
from built_site import HTML, PROSE_PAGES, needs_site

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    needs_site,
]


def _article_text(page_path):
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
    snippets = page.eval_on_selector_all("#search-results p.context",
                                         "els => els.map(e => e.innerText)")
    tex = [s for s in snippets if re.search(r"\\[a-zA-Z]+|\\\(|\\\[|\$\$", s)]
    assert not tex, f"raw TeX in search snippets: {tex[:2]}"
    context.close()


def test_search_page_text_follows_the_language(browser, served):
    context, page, hits, _ = _search(browser, served, "softmax", lang="zh")
    assert page.inner_text("#search-results h2") == "搜索结果"
    assert "找到" in page.inner_text("#search-results p.search-summary")
    assert page.get_attribute("form.bd-search input", "placeholder") == "在本书中搜索…"
    context.close()
