"""Diagrams laid out by hand: boxes, arrows and the tensor shapes between them, in both languages.

Each draws on a matplotlib axes in its own coordinates, the words in English and Chinese (a
line with $math$ holds no Chinese: mathtext has no CJK fallback), and gives its parts gids so
that the tests can find what it connects. ``plot.use_house_style()`` sets the fonts first.
"""
from __future__ import annotations

from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path as MplPath

from ..contracts import contract, require


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@contract(where=[
    require(_whole, lambda n: f"n must be an int, got {n!r}", TypeError, names=["n"]),
    require(_whole, lambda k: f"k must be an int, got {k!r}", TypeError, names=["k"]),
    require(lambda n: 2 <= n <= 16,
            lambda n: f"n must be between 2 and 16 positions (a drawing, not a plot), got {n}"),
    require(lambda k: k >= 1 and k % 2 == 1,
            lambda k: f"k must be an odd kernel size >= 1 (centred kernels), got {k}"),
    require(lambda n, focus: focus is None or (_whole(focus) and 0 <= focus < n),
            lambda n, focus: f"focus must be an output position in 0..{n - 1}, got {focus!r}")])
def draw_connectivity_diagram(ax, n: int = 6, k: int = 3, focus: int | None = None):
    """How one layer connects positions: a convolution of kernel size k, a recurrent layer
    and self-attention, side by side, inputs x_1..x_n below and outputs y_1..y_n above.

    Every connection of the layer is a grey line; those that feed output ``focus`` (0-based;
    default n - 2, the last but one, so that the kernel and the future both show) are drawn
    in colour: one layer lets that output see k // 2 positions to each side, a chain of
    recurrent steps back to x_1 (and nothing later), or every input at once. Each connection
    carries a gid ("conv", "recurrent", "attention") for tests.
    """
    focus = n - 2 if focus is None else focus

    grey, blue = "0.72", "#2a6fb0"
    width, gap, radius = 1.0, 0.28, min(0.035, 0.3 / n)

    def xs(panel):
        left = panel * (width + gap)
        return [left + (i + 0.5) * width / n for i in range(n)]

    def line(x0, y0, x1, y1, gid, hot):
        ax.plot([x0, x1], [y0, y1], color=blue if hot else grey, linewidth=1.8 if hot else 0.8,
                zorder=2 if hot else 1, gid=gid, solid_capstyle="round")

    def nodes(panel, y, name, hot):
        for i, x in enumerate(xs(panel)):
            ax.add_patch(Circle((x, y), radius, facecolor="#dbe9f6" if i in hot else "white",
                                edgecolor="0.3", linewidth=0.8, zorder=3))
            ax.text(x, y + (1.6 if y > 0.5 else -1.6) * radius, f"${name}_{{{i + 1}}}$",
                    ha="center", va="bottom" if y > 0.5 else "top", fontsize=7)

    y_in, y_out = 0.12, 0.72
    # convolution: y_i reads x_j for |i - j| <= k // 2 (zero padding at the ends)
    half = k // 2
    for i, xo in enumerate(xs(0)):
        for j, xi in enumerate(xs(0)):
            if abs(i - j) <= half:
                line(xi, y_in, xo, y_out, "conv", i == focus)
    nodes(0, y_in, "x", {j for j in range(n) if abs(focus - j) <= half})
    nodes(0, y_out, "y", {focus})
    # recurrent: y_t = h_t reads x_t and h_{t-1}; y_focus depends on x_1 .. x_focus by a chain
    for t, x in enumerate(xs(1)):
        line(x, y_in, x, y_out, "recurrent", t <= focus)
        if t > 0:
            ax.annotate("", xy=(x - radius, y_out), xytext=(xs(1)[t - 1] + radius, y_out),
                        arrowprops=dict(arrowstyle="-|>", color=blue if t <= focus else grey,
                                        linewidth=1.8 if t <= focus else 0.8, shrinkA=0, shrinkB=0),
                        zorder=2, gid="recurrent")
    nodes(1, y_in, "x", set(range(focus + 1)))
    nodes(1, y_out, "y", set(range(focus + 1)))
    # self-attention: every output reads every input
    for i, xo in enumerate(xs(2)):
        for xi in xs(2):
            line(xi, y_in, xo, y_out, "attention", i == focus)
    nodes(2, y_in, "x", set(range(n)))
    nodes(2, y_out, "y", {focus})

    titles = [f"convolution, kernel k = {k}\n卷积，核大小 k = {k}",
              "recurrent layer (RNN, GRU)\n循环层（RNN、GRU）",
              "self-attention\n自注意力"]
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    y_f, x_1 = f"y{focus + 1}".translate(sub), "x₁"
    notes = [f"{y_f} sees {half} position{'s' if half != 1 else ''} on each side\n"
             f"{y_f} 每侧只看到 {half} 个位置",
             f"{x_1} reaches {y_f} after {focus + 1} step{'s' if focus else ''}\n"
             f"{x_1} 要经过 {focus + 1} 步才到达 {y_f}",
             f"{y_f} sees all {n} inputs in one layer\n{y_f} 一层之内就看到全部 {n} 个输入"]
    for panel, (title, note) in enumerate(zip(titles, notes, strict=True)):
        centre = panel * (width + gap) + width / 2
        ax.text(centre, 0.99, title, ha="center", va="top", fontsize=8.5)
        ax.text(centre, -0.03, note, ha="center", va="top", fontsize=7.5, color=blue)
    ax.text(-0.03, y_out, "outputs\n输出", ha="right", va="center", fontsize=7.5)
    ax.text(-0.03, y_in, "inputs\n输入", ha="right", va="center", fontsize=7.5)
    ax.set_xlim(-0.16, 3 * width + 2 * gap + 0.02)
    ax.set_ylim(-0.2, 1.0)
    ax.axis("off")
    return ax


