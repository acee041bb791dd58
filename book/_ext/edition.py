"""The book's one version, attention_core.__version__, on every page.

Sphinx's ``version`` and ``release`` take it, and the footer of every page names it in both
languages (the language switch shows the reader's half). The PDFs' title pages print the same
number (attention_core/book/pdf_document.py); CHANGELOG.md says what each version changed.
"""
from __future__ import annotations

from attention_core import __version__
from attention_core.book.bilingual import spans


def set_version(app, config):
    config.version = config.release = __version__
    footer = spans(f"Version {__version__}", f"版本 {__version__}")
    config.html_theme_options = {**(config.html_theme_options or {}),
                                 "extra_footer": f'<p class="book-version">{footer}</p>'}


def setup(app):
    app.connect("config-inited", set_version)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
