"""No stray space where a line breaks inside Chinese prose (book/_ext/cjk_spacing.py), while
the spaces around Latin words and math stay."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from cjk_spacing import tighten  # noqa: E402


def test_spaces_around_latin_words_and_math_stay():
    assert tighten("输入。 本书") == "输入。本书"
    assert tighten("斯坦福、\n微软") == "斯坦福、微软"
    assert tighten("用 softmax\n归一化") == "用 softmax\n归一化"
    assert tighten("第 1 章 注意力提示") == "第 1 章注意力提示"
    assert tighten("第 $i$ 个 token 的") == "第 $i$ 个 token 的"


def test_curly_quotes_count_as_chinese_punctuation_on_their_inner_side():
    assert tighten("译为 “2021 年 3 月 14 日”") == "译为“2021 年 3 月 14 日”"
    assert tighten("在英文里是\n“four hundred” 在中文里") == "在英文里是“four hundred”在中文里"
    assert tighten("例如 “the 14th of march , 2021” 或 “march”") \
        == "例如“the 14th of march , 2021”或“march”"
    # English keeps its spaces around quotes, and so do Latin words beside them in Chinese
    assert tighten("the word “key” is short") == "the word “key” is short"
    assert tighten("“a” “b”") == "“a” “b”"
    assert tighten("用 “softmax” 归一化") == "用“softmax”归一化"


def test_a_closing_mark_after_math_or_code_is_glued_to_it():
    from cjk_spacing import glue_closing_marks
    from docutils import nodes

    paragraph = nodes.paragraph("", "", nodes.Text("设 "), nodes.math("", "x"), nodes.Text("，则"),
                                nodes.literal("", "f(x)"), nodes.Text("。"),
                                nodes.math("", "y"), nodes.Text(" 与 z"))
    document = nodes.document(None, None)
    document += paragraph
    glue_closing_marks(None, document, "page")
    glued = [g for g in paragraph.children if isinstance(g, nodes.inline)]
    assert [g.astext() for g in glued] == ["x，", "f(x)。"]
    assert all(g["classes"] == ["cjk-glue"] for g in glued)
    assert paragraph.astext() == "设 x，则f(x)。y 与 z"  # the text itself unchanged
    assert isinstance(paragraph.children[-2], nodes.math)  # no mark after y: left alone
