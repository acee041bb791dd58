"""What a screen reader is told about a page's parts (axe-core's WCAG 2.1 and best-practice
rules, tests/site/test_accessibility.py), where the theme or Sphinx says it wrongly:

1. The primary sidebar (the book's title, the search button, the chapters) is a landmark,
   "Site navigation", as the button that opens it on a phone is named; the theme leaves the
   title and the search button outside every landmark.
2. The bibliography is a list of list items. Sphinx marks it ``role="list"`` but each entry
   ``role="doc-biblioentry"``, a role deprecated in DPUB-ARIA 1.1 and not a list item.

Both are rewritten in the built pages, after the theme has written them; lang-switch.js gives
the label in Chinese in 中文 mode.
"""
from __future__ import annotations

import re
from pathlib import Path

REWRITES = [
    ('<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar">',
     '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar" role="navigation" '
     'aria-label="Site navigation">'),
]
BIBLIOENTRY = re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry">')


def rewrite_landmarks(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = text
        for old, replacement in REWRITES:
            new = new.replace(old, replacement)
        new = BIBLIOENTRY.sub(r'\1 role="listitem">', new)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app):
    app.connect("build-finished", rewrite_landmarks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
