"""book.bilingual: the "English · 中文" label, read, written and rendered in one place."""
import pytest
from bs4 import BeautifulSoup

from attention_core.book.bilingual import (
    SEP,
    is_label,
    join,
    keep_language,
    label_html,
    pick,
    spans,
    split,
)


def test_join_and_split_are_inverse():
    assert join("goal", "目标") == "goal · 目标" and SEP == " · "
    assert split(join("goal", "目标")) == ("goal", "目标")
    assert split("English only") == ("English only", None)
    assert split("a · 甲 · 乙") == ("a", "甲 · 乙")  # at the first separator


def test_pick_keeps_one_language_and_the_chapter_number():
    assert pick("2. Attention Pooling · 注意力汇聚", "en") == "2. Attention Pooling"
    assert pick("2. Attention Pooling · 注意力汇聚", "zh") == "2. 注意力汇聚"
    assert pick("Glossary · 术语表", "zh") == "术语表"
    assert pick("English only", "zh") == "English only"


def test_a_label_is_latin_then_chinese_not_a_formula():
    assert is_label("scalar · 标量") and is_label("query q · 查询 q")
    assert not is_label("q · k") and not is_label("查询 · query") and not is_label("标量")


def test_spans_show_what_the_page_shows_in_each_mode():
    html = spans("bandwidth <σ>", "带宽 σ")
    assert html == ('<span class="lang-en" lang="en">bandwidth &lt;σ&gt;</span>'
                    '<span class="lang-sep" aria-hidden="true"> · </span>'
                    '<span class="lang-zh" lang="zh-Hans">带宽 σ</span>')

    def text(hidden):  # what the page shows when the spans of these classes are hidden
        return "".join(s.get_text() for s in BeautifulSoup(html, "html.parser").find_all("span")
                       if not set(s["class"]) & hidden)

    assert text(set()) == "bandwidth <σ> · 带宽 σ"                      # both
    assert text({"lang-zh", "lang-sep"}) == "bandwidth <σ>"             # English
    assert text({"lang-en", "lang-sep"}) == "带宽 σ"                    # 中文


def test_label_html_renders_a_label_or_escapes_plain_text():
    assert label_html("✓ Rows sum to one · ✓ 每行之和为一") == spans("✓ Rows sum to one",
                                                                 "✓ 每行之和为一")
    assert label_html("Hide the <code>") == "Hide the &lt;code&gt;"


@pytest.mark.parametrize("lang, text", [("en", "The attend Core"), ("zh", "attend 核心#")])
def test_keep_language_keeps_the_markup_of_the_chosen_side(lang, text):
    html = '<h2>The <code>attend</code> Core · <code>attend</code> 核心<a>#</a></h2>'
    h2 = BeautifulSoup(html, "html.parser").h2
    keep_language(h2, lang)
    assert h2.get_text() == text and h2.code is not None
    if lang == "en":
        assert str(h2) == "<h2>The <code>attend</code> Core</h2>"


def test_keep_language_keeps_the_chapter_number_in_chinese():
    h1 = BeautifulSoup('<h1><span>4. </span>Seq2seq · 序列到序列</h1>', "html.parser").h1
    keep_language(h1, "zh")
    assert h1.get_text() == "4. 序列到序列"
