"""Diagrams drawn by code: what they connect, and their words in both languages."""
import re
import warnings

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from attention_core.book.diagrams import (  # noqa: E402
    draw_connectivity_diagram,
    draw_seq2seq_diagram,
    draw_transformer_diagram,
)
from attention_core.book.plot import use_house_style  # noqa: E402

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
        mixed = [t.get_text() for t in ax.texts if "$" in t.get_text() and CJK.search(t.get_text())]
        assert not mixed
    finally:
        plt.close(fig)


def test_transformer_diagram_names_every_part_and_every_shape():
    fig, ax = plt.subplots(figsize=(8, 7.5))
    draw_transformer_diagram(ax, B="2", n_src="7", n_tgt="5", d="64", vocab="100")
    text = " ".join(t.get_text() for t in ax.texts)
    for part in ("source tokens", "源词元", "target so far", "embedding ×√d + positions",
                 "encoder block × L", "编码器块 × L", "decoder block × L", "解码器块 × L",
                 "multi-head self-attention", "causal (masked) self-attention",
                 "因果（掩码）自注意力",
                 "cross-attention", "交叉注意力", "K, V: encoder", "position-wise FFN",
                 "add & norm · 相加 + 层规范化", "linear → vocabulary", "residual path", "残差连接",
                 "(2, 7)", "(2, 5)", "(2, 7, 64)", "(2, 5, 64)", "(2, 5, 100)",
                 "last encoder block's output", "every decoder block", "编码器最后一块的输出"):
        assert part in text, part
    assert "加 & 规范化" not in text
    boxes = {gid: [p for p in ax.patches if isinstance(p, FancyBboxPatch) and p.get_gid() == gid]
             for gid in ("sublayer", "add-norm")}
    assert len(boxes["sublayer"]) == len(boxes["add-norm"]) == 5  # 2 encoder + 3 decoder
    residuals = [p.get_path().vertices for p in ax.patches
                 if isinstance(p, FancyArrowPatch) and p.get_gid() == "residual"]
    assert len(residuals) == 5
    # every sublayer has exactly one residual arrow that bypasses it: from below the box, out
    # beside it, to the add & norm just above it
    for sub in boxes["sublayer"]:
        x0, y0 = sub.get_x(), sub.get_y()
        x1, y1 = x0 + sub.get_width(), y0 + sub.get_height()
        norm = min((n for n in boxes["add-norm"] if n.get_y() > y1), key=lambda n: n.get_y())
        bypass = [v for v in residuals
                  if v[:, 1].min() < y0 < y1 < norm.get_y() < v[:, 1].max()
                  < norm.get_y() + norm.get_height()
                  and (v[:, 0].min() < x0 or v[:, 0].max() > x1) and x0 < v[0, 0] < x1]
        assert len(bypass) == 1, (sub.get_y(), len(bypass))
    # the encoder's output reaches the cross-attention box
    memory, = [p.get_path().vertices for p in ax.patches if p.get_gid() == "memory"]
    decoder = sorted(boxes["sublayer"], key=lambda b: (b.get_x(), b.get_y()))[2:]
    cross = decoder[1]  # the decoder's second sublayer from below
    tip = memory[memory[:, 0].argmax()]
    assert abs(tip[0] - cross.get_x()) < 0.05
    assert cross.get_y() < tip[1] < cross.get_y() + cross.get_height()
    plt.close(fig)
