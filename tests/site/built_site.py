"""The built site these tests read: where it is, its pages, and one page in a browser that
refuses every outside request."""
import os
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html")).resolve()  # another build

needs_site = pytest.mark.skipif(not (HTML / "index.html").exists(),
                                reason="site not built: make book")

CHAPTER = "chapters/02_attention_pooling.html"
PAGES = sorted(str(p.relative_to(HTML)) for p in HTML.glob("**/*.html")
               if "_static" not in p.parts and "_sources" not in p.parts)
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
SOLUTIONS = [p for p in PAGES if p.startswith("solutions/")]
PROSE_PAGES = [p for p in PAGES if p.startswith(("chapters/", "book/"))]
CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"


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


def soup(path):
    """A built page's HTML, parsed (the links and labels checked from the files are written at
    build time, so reading the files checks what a browser shows, without loading each page)."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
