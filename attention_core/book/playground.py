"""The attention playground: keys and a query on a plane, computed live as the reader moves them.

``attention_playground(keys, values, query, name=...)`` returns one object with two faces, as
``widgets.slider_figure`` does (and in the same ``SliderFigure`` bundle):

* in Jupyter, ipywidgets (the query's coordinates, the score, the sharpness beta, the number
  of unmasked keys) redraw a figure computed by PyTorch with ``playground_attention``;
* on the static site, a few lines of JavaScript (``playground.js``) compute the same three
  steps in the page while the reader drags the points: no kernel, no precomputed frames.

Both compute score -> masked softmax of beta * score -> weighted sum of the values, in float64,
with the package's own score functions on the PyTorch side; the book's browser tests compare
the two on random configurations.
"""
from __future__ import annotations

import hashlib
import json
from importlib import resources

import numpy as np
import torch

from ..contracts import contract, one_of, require
from ..masking import masked_softmax
from ..scoring import AdditiveScore, CosineScore, DotScore, ScaledDotScore
from .bilingual import join, spans
from .widgets import SliderFigure, render_png

PLAYGROUND_JS = resources.files(__package__).joinpath("playground.js").read_text(encoding="utf-8")
# the scores a reader can pick: (English name, Chinese name)
SCORES = {"dot": ("dot", "点积"), "scaled_dot": ("scaled dot", "缩放点积"),
          "additive": ("additive (fixed weights)", "加性（固定权重）"),
          "cosine": ("cosine", "余弦")}
BETAS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # the sharpness slider's stops
ADDITIVE_HIDDENS = 8  # d_a of the additive score, as in chapter 3's comparison
EXTENT = 3.0  # the plane shows [-EXTENT, EXTENT]^2; points are kept inside it


