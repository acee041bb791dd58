"""Light chapter pages: the frames of the kernel-free sliders become image files.

A slider figure (attention_core.book.widgets) carries every precomputed frame as base64 in
the page: 0.7-1.5 MB of HTML per chapter, all downloaded before the reader sees a word.
While each page is written we move each frame into ``_images/`` (named by its content hash,
so equal frames are stored once), point the figure's ``<img>`` and its frame list at the
files, and let the browser fetch the first frame lazily and the others only when the slider
moves to them. The notebooks keep their self-contained output (it must work in any viewer);
only the site changes.

Highlighted code is mostly markup: Pygments wraps every name, bracket and space in its own
``<span>``, half of a chapter's HTML once the chapters display their mechanisms. The theme colours
names (``n``), punctuation (``p``) and whitespace (``w``) exactly as the code block's own text, in
its light and its dark style, so those spans draw nothing: after the build we drop them, and
check first, in the built ``pygments.css``, that they still draw nothing (a theme that colours
them makes the build warn and keeps them).

The theme also loads Font Awesome twice: as a web font through its CSS (156 KB, which draws
every ``<i class="fa-...">`` icon) and as ``fontawesome.js`` (1.49 MB), a script that
replaces the same icons with inline SVG. After the build we drop the script from every page;
the icons stay, drawn by the font. And it loads the search index (``searchindex.js``, about
400 KB) on every page, for a search-as-you-type this book leaves off: the search box sends
the reader to the search page, which loads the index itself. We drop it from the other pages.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

FIGURE_DATA = re.compile(
    r'(<script type="application/json" id="(acfig-[0-9a-f]+)-data">)(.*?)(</script>)', re.S)
DATA_IMG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
# slider.js, as inlined in the notebook output, builds a data: URI from each frame
INLINE_SRC = '"data:image/png;base64," + data.frames[k]'


def _write_frame(outdir: Path, b64: str) -> tuple[str, bytes]:
    png = base64.b64decode(b64)
    name = "acframe-" + hashlib.sha1(png).hexdigest()[:16] + ".png"
    target = outdir / "_images" / name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(png)
    return name, png


def externalise_frames(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if app.builder.format != "html" or not body or "ac-slider-figure" not in body:
        return
    if FIGURE_DATA.search(body) and INLINE_SRC not in body:
        # slider.js changed how it shows a frame: leave the page whole, and say so (-W fails)
        from sphinx.util import logging
        logging.getLogger(__name__).warning(
            "light_pages: slider.js no longer builds frames as %r; frames left inline in %s",
            INLINE_SRC, pagename)
        return
    outdir = Path(app.outdir)
    prefix = "../" * pagename.count("/") + "_images/"

    def frames(match):
        data = json.loads(match.group(3))
        data["frames"] = [prefix + _write_frame(outdir, f)[0] for f in data["frames"]]
        return match.group(1) + json.dumps(data) + match.group(4)

    def image(match):  # widgets.py already gave the <img> its display width and height
        name, _ = _write_frame(outdir, match.group(1))
        return f'src="{prefix}{name}" loading="lazy" decoding="async"'

    body = FIGURE_DATA.sub(frames, body)
    body = DATA_IMG.sub(image, body)
    body = body.replace(INLINE_SRC, "data.frames[k]")
    context["body"] = body


def lazy_images(app, pagename, templatename, context, doctree):
    """Figures below the first screen load when the reader scrolls to them."""
    body = context.get("body")
    if app.builder.format == "html" and body and "<img " in body:
        context["body"] = re.sub(r"<img (?![^>]*\bloading=)", '<img loading="lazy" ', body)


FONTAWESOME_JS = re.compile(
    r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\s*')


SEARCH_INDEX = re.compile(r'<script src="(?:\.\./)*searchindex\.js"></script>\s*')


def drop_unused_scripts(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lighter = FONTAWESOME_JS.sub("", text)
        if page.relative_to(app.outdir) != Path("search.html"):
            lighter = SEARCH_INDEX.sub("", lighter)
        if lighter != text:
            page.write_text(lighter, encoding="utf-8")


PLAIN_TOKENS = ("n", "p", "w")  # Pygments' Name, Punctuation, Text.Whitespace
PLAIN_SPAN = re.compile(r'<span class="(?:n|p|w)">([^<]*)</span>')
CODE_BLOCK = re.compile(r'<div class="highlight"><pre>.*?</pre></div>', re.S)


def _unstyled_tokens(css: str) -> bool:
    """True when, in every theme of the built pygments.css, each plain token's rule gives the
    code block's own text colour and nothing else."""
    themes = re.findall(r'html\[data-theme="(\w+)"\] \.highlight \{[^}]*\bcolor: (#\w+)', css)
    if not themes:
        return False
    for theme, text in themes:
        for token in PLAIN_TOKENS:
            rule = re.search(
                rf'html\[data-theme="{theme}"\] \.highlight \.{token} \{{([^}}]*)\}}', css)
            if rule and rule.group(1).strip() != f"color: {text}":
                return False
    return True


def drop_plain_code_spans(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    css = Path(app.outdir) / "_static" / "pygments.css"
    if not css.exists() or not _unstyled_tokens(css.read_text(encoding="utf-8")):
        from sphinx.util import logging
        logging.getLogger(__name__).warning(
            "light_pages: the theme styles names, punctuation or whitespace in code; "
            "their spans are kept")
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lighter = CODE_BLOCK.sub(lambda m: PLAIN_SPAN.sub(r"\1", m.group(0)), text)
        if lighter != text:
            page.write_text(lighter, encoding="utf-8")


def setup(app):
    app.connect("html-page-context", externalise_frames)
    app.connect("html-page-context", lazy_images)
    app.connect("build-finished", drop_unused_scripts)
    # after the theme's own build-finished handler, which writes the final pygments.css
    app.connect("build-finished", drop_plain_code_spans, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
