"""Figures in the house style, with Chinese text that renders on a fresh install."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import matplotlib as mpl
import torch
from matplotlib import font_manager
from matplotlib import pyplot as plt

CJK_FONT_FILE = "NotoSansCJKsc-Regular.otf"  # shipped by the mplfonts package (SIL OFL)
CJK_FONT_NAME = "Noto Sans CJK SC"


def cjk_font_path() -> Path:
    """Path of the Noto Sans CJK SC font that the ``mplfonts`` package installs."""
    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the mplfonts package is missing: `pip install mplfonts` provides "
                           "the CJK font that Chinese figure text needs")
    path = Path(next(iter(spec.submodule_search_locations))) / "fonts" / CJK_FONT_FILE
    if not path.exists():
        raise RuntimeError(f"mplfonts is installed but {path} is missing")
    return path


def use_house_style() -> None:
    """Matplotlib settings for every figure of the book.

    DejaVu Sans sets Latin text, digits and math; glyphs it lacks (Chinese) fall back to
    Noto Sans CJK SC, registered from its file so no system font is needed.
    """
    path = str(cjk_font_path())
    if path not in {f.fname for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(path)
    mpl.rcParams.update({
        # a list of concrete families: matplotlib falls back glyph by glyph along it (a
        # generic "sans-serif" would resolve to a single font and drop the fallback)
        "font.family": ["DejaVu Sans", CJK_FONT_NAME],
        "figure.figsize": (6.0, 3.0),
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
        "image.cmap": "Reds",
        "svg.hashsalt": "attention-book",  # stable ids in SVG output
    })


def _as_numpy(x):
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return x


def show_heatmaps(matrices, xlabel: str, ylabel: str, titles=None, figsize=(2.5, 2.5),
                  cmap: str = "Reds", colorbar: bool = True):
    """Draw a grid of heatmaps, e.g. attention weights.

    matrices: (n_rows, n_cols, n_queries, n_keys); a (n_queries, n_keys) or
    (n_cols, n_queries, n_keys) tensor is drawn as one row. titles: one per column.
    Returns the figure; all panels share one colour scale.
    """
    m = torch.as_tensor(_as_numpy(matrices))
    if m.dim() == 2:
        m = m[None, None]
    elif m.dim() == 3:
        m = m[None]
    elif m.dim() != 4:
        raise ValueError(f"matrices must be (n_queries, n_keys), (n_cols, n_queries, n_keys) or "
                         f"(n_rows, n_cols, n_queries, n_keys), got shape {tuple(m.shape)}")
    n_rows, n_cols = m.shape[:2]
    if titles is not None and len(titles) != n_cols:
        raise ValueError(f"titles has {len(titles)} entries but matrices has {n_cols} columns")
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(figsize[0] * n_cols, figsize[1] * n_rows),
                             sharex=True, sharey=True, squeeze=False)
    vmin, vmax = float(m.min()), float(m.max())
    for i in range(n_rows):
        for j in range(n_cols):
            ax = axes[i, j]
            pcm = ax.imshow(m[i, j].numpy(), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
            ax.grid(False)
            if i == n_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None:
                ax.set_title(titles[j])
    if colorbar:
        fig.colorbar(pcm, ax=axes, shrink=0.6)
    return fig


def plot_regression(ax, x_train, y_train, x_test, curves: dict, title: str | None = None):
    """Training points as dots and one line per entry of ``curves`` (label -> y on x_test)."""
    ax.plot(_as_numpy(x_train), _as_numpy(y_train), "o", alpha=0.5, markersize=4,
            color="0.4", label="samples · 样本")
    for label, y in curves.items():
        style = "--" if label.startswith("truth") else "-"
        ax.plot(_as_numpy(x_test), _as_numpy(y), style, label=label)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if title:
        ax.set_title(title)
    return ax


def draw_head_view(ax, weights, query_labels, key_labels, heads="all", colors=None):
    """Attention as lines from queries (left) to keys (right), one colour per head.

    weights: (h, n_q, n_k), e.g. one example's ``attention_weights[b]``. heads: "all" to
    overlay every head, or the index of one head. A line's opacity and width grow with its
    weight, so a head that attends sharply draws one strong line per query. The legend lists
    every head (the hidden ones faded), so frames for different choices share one layout.
    """
    w = torch.as_tensor(_as_numpy(weights))
    if w.dim() != 3:
        raise ValueError(f"weights must be (heads, n_queries, n_keys), got shape {tuple(w.shape)}")
    h, n_q, n_k = w.shape
    if len(query_labels) != n_q or len(key_labels) != n_k:
        raise ValueError(f"weights of shape {tuple(w.shape)} need {n_q} query labels and {n_k} "
                         f"key labels, got {len(query_labels)} and {len(key_labels)}")
    if heads != "all" and not (isinstance(heads, int) and 0 <= heads < h):
        raise ValueError(f"heads must be 'all' or a head index in 0..{h - 1}, got {heads!r}")
    colors = colors or [plt.get_cmap("tab10")(i % 10) for i in range(h)]
    shown = range(h) if heads == "all" else [heads]
    # queries and keys spread over the same height, top to bottom
    y_q = torch.linspace(1, 0, n_q) if n_q > 1 else torch.tensor([0.5])
    y_k = torch.linspace(1, 0, n_k) if n_k > 1 else torch.tensor([0.5])
    spread = 0.25 / max(n_k - 1, 1)  # heads on the same key end side by side, not on top
    for head in shown:
        shift = spread * (head - (h - 1) / 2) / max(h - 1, 1) if heads == "all" else 0.0
        for i in range(n_q):
            for j in range(n_k):
                a = float(w[head, i, j])
                if a > 0.02:
                    ax.plot([0, 1], [float(y_q[i]), float(y_k[j]) + shift], color=colors[head],
                            alpha=min(1.0, a), linewidth=0.5 + 3 * a, solid_capstyle="round")
    for y, label in zip(y_q.tolist(), query_labels):
        ax.text(-0.03, y, str(label), ha="right", va="center")
    for y, label in zip(y_k.tolist(), key_labels):
        ax.text(1.03, y, str(label), ha="left", va="center")
    for head in range(h):  # one swatch per head; those not shown faded
        ax.plot([], [], color=colors[head], linewidth=3, alpha=1.0 if head in shown else 0.2,
                label=f"head {head + 1} · 头 {head + 1}")
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(-0.08, 1.08)
    ax.axis("off")
    return ax


def draw_transformer_diagram(ax, B="B", n_src="n_src", n_tgt="n", d="d", vocab="V"):
    """The encoder-decoder Transformer as boxes and arrows, with the tensor shape on every
    arrow. Every decoder block reads the *last* encoder block's output."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    def box(x, y, w, h, text, color):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02",
                                    facecolor=color, edgecolor="0.3", linewidth=1))
        ax.text(x, y, text, ha="center", va="center", fontsize=8)

    def arrow(x0, y0, x1, y1, label=None, side="right"):
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=10,
                                     color="0.3", linewidth=1, connectionstyle="arc3,rad=0"))
        if label:
            dx = 0.03 if side == "right" else -0.03
            ax.text((x0 + x1) / 2 + dx, (y0 + y1) / 2, label, fontsize=7, color="0.25",
                    ha="left" if side == "right" else "right", va="center")

    enc, dec = 0.25, 0.75
    act = f"({B}, {n_src}, {d})"
    box(enc, 0.06, 0.3, 0.06, f"source tokens · 源词元 ({B}, {n_src})", "#f2f2f2")
    box(enc, 0.2, 0.3, 0.07, "embedding ×√d + positions\n嵌入 ×√d + 位置编码", "#fde9c9")
    box(enc, 0.47, 0.3, 0.3, "encoder block × L · 编码器块\n\nmulti-head self-attention\n多头自注意力\n"
        "add & norm · 加 & 规范化\nposition-wise FFN · 逐位前馈网络\nadd & norm · 加 & 规范化", "#dbe9f6")
    arrow(enc, 0.09, enc, 0.165, f"({B}, {n_src})")
    arrow(enc, 0.235, enc, 0.32, act)
    tgt = f"({B}, {n_tgt}, {d})"
    box(dec, 0.06, 0.3, 0.06, f"target so far · 已有目标 ({B}, {n_tgt})", "#f2f2f2")
    box(dec, 0.2, 0.3, 0.07, "embedding ×√d + positions\n嵌入 ×√d + 位置编码", "#fde9c9")
    box(dec, 0.51, 0.3, 0.38, "decoder block × L · 解码器块\n\ncausal self-attention · 因果自注意力\n"
        "add & norm · 加 & 规范化\ncross-attention · 交叉注意力\nK, V: encoder · K、V 来自编码器\n"
        "add & norm · 加 & 规范化\nposition-wise FFN · 逐位前馈网络\nadd & norm · 加 & 规范化", "#e3f1dc")
    box(dec, 0.86, 0.3, 0.06, "linear → vocabulary · 线性层 → 词表", "#fde9c9")
    arrow(dec, 0.09, dec, 0.165, f"({B}, {n_tgt})")
    arrow(dec, 0.235, dec, 0.32, tgt)
    arrow(dec, 0.70, dec, 0.83, tgt)
    arrow(dec, 0.89, dec, 0.97, f"({B}, {n_tgt}, {vocab})")
    # the last encoder output feeds every decoder block's cross-attention
    arrow(enc, 0.62, enc, 0.74, act, side="left")
    ax.add_patch(FancyArrowPatch((enc, 0.74), (dec - 0.15, 0.47), arrowstyle="-|>",
                                 mutation_scale=10, color="#2a6fb0", linewidth=1.5,
                                 connectionstyle="arc3,rad=-0.3"))
    ax.text(enc, 0.8, "last encoder output → every decoder block\n编码器最后一块的输出 → 每个解码器块",
            fontsize=7, color="#2a6fb0", ha="center")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    return ax
