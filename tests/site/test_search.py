"""The site's search, served over HTTP as a host serves it: every page that holds a term, in
English and in Chinese typed without spaces, a page titled by the query first, with snippets
of prose in the reader's language and formulas written as text, not raw TeX."""
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
    return context, page, hits, errors  # in the order shown


SEARCH_TERMS = ["位置编码", "编码", "束搜索", "掩蔽", "softmax", "beam search", "注意力"]


@pytest.mark.parametrize("term", SEARCH_TERMS)
def test_search_finds_every_page_whose_text_has_the_term(browser, served, term):
    expected = {p for p in PROSE_PAGES if term.lower() in _article_text(p)}
    assert expected, f"no page contains {term!r}: the test would prove nothing"
    context, page, hits, errors = _search(browser, served, term)
    missing = sorted(expected - set(hits))
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


@pytest.mark.parametrize("query, first", [
    ("positional encoding", "chapters/06_positional_encoding.html"),
    ("multi-head attention", "chapters/07_multihead_attention.html"),
    ("位置编码", "chapters/06_positional_encoding.html"),
    ("transformer", "chapters/08_transformer.html")])
def test_the_page_titled_by_the_query_ranks_first(browser, served, query, first):
    context, page, hits, _ = _search(browser, served, query)
    assert hits[0] == first, f"{query!r}: {hits[:5]}"
    titles = page.eval_on_selector_all("#search-results ul.search li > a",
                                       "els => els.map(e => e.textContent)")
    assert " > " not in titles[0]  # the page once, not again as its own first section
    context.close()


def test_snippets_are_prose_with_formulas_as_text(browser, served):
    context, page, hits, _ = _search(browser, served, "scaled dot product", lang="en")
    page.wait_for_function("document.querySelectorAll('#search-results p.context').length >= 3",
                           timeout=10_000)
    shown = page.eval_on_selector_all(
        "#search-results ul.search li:has(p.context)",
        "els => els.map(e => [e.querySelector('a').href, e.querySelector('p.context').innerText])")
    snippets = [text for _, text in shown]
    joined = " ".join(snippets)
    # English mode: a chapter's snippet is its English prose (a sentence may quote a word of
    # Chinese; the glossary's table holds both languages and is not a chapter)
    chapters = " ".join(text for href, text in shown if "/chapters/" in href)
    assert chapters and not re.search(r"[\u4e00-\u9fff]{6,}", chapters), snippets
    assert "Contents" not in joined and "import " not in joined and "def " not in joined
    assert re.search("[√ᵀ]", joined), snippets[:3]  # qᵀk/√d, written out
    context.close()
