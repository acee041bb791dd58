"""Fonts the PDFs embed as fonts, not as drawings of glyphs.

Chromium's PDF writer embeds a font with TrueType outlines as a font (subset, named, its text
searchable), but writes each glyph of a font with CFF (PostScript) outlines as a Type 3
procedure: an unhinted drawing with no font name, which readers render and extract worse. The
book's Chinese font (Noto Sans CJK, from mplfonts) and MathJax's TeX fonts are CFF. Before
printing, ``prepare`` converts what the documents use to TrueType outlines (fontTools' cu2qu:
each cubic curve becomes quadratic ones within 1/1000 em) and the documents load those.
"""
from __future__ import annotations

import re
from pathlib import Path

from fontTools import subset
from fontTools.pens.cu2quPen import Cu2QuPen
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont, newTable

from .plot import cjk_font_path

CJK_CHARS = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
MAX_ERROR = 1.0  # font units: 1/1000 em for a 1000-unit em (Noto CJK, MathJax)


def to_truetype(font: TTFont) -> None:
    """Replace a font's CFF outlines by TrueType ones, in place (no change if it has none)."""
    if "CFF " not in font:
        return
    glyph_set, order = font.getGlyphSet(), font.getGlyphOrder()
    glyf = newTable("glyf")
    glyf.glyphOrder, glyf.glyphs = order, {}
    for name in order:
        pen = TTGlyphPen(glyph_set)
        # cubic to quadratic; TrueType winds outer contours the other way round
        glyph_set[name].draw(Cu2QuPen(pen, MAX_ERROR, reverse_direction=True))
        glyf.glyphs[name] = pen.glyph()
    font["glyf"], font["loca"] = glyf, newTable("loca")
    for tag in ("CFF ", "VORG"):
        if tag in font:
            del font[tag]
    maxp = font["maxp"]
    maxp.tableVersion = 0x00010000
    for field in ("maxTwilightPoints", "maxStorage", "maxFunctionDefs", "maxInstructionDefs",
                  "maxStackElements", "maxSizeOfInstructions", "maxComponentElements"):
        setattr(maxp, field, 0)
    maxp.maxZones = 1
    font["head"].glyphDataFormat = 0
    font["post"].formatType = 3.0  # no glyph names: a CID font's names mean nothing here
    font.sfntVersion = "\x00\x01\x00\x00"
    font.recalcBBoxes = True
    for name in order:
        glyf.glyphs[name].recalcBounds(glyf)


def truetype_subset(source: Path, chars: set[str], target: Path) -> None:
    """The glyphs of ``chars`` (and the space) from ``source``, with TrueType outlines."""
    options = subset.Options()
    options.layout_features = ["*"]
    options.glyph_names = False
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes={ord(c) for c in chars} | {0x20})
    subsetter.subset(font)
    to_truetype(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    font.flavor = None
    font.save(str(target))


def prepare(html_dir: Path, out_dir: Path, documents: list[str]) -> None:
    """out_dir/fonts: the Chinese faces (sans, serif, mono) for the characters of ``documents``
    (their HTML), and every MathJax font of the built site, all with TrueType outlines."""
    chars = set()
    for text in documents:
        chars.update(CJK_CHARS.findall(text))
    fonts = out_dir / "fonts"
    regular = Path(cjk_font_path())
    for name, file in [("book-cjk.ttf", regular.name),
                       ("book-cjk-serif.ttf", "NotoSerifCJKsc-Regular.otf"),
                       ("book-cjk-mono.ttf", "NotoSansMonoCJKsc-Regular.otf")]:
        source = regular.with_name(file)  # mplfonts ships the three side by side
        truetype_subset(source if source.exists() else regular, chars, fonts / name)
    mathjax = html_dir / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    for woff in sorted(mathjax.glob("*.woff")):
        font = TTFont(str(woff))
        to_truetype(font)
        target = fonts / "mathjax" / woff.name
        target.parent.mkdir(parents=True, exist_ok=True)
        font.save(str(target))  # still WOFF (its flavor is kept), now TrueType inside
