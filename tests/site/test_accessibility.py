"""axe-core (the copy axe-playwright-python ships) on every page of the site, in English, in
Chinese and in the dark theme: no violation of any impact, of WCAG 2.1 A and AA or of axe's
best practices (landmarks, empty table headers), after MathJax has typeset the page."""
import pytest
from axe_playwright_python.sync_playwright import Axe
from browser import needs_chromium
from built_site import HTML, PAGES, needs_site

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    needs_site,
]

RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
SHOWN = [p for p in PAGES if p != "index.html"]  # index.html only redirects


def _typeset(page):
    if page.locator("div.math, span.math").count():
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")


@pytest.mark.parametrize("lang, scheme", [("en", "light"), ("zh", "light"), ("en", "dark")])
def test_axe_finds_no_violation_on_any_page(browser, lang, scheme):
    axe = Axe()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto((HTML / SHOWN[0]).as_uri())
    page.evaluate(f"localStorage.setItem('attention-book-lang', '{lang}')")  # lang-switch.js
    found = {}
    for page_path in SHOWN:
        page.goto((HTML / page_path).as_uri())
        page.wait_for_load_state("load")
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
        _typeset(page)
        result = axe.run(page, options={"runOnly": {"type": "tag", "values": RULES},
                                        "resultTypes": ["violations"]})
        for v in result.response["violations"]:
            found.setdefault(page_path, []).append(
                f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['nodes'][0]['target']}")
    context.close()
    assert len(SHOWN) >= 25
    assert not found, f"axe violations in {lang}, {scheme}: {found}"
