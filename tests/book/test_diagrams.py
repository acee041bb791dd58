"""Diagrams drawn by code: what they connect, and their words in both languages."""
import re
import warnings

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from attention_core.book.plot import draw_connectivity_diagram, use_house_style  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"[A-Za-z]{3,}")


@pytest.mark.parametrize("n, k", [(6, 3), (9, 5), (4, 7)])
def test_connectivity_diagram_draws_one_layer_of_each_kind(n, k):
    use_house_style()
    fig, ax = plt.subplots(figsize=(10, 3))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a missing CJK glyph is a warning
            draw_connectivity_diagram(ax, n=n, k=k)
            fig.canvas.draw()
        gids = [a.get_gid() for a in ax.get_children()]
        # a centred kernel reaches k // 2 positions to each side (zero padding at the ends)
        assert gids.count("conv") == sum(abs(i - j) <= k // 2 for i in range(n) for j in range(n))
        assert gids.count("recurrent") == n + (n - 1)  # x_t -> y_t, and y_(t-1) -> y_t
        assert gids.count("attention") == n * n         # every output reads every input
        words = [t.get_text() for t in ax.texts if WORD.search(t.get_text())]
        assert len(words) >= 8  # three titles, three notes, two row labels
        for text in words:
            assert CJK.search(text), f"figure text without its Chinese: {text!r}"
    finally:
        plt.close(fig)


def test_connectivity_diagram_rejects_what_it_cannot_draw():
    fig, ax = plt.subplots()
    try:
        with pytest.raises(ValueError, match="k must be an odd"):
            draw_connectivity_diagram(ax, n=6, k=4)
        with pytest.raises(ValueError, match="n must be between"):
            draw_connectivity_diagram(ax, n=40)
        with pytest.raises(ValueError, match="focus"):
            draw_connectivity_diagram(ax, n=6, focus=6)
        with pytest.raises(TypeError, match="n must be an int"):
            draw_connectivity_diagram(ax, n=6.0)
    finally:
        plt.close(fig)


def test_seq2seq_diagram_names_every_part_in_both_languages_and_every_shape():
    from attention_core.book.plot import draw_seq2seq_diagram

    use_house_style()
    fig, ax = plt.subplots(figsize=(9, 5.5))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a missing CJK glyph is a warning
            draw_seq2seq_diagram(ax, B="2", n_src="7", e="32", d="128", vocab="93", L="1")
            fig.canvas.draw()
        text = " ".join(t.get_text() for t in ax.texts)
        for part in ("GRU encoder", "GRU 编码器", "GRU decoder", "GRU 解码器", "additive attention",
                     "加性注意力", "keys = values", "键 = 值", "query", "查询", "context", "上下文",
                     "注意力权重", "初始状态", "embedding · 嵌入", "线性层 → 词表"):
            assert part in text, part
        for shape in ("(2, 7)", "(2, 7, 32)", "(2, 7, 128)", "(2, 1)", "(2, 1, 32)",
                      "(2, 1, 32 + 128)", "(2, 1, 128)", "(2, 1, 93)", "(1, 2, 128)"):
            assert shape in text, shape
        # no line mixes $math$ with Chinese: mathtext has no CJK fallback
        assert not [t.get_text() for t in ax.texts if "$" in t.get_text() and CJK.search(t.get_text())]
    finally:
        plt.close(fig)
