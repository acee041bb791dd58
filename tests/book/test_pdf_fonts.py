"""pdf_fonts: the PDFs' fonts converted from CFF to TrueType outlines keep every glyph's shape."""
from fontTools.pens.boundsPen import BoundsPen
from fontTools.pens.recordingPen import RecordingPen
from fontTools.ttLib import TTFont

from attention_core.book.pdf_fonts import truetype_subset
from attention_core.book.plot import cjk_font_path

TEXT = "注意力机制，位置编码"


def _bounds(font, char):
    glyphs = font.getGlyphSet()
    pen = BoundsPen(glyphs)
    glyphs[font.getBestCmap()[ord(char)]].draw(pen)
    return pen.bounds


def test_a_truetype_subset_keeps_the_glyphs_shapes(tmp_path):
    target = tmp_path / "cjk.ttf"
    truetype_subset(cjk_font_path(), set(TEXT), target)
    converted, original = TTFont(str(target)), TTFont(str(cjk_font_path()), lazy=True)
    assert "glyf" in converted and "CFF " not in converted and "CFF " in original
    assert set(converted.getBestCmap()) >= {ord(c) for c in TEXT}
    assert len(converted.getGlyphOrder()) < 40  # a subset, not the 65,000 glyphs
    for char in TEXT:
        new, old = _bounds(converted, char), _bounds(original, char)
        assert all(abs(a - b) <= 2 for a, b in zip(new, old, strict=True)), (char, new, old)
        recorded = RecordingPen()
        converted.getGlyphSet()[converted.getBestCmap()[ord(char)]].draw(recorded)
        assert any(op == "qCurveTo" for op, _ in recorded.value)  # quadratic: TrueType
