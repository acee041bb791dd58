"""Attention cues: a desk of objects, one of them salient, and a reader with or without a goal.

Each object is described by five features. The first two are *appearance* (how red it is,
how much it contrasts with the desk); the last three are what it is *for* (reading,
drinking, writing). A nonvolitional cue comes from appearance alone: the object that
differs most from the rest draws the eye. A volitional cue is a query: "I want to read"
is a vector over the purposes, and each object's key is compared with it.
"""
from __future__ import annotations

import torch

from ..contracts import contract, non_negative, one_of

FEATURES = ("red", "contrast", "readable", "drinkable", "writable")
APPEARANCE = slice(0, 2)

#            name (en)      name (zh)  red  contrast  read  drink  write
SCENE = [("newspaper",  "报纸",     0.1, 0.2, 0.8, 0.0, 0.3),
         ("notebook",   "笔记本",   0.1, 0.3, 0.4, 0.0, 1.0),
         ("book",       "书",       0.2, 0.2, 1.0, 0.0, 0.1),
         ("paper",      "纸",       0.0, 0.1, 0.3, 0.0, 0.9),
         ("coffee cup", "咖啡杯",   1.0, 0.9, 0.0, 1.0, 0.0)]

QUERIES = {"none": ("no goal", "没有目标", None),
           "read": ("I want to read", "我想读书", (0.0, 0.0, 1.0, 0.0, 0.0)),
           "drink": ("I want to drink", "我想喝东西", (0.0, 0.0, 0.0, 1.0, 0.0)),
           "write": ("I want to write", "我想写字", (0.0, 0.0, 0.0, 0.0, 1.0))}


def make_scene(dtype=torch.float32, device=None):
    """The desk: (names [(en, zh), ...], keys (n_objects, 5)). The keys double as values."""
    names = [(en, zh) for en, zh, *_ in SCENE]
    keys = torch.tensor([row[2:] for row in SCENE], dtype=dtype, device=device)
    return names, keys


@contract(goal=one_of(QUERIES))
def query_vector(goal: str, dtype=torch.float32, device=None):
    """The volitional cue for a goal in QUERIES, or None for "none"."""
    vec = QUERIES[goal][2]
    return None if vec is None else torch.tensor(vec, dtype=dtype, device=device)


@contract(keys=f"n_objects {len(FEATURES)}")
def saliency(keys: torch.Tensor) -> torch.Tensor:
    """How far each object's appearance lies from the average appearance: (n_objects,)."""
    look = keys[:, APPEARANCE]                 # (n_objects, 2): x_i = (red, contrast)
    return (look - look.mean(0)).norm(dim=-1)  # (n_objects,): s_i = ||x_i - mean of x||


SALIENCY_WEIGHT = 0.1  # how much the eye still counts once there is a goal (see cue_weights)


@contract(keys=f"n_objects {len(FEATURES)}", query=f"{len(FEATURES)}", sharpness=non_negative,
          saliency_weight=non_negative)
def cue_weights(keys: torch.Tensor, query: torch.Tensor | None = None,
                sharpness: float = 5.0, saliency_weight: float = SALIENCY_WEIGHT) -> torch.Tensor:
    """Attention weights alpha over the objects: (n_objects,).

    Without a query only the nonvolitional cue acts::

        alpha_i = softmax_i(sharpness * s_i),   where s = saliency(keys).

    With a query q both cues act::

        alpha_i = softmax_i(sharpness * (q . k_i + saliency_weight * s_i)).

    Sharpness 0 gives every object 1/n; a large sharpness puts nearly all the weight on the
    object with the highest score (an argmax). The default saliency weight 0.1
    is small enough that the goal alone decides which object wins (0.1 times the spread of
    the saliencies is below the gap between the best and the second-best match of every
    goal), while the red cup still draws a little more of the reader's attention than its
    match alone would give it.
    """
    s = saliency(keys)                               # (n_objects,) the nonvolitional cue
    if query is None:
        scores = s                                   # no goal: the eye alone
    else:
        scores = keys @ query + saliency_weight * s  # (n_objects,) q . k_i + 0.1 s_i by default
    return torch.softmax(sharpness * scores, dim=-1)  # (n_objects,) alpha, sums to one


def draw_scene(ax, names, weights, title: str = "") -> None:
    """Draw the desk: each object's outline and arrow from the eye are as strong as its weight."""
    from matplotlib import patches  # figures are book tooling: matplotlib only when drawing

    colors = {"coffee cup": "#c0392b"}
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylim(-1.6, 1.25)
    ax.set_axis_off()
    eye = (len(names) / 2 - 0.5, -1.3)
    ax.add_patch(patches.Ellipse(eye, 0.7, 0.35, facecolor="white", edgecolor="0.2", lw=1.5))
    ax.add_patch(patches.Circle(eye, 0.11, color="0.2"))
    for i, ((en, zh), w) in enumerate(zip(names, weights.tolist(), strict=True)):
        face = colors.get(en, "#d9d4c7")
        if en == "coffee cup":
            shape = patches.FancyBboxPatch((i - 0.25, 0.0), 0.5, 0.7, boxstyle="round,pad=0.05")
        else:
            shape = patches.Rectangle((i - 0.35, 0.05), 0.7, 0.6)
        shape.set_facecolor(face)
        shape.set_edgecolor("C0")
        shape.set_linewidth(0.5 + 6 * w)
        ax.add_patch(shape)
        ax.text(i, 0.85, f"{en}\n{zh}", ha="center", va="bottom", fontsize=8)
        ax.text(i, 0.35, f"{w:.2f}", ha="center", va="center", fontsize=9,
                color="white" if en == "coffee cup" else "black")
        ax.annotate("", xy=(i, -0.02), xytext=eye,
                    arrowprops=dict(arrowstyle="-|>", color="C0", lw=0.3 + 5 * w,
                                    alpha=0.3 + 0.7 * w))
    if title:
        ax.set_title(title, fontsize=10)