def additive_score(seed: int = 0) -> AdditiveScore:
    """The playground's additive score: d_a = 8, fixed weights drawn from ``seed`` (float64),
    without touching the global generator that a chapter seeded."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        score = AdditiveScore(ADDITIVE_HIDDENS, query_size=2, key_size=2).double()
    with torch.no_grad():  # to 4 decimals: the draw's last bits vary with the CPU's instruction set
        for p in score.parameters():
            p.copy_(torch.round(p * 1e4) / 1e4)
    return score


def _shape(x) -> tuple:
    return tuple(np.shape(x))


# What both faces accept: points of the plane as tensors, arrays or lists.
ON_THE_PLANE = [
    require(lambda query: _shape(query) == (2,),
            lambda query: f"query must be one point of the plane, shape (2,), "
                          f"got {_shape(query)}"),
    require(lambda keys: len(_shape(keys)) == 2 and _shape(keys)[1] == 2 and len(keys) >= 1,
            lambda keys: f"keys must be (n, 2) with n >= 1, got {_shape(keys)}"),
    require(lambda keys, values: _shape(values) == _shape(keys)[:1],
            lambda keys, values: f"values must be (n,) = ({len(keys)},), one per key, "
                                 f"got {_shape(values)}"),
    require(lambda beta: beta >= 0, lambda beta: f"beta must be >= 0, got {beta}"),
]


@contract(score=one_of(SCORES), where=[
    *ON_THE_PLANE,
    require(lambda keys, valid_len: valid_len is None or 1 <= valid_len <= len(keys),
            lambda keys, valid_len: f"valid_len must be in 1..{len(keys)} (the number of "
                                    f"keys), got {valid_len}")])
def playground_attention(query, keys, values, *, score: str = "dot", beta: float = 1.0,
                         valid_len: int | None = None, additive: AdditiveScore | None = None):
    """One query over n keys in the plane -> (scores (n,), weights (n,), output ()), float64.

    query (2,), keys (n, 2), values (n,); score one of SCORES; the weights are the softmax of
    beta * score over the first ``valid_len`` keys (all when None), exactly 0 for the rest.
    additive: the score module for "additive" (default ``additive_score()``).
    """
    query, keys, values = (torch.as_tensor(t, dtype=torch.float64) for t in (query, keys, values))
    if score == "additive":
        function = additive if additive is not None else additive_score()
    else:
        function = {"dot": DotScore, "scaled_dot": ScaledDotScore, "cosine": CosineScore}[score]()
    with torch.no_grad():  # a figure's numbers, not a model to train
        scores = function(query[None, None], keys[None])[0, 0]        # (n,)
        lens = None if valid_len is None else torch.tensor([valid_len])
        weights = masked_softmax((beta * scores)[None, None], lens)[0, 0]      # (n,)
        return scores, weights, weights @ values                               # output: ()


def static_playground_html(keys, values, query, name: str, score: str = "dot",
                           beta: float = 1.0, seed: int = 0) -> str:
    """The kernel-free face: an SVG plane with draggable points, controls and a table, computed
    by playground.js from the data below (the additive score's weights included)."""
    uid = "acplay-" + hashlib.sha1(name.encode()).hexdigest()[:10]  # stable across runs
    additive = additive_score(seed)
    data = {"keys": torch.as_tensor(keys, dtype=torch.float64).tolist(),
            "values": torch.as_tensor(values, dtype=torch.float64).tolist(),
            "query": torch.as_tensor(query, dtype=torch.float64).tolist(),
            "score": score, "beta": beta, "betas": list(BETAS), "extent": EXTENT,
            "names": {k: list(names) for k, names in SCORES.items()},
            "additive": {"W_q": additive.W_q.weight.tolist(), "W_k": additive.W_k.weight.tolist(),
                         "w_v": additive.w_v.weight[0].tolist()}}
    options = "".join(f'<option value="{k}"{" selected" if k == score else ""}>{join(*names)}'
                      '</option>' for k, names in SCORES.items())
    n = len(data["keys"])
    row, cell = 'style="display:block;margin:0.25em 0"', 'style="padding:0.1em 0.5em 0.1em 0"'
    heads = "".join(f"<th {cell}>{spans(en, zh)}</th>" for en, zh in
                    [("key", "键"), ("value", "值"), ("score", "分数"), ("weight", "权重")])
    return f"""<div class="ac-playground" id="{uid}" style="display:flex;flex-wrap:wrap;gap:0.5em 1.5em;align-items:flex-start">
<svg class="ac-playground-plane" style="flex:0 1 320px;width:100%;max-width:320px;touch-action:none" role="group" aria-label="keys and a query on a plane · 平面上的键和查询"></svg>
<div style="flex:1 1 260px;min-width:0">
<div class="ac-playground-controls">
<label {row}>{spans("score", "评分函数")} <select data-control="score">{options}</select></label>
<label {row}>{spans("sharpness β", "锐度 β")} <input data-control="beta" type="range" min="0" max="{len(BETAS) - 1}" step="1" value="{BETAS.index(beta)}" style="width:8em;vertical-align:middle"> <output data-show="beta">{beta:g}</output></label>
<label {row}>{spans("unmasked keys (the first n)", "未被掩蔽的键（前 n 个）")} <input data-control="valid" type="range" min="1" max="{n}" step="1" value="{n}" style="width:8em;vertical-align:middle"> <output data-show="valid">{n}</output></label>
</div>
<p style="margin:0.25em 0">{spans("query q", "查询 q")} = <output data-show="query"></output> <button type="button" data-control="reset" style="margin-left:1em">{spans("reset", "复原")}</button></p>
<table class="ac-playground-table" style="font-size:0.85em;margin:0.5em 0"><thead><tr>{heads}</tr></thead><tbody></tbody></table>
<p class="ac-playground-output">{spans("output Σ α v", "输出 Σ α v")} = <output data-show="output"></output></p>
</div>
<p class="ac-slider-note" style="flex-basis:100%;margin:0">{spans("Computed in your browser. Drag the query q (the red diamond) or a key, or focus one and use the arrow keys; a key's disc and its line grow with its weight.", "在浏览器中实时计算。拖动查询 q（红色菱形）或某个键，或选中后用方向键移动；键的圆盘和连线随其权重变大变粗。")}</p>
<script type="application/json" id="{uid}-data">{json.dumps(data)}</script>
<script>{PLAYGROUND_JS}acPlayground("{uid}");</script>
</div>"""  # noqa: E501 (the markup of one figure, a line per element)


def draw_playground(fig, keys, values, query, scores, weights, output, valid_len, score):
    """The Jupyter face's figure: the plane (key size = weight) and the weights as bars."""
    ax, bars = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2], "wspace": 0.4})
    keys, weights, n = keys.numpy(), weights.numpy(), len(keys)  # matplotlib takes arrays
    used = np.arange(n) < valid_len
    ax.scatter(keys[used, 0], keys[used, 1], s=40 + 900 * weights[used], color="C0", alpha=0.7)
    ax.scatter(keys[~used, 0], keys[~used, 1], s=40, facecolors="none", edgecolors="0.6",
               linestyle="--")
    for i, (x, y) in enumerate(keys.tolist()):
        ax.annotate(f"k{i + 1}, v={values[i]:g}", (x, y), textcoords="offset points",
                    xytext=(6, 6), fontsize=8, color="0.2" if used[i] else "0.6")
    ax.scatter([float(query[0])], [float(query[1])], marker="D", s=60, color="C3", zorder=3)
    ax.set(xlim=(-EXTENT, EXTENT), ylim=(-EXTENT, EXTENT), aspect="equal",
           title=f"output · 输出 = {output:.3f}")
    ax.axhline(0, color="0.85", lw=0.8, zorder=0)
    ax.axvline(0, color="0.85", lw=0.8, zorder=0)
    bars.bar([f"k{i + 1}" for i in range(n)], weights, color=["C0" if u else "0.7" for u in used])
    bars.set(ylim=(0, 1.08), ylabel="weight · 权重", title=join(*SCORES[score]),
             xlabel="the score above each bar · 柱上数字为分数")
    for i, s in enumerate(scores.tolist()):
        bars.text(i, float(weights[i]) + 0.02, f"{s:.2f}", ha="center", fontsize=7, color="0.4")


