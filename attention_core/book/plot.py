"""Figures in the house style, with Chinese text that renders on a fresh install."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import matplotlib as mpl
import numpy as np
import torch
from matplotlib import font_manager, ticker
from matplotlib import pyplot as plt

from ..contracts import contract, require

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
        # a light frame keeps a legend readable where it has to sit over data
        "legend.frameon": True,
        "legend.framealpha": 0.9,
        "legend.edgecolor": "0.8",
        "legend.fancybox": False,
        "image.cmap": "Reds",
        "svg.hashsalt": "attention-book",  # stable ids in SVG output
    })
    # Inline figures as PNG at twice the pixels, shown at their natural size: sharp on
    # high-DPI screens and when a phone zooms in (the notebook stores the display size).
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # not in Jupyter
        return
    set_matplotlib_formats("retina")


def log_scale(ax, axis: str = "both", base: float = 10):
    """Log axes with labels on the major ticks only.

    Matplotlib labels the minor ticks of an axis that spans about a decade or less
    ("3×10² 4×10² 6×10²"), and on a narrow figure those labels run into each other. With
    base 2 the major ticks are the powers of two, labelled as plain numbers (256, 512, ...).
    """
    axes = {"x": [ax.xaxis], "y": [ax.yaxis], "both": [ax.xaxis, ax.yaxis]}[axis]
    for a in axes:
        (ax.set_xscale if a is ax.xaxis else ax.set_yscale)("log", base=base)
        a.set_minor_formatter(ticker.NullFormatter())
        if base == 2:
            a.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    return ax


def _as_numpy(x):
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return x


def _shape(x) -> tuple:
    return tuple(np.shape(x))


def _columns(matrices) -> int:
    """The number of columns of a grid of heatmaps (its axis -3, else one)."""
    shape = _shape(matrices)
    return shape[-3] if len(shape) >= 3 else 1


@contract(where=[
    require(lambda matrices: len(_shape(matrices)) in (2, 3, 4),
            lambda matrices: f"matrices must be (n_queries, n_keys), (n_cols, n_queries, "
                             f"n_keys) or (n_rows, n_cols, n_queries, n_keys), got shape "
                             f"{_shape(matrices)}"),
    require(lambda matrices, titles: titles is None or len(titles) == _columns(matrices),
            lambda matrices, titles: f"titles has {len(titles)} entries but matrices has "
                                     f"{_columns(matrices)} columns")])
def show_heatmaps(matrices, xlabel: str, ylabel: str, titles=None, figsize=(2.5, 2.5),
                  cmap: str = "Reds", colorbar: bool = True):
    """Draw a grid of heatmaps, e.g. attention weights.

    matrices: (n_rows, n_cols, n_queries, n_keys); a (n_queries, n_keys) or
    (n_cols, n_queries, n_keys) tensor is drawn as one row. titles: one per column.
    Returns the figure; all panels share one colour scale.
    """
    m = torch.as_tensor(_as_numpy(matrices))
    while m.dim() < 4:
        m = m[None]  # missing leading axes are rows and columns of size one
    n_rows, n_cols = m.shape[:2]  # m: (n_rows, n_cols, n_queries, n_keys)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(figsize[0] * n_cols, figsize[1] * n_rows),
                             sharex=True, sharey=True, squeeze=False)
    vmin, vmax = float(m.min()), float(m.max())  # one colour scale for every panel
    for i in range(n_rows):
        for j in range(n_cols):
            ax = axes[i, j]
            # one row of pixels per query, one column per key (with "Reds", darker = more)
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


@contract(where=[
    require(lambda weights: len(_shape(weights)) == 3,
            lambda weights: f"weights must be (heads, n_queries, n_keys), got shape "
                            f"{_shape(weights)}"),
    require(lambda weights, query_labels, key_labels:
            (len(query_labels), len(key_labels)) == _shape(weights)[1:],
            lambda weights, query_labels, key_labels:
            f"weights of shape {_shape(weights)} need {_shape(weights)[1]} query labels and "
            f"{_shape(weights)[2]} key labels, got {len(query_labels)} and {len(key_labels)}"),
    require(lambda weights, heads: heads == "all" or (
                isinstance(heads, int) and 0 <= heads < _shape(weights)[0]),
            lambda weights, heads: f"heads must be 'all' or a head index in "
                                   f"0..{_shape(weights)[0] - 1}, got {heads!r}")])
def draw_head_view(ax, weights, query_labels, key_labels, heads="all", colors=None):
    """Attention as lines from queries (left) to keys (right), one colour per head.

    weights: (h, n_q, n_k), e.g. one example's ``attention_weights[b]``. heads: "all" to
    overlay every head, or the index of one head. A line's opacity and width grow with its
    weight, so a head that attends sharply draws one strong line per query. The legend lists
    every head (the hidden ones faded), so frames for different choices share one layout.
    """
    w = torch.as_tensor(_as_numpy(weights))
    h, n_q, n_k = w.shape
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
    for y, label in zip(y_q.tolist(), query_labels, strict=True):
        ax.text(-0.03, y, str(label), ha="right", va="center")
    for y, label in zip(y_k.tolist(), key_labels, strict=True):
        ax.text(1.03, y, str(label), ha="left", va="center")
    for head in range(h):  # one swatch per head; those not shown faded
        ax.plot([], [], color=colors[head], linewidth=3, alpha=1.0 if head in shown else 0.2,
                label=f"head {head + 1} · 头 {head + 1}")
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(-0.08, 1.08)
    ax.axis("off")
    return ax