def draw_transformer_diagram(ax, B="B", n_src="n_src", n_tgt="n", d="d", vocab="V"):
    """The encoder-decoder Transformer (post-norm, as in Vaswani et al.) as boxes and arrows,
    with the tensor shape on every main arrow.

    Each block is a stack of sublayers, each followed by an "add & norm" node, and an orange
    residual arrow bypasses every sublayer, from its input to its add & norm. The blue arrow
    carries the *last* encoder block's output to the cross-attention (as K and V) of every
    decoder block. Laid out for ``plt.subplots(figsize=(8, 7.5))``. For tests, the sublayer
    boxes carry the gid "sublayer", the add & norm boxes "add-norm", the residual arrows
    "residual" and the encoder-to-decoder arrow "memory".
    """
    ink, grey, blue, orange = "0.3", "0.25", "#2a6fb0", "#c2571a"
    attention, ffn, add_norm = "#f6dbe4", "#dbe9f6", "#fff2b3"
    # coordinates: inches of the axes that plt.subplots(figsize=(8, 7.5)) makes
    w, lane, tall, short = 1.8, 0.2, 0.32, 0.22  # box width, residual lane, box heights

    def text(x, y, lines, size=7, color=grey, ha="left", step=0.145):
        # one text per line; none uses $math$ (mathtext has no CJK fallback)
        top = y + step * (len(lines) - 1) / 2
        for k, line in enumerate(lines):
            ax.text(x, top - k * step, line, fontsize=size, color=color, ha=ha, va="center",
                    zorder=5)

    def box(x, bottom, h, lines, color, gid=None, size=7.5):
        ax.add_patch(FancyBboxPatch((x - w / 2, bottom), w, h, facecolor=color, edgecolor=ink,
                                    boxstyle="round,pad=0,rounding_size=0.05", linewidth=1,
                                    zorder=2, gid=gid))
        text(x, bottom + h / 2, lines, size=size, color="black", ha="center")
        return bottom + h

    def arrow(points, color=ink, width=1.1, gid=None):
        ax.add_patch(FancyArrowPatch(path=MplPath(points), arrowstyle="-|>", mutation_scale=9,
                                     color=color, linewidth=width, shrinkA=0, shrinkB=0,
                                     zorder=3, gid=gid, joinstyle="miter", capstyle="butt"))

    def block(x, bottom, sublayers, side, color, title):
        """Sublayers from `bottom` up, each followed by add & norm, with its residual on
        `side` (-1 left, +1 right); returns the first sublayer's bottom, the last add & norm's
        top, the frame's top and each sublayer's centre."""
        lane_x = x + side * (w / 2 + lane)
        fork, centres, first, last = bottom + 0.09, [], None, None
        for lines, fill in sublayers:
            start = fork + 0.09
            if last is not None:  # from the previous add & norm, through the fork
                arrow([(x, last), (x, start)])
            first = start if first is None else first
            top = box(x, start, tall, lines, fill, gid="sublayer")
            centres.append(start + tall / 2)
            arrow([(x, top), (x, top + 0.14)])
            node = top + 0.14 + short / 2
            last = box(x, top + 0.14, short, ["add & norm · 相加 + 层规范化"], add_norm,
                       gid="add-norm", size=7)
            # the residual: the sublayer's input goes around it, into its add & norm
            ax.add_patch(Circle((x, fork), 0.028, color=orange, zorder=4))
            arrow([(x, fork), (lane_x, fork), (lane_x, node), (x + side * w / 2, node)],
                  color=orange, width=1.4, gid="residual")
            fork = last + 0.08
        frame_top = last + 0.1
        left, right = sorted((x - side * (w / 2 + 0.1), lane_x + side * 0.1))
        ax.add_patch(FancyBboxPatch((left, bottom), right - left, frame_top - bottom,
                                    boxstyle="round,pad=0,rounding_size=0.08", facecolor=color,
                                    edgecolor=ink, linewidth=1, zorder=1))
        edge, ha = (left, "left") if side < 0 else (right, "right")
        text(edge, frame_top + 0.28, [title[0]], size=8, color="black", ha=ha)
        text(edge, frame_top + 0.12, [title[1]], size=8, color="black", ha=ha)
        return first, last, frame_top, centres

    def shape(x, y0, y1, s, side=1, color=grey):
        text(x + side * 0.07, (y0 + y1) / 2, [s], color=color, ha="left" if side > 0 else "right")

    enc, dec = 1.45, 4.65
    src, tgt = f"({B}, {n_src}, {d})", f"({B}, {n_tgt}, {d})"
    for x, tokens, n in ((enc, "source tokens · 源词元", n_src),
                         (dec, "target so far · 已有目标", n_tgt)):
        box(x, 0.05, 0.24, [tokens], "#f2f2f2")
        arrow([(x, 0.29), (x, 0.55)])
        shape(x, 0.29, 0.55, f"({B}, {n})")
        box(x, 0.55, tall, ["embedding ×√d + positions", "嵌入 ×√d + 位置编码"], "#fde9c9")
    # encoder: every block reads the previous one; the first reads the embeddings
    e_first, e_last, e_top, _ = block(
        enc, 1.12, [(["multi-head self-attention", "多头自注意力"], attention),
                    (["position-wise FFN", "逐位置前馈网络"], ffn)],
        -1, "#eef4fb", ["encoder block × L", "编码器块 × L"])
    arrow([(enc, 0.87), (enc, e_first)])
    shape(enc, 0.87, 1.12, src)
    # decoder, set higher so that the encoder's output runs up and across into the
    # cross-attention, as in the original figure: its centre is 0.32 above the encoder's frame
    # (block() puts it one sublayer, add & norm and two forks above the frame's bottom)
    d_bottom = e_top + 0.32 - (0.09 + 0.09 + tall + 0.14 + short + 0.08 + 0.09 + tall / 2)
    d_first, d_last, d_top, (_, cross, _) = block(
        dec, d_bottom, [(["causal (masked) self-attention", "因果（掩码）自注意力"], attention),
                        (["cross-attention · 交叉注意力", "K, V: encoder · K、V：编码器"],
                         attention),
                        (["position-wise FFN", "逐位置前馈网络"], ffn)],
        1, "#eff7eb", ["decoder block × L", "解码器块 × L"])
    arrow([(dec, 0.87), (dec, d_first)])
    shape(dec, 0.87, d_bottom, tgt)
    # the last encoder block's output is K and V of the cross-attention of every decoder block
    arrow([(enc, e_last), (enc, cross), (dec - w / 2, cross)], color=blue, width=1.6, gid="memory")
    gap = (enc + dec) / 2  # the middle of the free space between the two frames
    text(gap, cross - 0.13, [src], color=blue, ha="center")
    text(enc + 0.1, cross + 0.44, ["last encoder block's output", "→ K, V of the cross-attention",
                                  "   of every decoder block", "编码器最后一块的输出",
                                  "→ 每个解码器块交叉注意力的 K、V"], color=blue)
    # a key to the residual arrows, in the free space between the columns
    arrow([(gap - 0.38, 1.7), (gap - 0.08, 1.7)], color=orange, width=1.4)
    text(gap - 0.38, 1.5, ["residual path", "残差连接"])
    # the decoder's output: scores over the vocabulary for every target position
    linear = d_top + 0.42
    arrow([(dec, d_last), (dec, linear)])
    shape(dec, d_top, linear, tgt, side=-1)
    out = box(dec, linear, tall, ["linear → vocabulary", "线性层 → 词表"], "#fde9c9")
    arrow([(dec, out), (dec, out + 0.26)])
    shape(dec, out, out + 0.26, f"({B}, {n_tgt}, {vocab})", side=-1)
    ax.set_xlim(0, 6.2)
    ax.set_ylim(0, out + 0.28)
    ax.axis("off")
    return ax


