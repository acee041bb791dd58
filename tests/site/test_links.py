"""Links and folds: one citation label in the text and the bibliography with links back, the
package's names linked to the API reference, check cells and solutions folded until clicked,
and every exercise linked to its solution."""
import functools
import re
from pathlib import Path

import pytest
from browser import needs_chromium
from built_site import CHAPTERS, HTML, SOLUTIONS, Visit, needs_site, soup

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    needs_site,
]


def test_citations_use_one_author_year_label_and_link_back():
    references = HTML / "book" / "references.html"
    entries = [{"id": d["id"], "label": d.select_one(".label").get_text().strip("[]"),
                "back": [a["href"] for a in d.select("a.citation-backlink")]}
               for d in soup(references).select("div.citation")]
    assert len(entries) >= 10
    for entry in entries:
        assert re.fullmatch(r"[^\d\[\]]+, \d{4}[a-z]?", entry["label"]), entry  # not [BCB14]
        assert entry["back"], f"{entry['label']} links back to no page"
    # every link back lands on a citation in the text that shows the same label
    pages = functools.lru_cache(maxsize=None)(soup)

    def plain(text):  # [A, 2014] or A [2014]
        return " ".join(re.sub(r"[\[\],]", " ", text).split())

    for entry in entries:
        page, anchor = entry["back"][0].split("#")
        cited = pages((references.parent / page).resolve()).find(id=anchor)
        assert cited is not None, entry
        assert plain(entry["label"]) in plain(cited.get_text()), (entry, cited)
        assert entry["id"] in [a["href"].split("#")[-1] for a in cited.find_all("a", href=True)]


def test_package_names_link_to_the_api_reference():
    """Chapters name package functions as inline code; on the site each links to its entry in
    the API reference, generated from the docstrings (book/api.md)."""
    api = (HTML / "book" / "api.html").read_text(encoding="utf-8")
    for name in ("attention_core.attention.attend", "attention_core.multihead.MultiHeadAttention",
                 "attention_core.efficient.chunked_attention",
                 "attention_core.decoding.beam_search"):
        assert f'id="{name}"' in api, f"{name} missing from the API reference"
    assert "n_q" in api and "d_head" in api  # the shape legend
    linked = 0
    for page_path in CHAPTERS:
        hrefs = [a["href"] for a in soup(HTML / page_path).select("a.api-link")]
        linked += len(hrefs)
        for href in hrefs:
            assert href.split("#")[0].endswith("book/api.html"), f"{page_path}: {href}"
            target = href.split("#")[1]
            assert f'id="{target}"' in api, f"{page_path}: link to missing entry {target}"
    assert linked >= 40, f"only {linked} links from the chapters to the API reference"


@pytest.mark.parametrize("page_path", CHAPTERS)
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


@pytest.mark.parametrize("page_path", SOLUTIONS)
@pytest.mark.parametrize("locale, title", [("en-US", r"^Solution \d+\.\d+$"),
                                           ("zh-CN", r"^解答 \d+\.\d+$")])
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
        assert not solution.locator(":scope > section").is_visible(), \
            f"solution {n} is open unasked"
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
            assert f'id="{anchor}"' in page.read_text(encoding="utf-8"), \
                f"{page_path} -> {target}#{anchor}"
        assert len(hrefs) == 2 * len(set(hrefs)), \
            f"{page_path}: not one link per exercise per language"
        linked += len(set(hrefs))
    assert linked >= 5 * len(solved), f"only {linked} exercises link to a solution"
