"""Keep the site self-contained: everything a page needs is served from the site itself.

1. Drop sphinx-thebe's scripts. Jupyter Book 1.x always loads sphinx-thebe, which declares a
   CDN URL for thebe (live code on a remote kernel) in an inline script, injected twice per
   page (a redeclared `const`, hence a console error). This book does not offer thebe:
   readers run the notebooks in Jupyter, and the site's interactive figures need no kernel.
2. Ship a Chinese font. A reader whose system has no CJK font (many Linux installs) would see
   empty boxes. After the build we subset Noto Sans CJK SC (installed by the mplfonts
   package, SIL Open Font License) to exactly the characters the pages use and serve it as
   `_static/fonts/book-cjk.woff`; book.css lists it after the reader's own CJK fonts.
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


def subset_cjk_font(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from fontTools import subset

    from attention_core.book.plot import cjk_font_path

    out = Path(app.outdir)
    chars = set()
    # the pages, and the interface strings that lang-switch.js writes in 中文 mode
    for page in [*out.rglob("*.html"), out / "_static" / "lang-switch.js"]:
        if page.exists():
            chars.update(CJK_CHARS.findall(page.read_text(encoding="utf-8")))
    options = subset.Options()
    options.flavor = "woff"  # zlib-compressed; needs no extra package
    options.layout_features = ["*"]
    font = subset.load_font(str(cjk_font_path()), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes={ord(c) for c in chars} | {0x20})
    subsetter.subset(font)
    target = out / "_static" / "fonts" / "book-cjk.woff"
    target.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(target), options)


def setup(app):
    app.connect("html-page-context", drop_thebe, priority=900)
    app.connect("build-finished", subset_cjk_font)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