def draw_seq2seq_diagram(ax, B="B", n_src="n_src", e="e", d="d", vocab="V", L="L"):
    """Sequence to sequence with Bahdanau attention (chapter 4) as boxes and arrows, with the
    tensor shape on every arrow, for one output step t.

    The GRU encoder reads all source tokens at once; its states are the keys and values of
    additive attention, and its final state (every layer) is the decoder's initial state s_0.
    At step t the decoder's previous state s_{t-1} is the query; the context c_t is joined
    to the embedding of the previous token as the decoder GRU's input, and a linear layer
    turns the new state s_t into scores over the vocabulary. Shapes: B batch, n_src source
    tokens, e embedding size, d hidden size, V vocabulary, L layers.
    """
    ink, blue, green, grey = "0.3", "#2a6fb0", "#3b8a3b", "0.45"

    def text(x, y, lines, size=7, color="0.25", ha="left", step=0.034):
        # one text per line: a line with $math$ is set by mathtext, which has no CJK fallback,
        # so math and Chinese never share a line
        top = y + step * (len(lines) - 1) / 2
        for k, line in enumerate(lines):
            ax.text(x, top - k * step, line, fontsize=size, color=color, ha=ha, va="center")

    def box(x, y, w, h, lines, color):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.01",
                                    facecolor=color, edgecolor=ink, linewidth=1))
        text(x, y, lines, size=8, color="black", ha="center", step=0.038)

    def arrow(start, end, color=ink, style="-"):
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color=color,
                                     linewidth=1.2, linestyle=style, shrinkA=0, shrinkB=0))

    enc, att, dec, w = 0.14, 0.49, 0.84, 0.26
    # the encoder reads every source position at once
    box(enc, 0.07, w, 0.09, ["source tokens · 源词元", "$x_1, \\ldots, x_{n}$"], "#f2f2f2")
    box(enc, 0.22, w, 0.05, ["embedding · 嵌入"], "#fde9c9")
    box(enc, 0.40, w, 0.09, ["GRU encoder", "GRU 编码器"], "#dbe9f6")
    arrow((enc, 0.115), (enc, 0.195))
    text(enc + 0.015, 0.155, [f"({B}, {n_src})"])
    arrow((enc, 0.245), (enc, 0.355))
    text(enc + 0.015, 0.30, [f"({B}, {n_src}, {e})"])
    # the decoder, drawn for one output step t
    box(dec, 0.07, w, 0.09, ["previous token · 上一个词元", "$y_{t-1}$"], "#f2f2f2")
    box(dec, 0.22, w, 0.05, ["embedding · 嵌入"], "#fde9c9")
    ax.add_patch(Circle((dec, 0.40), 0.02, facecolor="white", edgecolor=ink, linewidth=1))
    ax.text(dec, 0.40, "‖", ha="center", va="center", fontsize=9)  # concatenation, not a sum
    text(dec + 0.03, 0.40, ["concatenate", "拼接"])
    box(dec, 0.645, w, 0.09, ["GRU decoder · GRU 解码器", "$s_{t-1} \\to s_t$"], "#e3f1dc")
    box(dec, 0.835, w, 0.07, ["linear → vocabulary", "线性层 → 词表"], "#fde9c9")
    arrow((dec, 0.115), (dec, 0.195))
    text(dec + 0.015, 0.155, [f"({B}, 1)"])
    arrow((dec, 0.245), (dec, 0.38))
    text(dec + 0.015, 0.31, [f"({B}, 1, {e})"])
    arrow((dec, 0.42), (dec, 0.60))
    text(dec + 0.015, 0.51, [f"({B}, 1, {e} + {d})"])
    arrow((dec, 0.69), (dec, 0.80))
    text(dec + 0.015, 0.745, [f"({B}, 1, {d})"])
    arrow((dec, 0.87), (dec, 0.94))
    text(dec + 0.015, 0.905, [f"({B}, 1, {vocab})"])
    text(dec, 0.975, ["scores of the next token · 下一个词元的分数"], size=8, color="black",
         ha="center")
    # attention between them
    box(att, 0.40, 0.2, 0.13, ["additive attention", "加性注意力",
                               "$\\alpha_{t,j} = \\mathrm{softmax}_j\\, a(s_{t-1}, o_j)$"],
        "#f6dbe4")
    arrow((enc + w / 2, 0.40), (att - 0.1, 0.40), color=blue)
    text((enc + w / 2 + att - 0.1) / 2, 0.485,
         ["states $o_j$: keys = values", "各位置状态：键 = 值", f"({B}, {n_src}, {d})"],
         color=blue, ha="center")
    arrow((att + 0.1, 0.40), (dec - 0.02, 0.40), color=blue)
    text((att + 0.1 + dec - 0.02) / 2, 0.32, ["context $c_t$", "上下文", f"({B}, 1, {d})"],
         color=blue, ha="center")
    arrow((dec - 0.05, 0.60), (att + 0.06, 0.465), color=green)
    text(0.655, 0.56, ["query $s_{t-1}$", "查询", f"({B}, 1, {d})"], color=green, ha="right")
    arrow((att, 0.333), (att, 0.285))
    text(att, 0.235, ["weights $\\alpha_t$", "注意力权重", f"({B}, 1, {n_src})"], ha="center")
    # the encoder's final state, of every layer, starts the decoder
    ax.plot([enc, enc], [0.445, 0.70], color=grey, linewidth=1.2, linestyle="--")
    arrow((enc, 0.70), (dec - w / 2, 0.70), color=grey, style="--")
    text((enc + dec - w / 2) / 2, 0.75,
         [f"final state → initial state $s_0$   ({L}, {B}, {d})",
          "编码器的最终状态 → 解码器的初始状态"],
         color=grey, ha="center")
    ax.set_xlim(-0.01, 1.03)
    ax.set_ylim(0, 1)
    ax.axis("off")
    return ax
