"""Keep the site self-contained: everything a page needs is served from the site itself.

1. Drop sphinx-thebe's scripts. Jupyter Book 1.x always loads sphinx-thebe, which declares a
   CDN URL for thebe (live code on a remote kernel) in an inline script, injected twice per
   page (a redeclared `const`, hence a console error). This book does not offer thebe:
   readers run the notebooks in Jupyter, and the site's interactive figures need no kernel.
2. Ship a Chinese font. A reader whose system has no CJK font (many Linux installs) would see
   empty boxes. After the build we subset Noto Sans CJK SC (installed by the mplfonts
   package, SIL Open Font License) to exactly the characters the pages use and serve it as
   `_static/fonts/book-cjk.woff2` (Brotli-compressed WOFF2); book.css lists it after the
   reader's own CJK fonts. The language switch shows 中文 on every page, in English mode too:
   its glyphs are a second, tiny subset, `book-cjk-switch.woff2`, whose face book.css declares
   last for exactly those code points, so that an English reader without a CJK font fetches
   those two glyphs and never the book's whole Chinese font.
"""
from __future__ import annotations

import re
from pathlib import Path

CJK_CHARS = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def _is_thebe(js) -> bool:
    return "thebe" in (js.filename or "") or "THEBE" in js.attributes.get("body", "")


def drop_thebe(app, pagename, templatename, context, doctree):
    if "script_files" in context:
        context["script_files"] = [js for js in context["script_files"] if not _is_thebe(js)]


# the switch's labels in lang-switch.js (LABELS and SHORT): shown whatever the language mode
SWITCH_LABELS = re.compile(r"var (?:LABELS|SHORT) = \{[^}]*\}")


def switch_glyphs(lang_switch_js: str) -> set[str]:
    """The Chinese characters the language switch shows in every mode."""
    return set(CJK_CHARS.findall(" ".join(SWITCH_LABELS.findall(lang_switch_js))))


def _save_subset(chars: set[str], target: Path) -> None:
    from fontTools import subset

    from attention_core.book.plot import cjk_font_path

    options = subset.Options()
    options.flavor = "woff2"  # Brotli: the brotli package, from requirements.txt
    options.layout_features = ["*"]
    font = subset.load_font(str(cjk_font_path()), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes={ord(c) for c in chars} | {0x20})
    subsetter.subset(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(target), options)


def subset_cjk_font(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    chars = set()
    # the pages, and the interface strings that lang-switch.js writes in 中文 mode
    lang_switch = out / "_static" / "lang-switch.js"
    for page in [*out.rglob("*.html"), lang_switch]:
        if page.exists():
            chars.update(CJK_CHARS.findall(page.read_text(encoding="utf-8")))
    fonts = out / "_static" / "fonts"
    _save_subset(chars, fonts / "book-cjk.woff2")
    _save_subset(switch_glyphs(lang_switch.read_text(encoding="utf-8")),
                 fonts / "book-cjk-switch.woff2")
    (fonts / "book-cjk.woff").unlink(missing_ok=True)  # an older build's WOFF


def setup(app):
    app.connect("html-page-context", drop_thebe, priority=900)
    app.connect("build-finished", subset_cjk_font)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