def _largest(*points) -> float:
    return max(float(torch.as_tensor(p, dtype=torch.float64).abs().max()) for p in points)


@contract(score=one_of(SCORES), where=[
    *ON_THE_PLANE,
    require(lambda beta: beta in BETAS,
            lambda beta: f"beta must start at one of the slider's stops {BETAS}, got {beta}"),
    require(lambda keys, query: _largest(keys, query) <= EXTENT,
            f"keys and query must lie in [-{EXTENT:g}, {EXTENT:g}]^2")])
def attention_playground(keys, values, query, *, name: str, score: str = "dot",
                         beta: float = 1.0, seed: int = 0, figsize=(7.0, 3.2)) -> SliderFigure:
    """An attention playground over n keys (n, 2) with scalar values (n,) and a query (2,).

    score and beta: where the controls start (beta one of BETAS); seed: the additive score's
    fixed weights; name: a unique, stable id for the page.
    """
    import ipywidgets as widgets

    keys, values, query = (torch.as_tensor(t, dtype=torch.float64) for t in (keys, values, query))
    additive = additive_score(seed)
    n = len(keys)
    style, wide = {"description_width": "initial"}, widgets.Layout(width="60%")
    controls = {
        "x": widgets.FloatSlider(value=float(query[0]), min=-EXTENT, max=EXTENT, step=0.1,
                                 description="query x · 查询 x", style=style, layout=wide),
        "y": widgets.FloatSlider(value=float(query[1]), min=-EXTENT, max=EXTENT, step=0.1,
                                 description="query y · 查询 y", style=style, layout=wide),
        "score": widgets.Dropdown(options=[(join(*names), k) for k, names in SCORES.items()],
                                  value=score, description="score · 评分函数", style=style),
        "beta": widgets.SelectionSlider(options=list(BETAS), value=beta, style=style,
                                        description="sharpness β · 锐度 β", layout=wide),
        "valid": widgets.IntSlider(value=n, min=1, max=n, style=style, layout=wide,
                                   description="unmasked keys (the first n) · "
                                               "未被掩蔽的键（前 n 个）")}

    def render():
        c = {k: w.value for k, w in controls.items()}
        q = torch.tensor([c["x"], c["y"]], dtype=torch.float64)
        numbers = playground_attention(q, keys, values, score=c["score"], beta=c["beta"],
                                       valid_len=c["valid"], additive=additive)
        return render_png(lambda fig: draw_playground(fig, keys, values, q, *numbers, c["valid"],
                                                      c["score"]), [], figsize)

    image = widgets.Image(value=render(), format="png")
    for w in controls.values():
        w.observe(lambda change: setattr(image, "value", render()), names="value")
    summary = (f"Attention playground '{name}': {n} keys with values, a query, scores "
               f"{' / '.join(SCORES)}, sharpness beta from {BETAS[0]:g} to {BETAS[-1]:g}, "
               f"a padding mask over the last keys")
    return SliderFigure(widgets.VBox([*controls.values(), image]),
                      static_playground_html(keys, values, query, name, score, beta, seed), summary)
