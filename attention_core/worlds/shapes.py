"""Shapes: small generated pictures with captions, for attention over images (chapter 10).

Each scene is a size x size RGB image on a light background with two objects, each a coloured
circle, square or triangle of the same radius, the two of different colours and apart. Its
caption names both, the one whose colour comes first in red, green, blue, yellow first, and
where it is relative to the other, along the axis on which they are further apart: "a red
circle left of a blue square". Everything is drawn from a
``torch.Generator``, so a seed gives the same scenes on every machine, and nothing is
downloaded. A scene also knows where its objects are: their centres and their pixel masks,
against which one can measure how much of a model's attention falls on the object it names.
``caption_loss`` trains a ``captioning.Captioner`` on them.
"""
from __future__ import annotations

import dataclasses

import torch
from torch.nn import functional as F

from .._checks import check_positive_int
from ..captioning import doubly_stochastic_penalty
from ..decoding import decoder_input
from .translation import masked_cross_entropy

COLOURS = {"red": (0.84, 0.15, 0.16), "green": (0.17, 0.63, 0.17),
           "blue": (0.12, 0.47, 0.71), "yellow": (0.93, 0.78, 0.09)}
SHAPES = ("circle", "square", "triangle")
RELATIONS = ("above", "below", "left of", "right of")
BACKGROUND = 0.96


@dataclasses.dataclass
class Scenes:
    """A batch of N scenes with two objects each (object 0 is the caption's subject).

    images (N, 3, size, size) in [0, 1]; colours and shapes (N, 2): indices into
    ``COLOURS`` (in its order) and ``SHAPES``; centres (N, 2, 2) as (row, column) in pixels;
    masks (N, 2, size, size): True where an object covers the pixel's centre; captions: N token
    lists.
    """

    images: torch.Tensor
    colours: torch.Tensor
    shapes: torch.Tensor
    centres: torch.Tensor
    masks: torch.Tensor
    captions: list

    def __len__(self):
        return len(self.captions)

    def __getitem__(self, index):
        """Scenes[i:j] or Scenes[list of indices]: a smaller batch of the same scenes."""
        rows = list(range(len(self))[index]) if isinstance(index, slice) else list(index)
        pick = torch.tensor(rows, dtype=torch.long)
        return Scenes(self.images[pick], self.colours[pick], self.shapes[pick],
                      self.centres[pick], self.masks[pick], [self.captions[i] for i in rows])


def _check_scenes(n: int, size: int, radius: int, colours, relations) -> None:
    """The door of make_scenes: sizes that leave room for two objects, known names."""
    check_positive_int(n=n, size=size, radius=radius)
    if size < 6 * radius + 6:
        raise ValueError(f"size={size} leaves no room for two objects of radius={radius}: "
                         f"size must be at least 6 * radius + 6 = {6 * radius + 6}")
    unknown = [c for c in (colours or ()) if c not in COLOURS]
    if colours is not None and (len(colours) != 2 or unknown or colours[0] == colours[1]):
        raise ValueError(f"colours must be two different names of {list(COLOURS)}, got {colours!r}")
    if not relations or any(r not in RELATIONS for r in relations):
        raise ValueError(f"relations must be a non-empty subset of {RELATIONS}, got {relations!r}")


def _relation(d_row: float, d_col: float) -> str:
    """Where object 0 is relative to object 1, d = centre 0 - centre 1 (rows grow downwards)."""
    if abs(d_row) > abs(d_col):
        return "above" if d_row < 0 else "below"
    return "left of" if d_col < 0 else "right of"


def _draw_positions(generator, size: int, radius: int, relations) -> tuple:
    """Two centres, apart by at least 2 radius + 4 pixels on one axis and 1.5 times as far on
    it as on the other (so the relation is plain to see), in one of ``relations``."""
    low, high = radius + 1, size - radius - 1
    while True:
        (r0, c0), (r1, c1) = torch.randint(low, high + 1, (2, 2), generator=generator).tolist()
        near, far = sorted((abs(r0 - r1), abs(c0 - c1)))
        if far >= 2 * radius + 4 and far >= 1.5 * near and _relation(r0 - r1, c0 - c1) in relations:
            return (r0, c0), (r1, c1)


def render(colours, shapes, centres, size: int = 48, radius: int = 6):
    """Images and masks of scenes given as colours (N, k), shapes (N, k) and centres (N, k, 2).

    A pixel belongs to an object when its centre lies inside the shape: a disc of ``radius``, a
    square of half-side ``radius``, or a triangle with its apex ``radius`` above the centre and
    a base of 2 ``radius`` at ``radius`` below it. Returns (images (N, 3, size, size),
    masks (N, k, size, size)); later objects are painted over earlier ones.
    """
    y = torch.arange(size, dtype=torch.float32) + 0.5
    rows, cols = y[:, None], y[None, :]                                  # pixel centres
    cy, cx = (centres[..., i, None, None].float() + 0.5 for i in (0, 1))  # (N, k, 1, 1)
    dy, dx = rows - cy, cols - cx                          # (N, k, size, 1), (N, k, 1, size)
    inside = {
        "circle": dy ** 2 + dx ** 2 <= radius ** 2,
        "square": (dy.abs() <= radius) & (dx.abs() <= radius),
        "triangle": (dy.abs() <= radius) & (2 * dx.abs() <= dy + radius),
    }
    masks = torch.zeros(torch.broadcast_shapes(dy.shape, dx.shape), dtype=torch.bool)
    for i, name in enumerate(SHAPES):
        masks |= inside[name] & (shapes[..., None, None] == i)
    palette = torch.tensor(list(COLOURS.values()))                       # (n_colours, 3)
    images = torch.full((centres.shape[0], 3, size, size), BACKGROUND)
    for k in range(centres.shape[1]):
        paint = palette[colours[:, k]][:, :, None, None]                 # (N, 3, 1, 1)
        images = torch.where(masks[:, k, None], paint, images)
    return images, masks


def make_scenes(n: int, generator: torch.Generator | None = None, *, size: int = 48,
                radius: int = 6, colours=None, relations=RELATIONS) -> Scenes:
    """n scenes of two objects. colours: None (any two different colours; object 0, the
    caption's subject, is the one whose colour comes first in ``COLOURS``, so that the caption
    is a function of the picture) or a pair of names that every scene uses, object 0 the first;
    relations: those the captions may use (the positions are redrawn until one fits).
    Deterministic for a seeded ``generator``."""
    _check_scenes(n, size, radius, colours, relations)
    names = list(COLOURS)
    colour_idx, shape_idx, centres, captions = [], [], [], []
    for _ in range(n):
        if colours is None:
            pair = sorted(torch.randperm(len(names), generator=generator)[:2].tolist())
        else:
            pair = [names.index(c) for c in colours]
        kinds = torch.randint(len(SHAPES), (2,), generator=generator).tolist()
        (r0, c0), (r1, c1) = _draw_positions(generator, size, radius, relations)
        colour_idx.append(pair)
        shape_idx.append(kinds)
        centres.append([[r0, c0], [r1, c1]])
        captions.append(["a", names[pair[0]], SHAPES[kinds[0]], *_relation(r0 - r1, c0 - c1).split(),
                         "a", names[pair[1]], SHAPES[kinds[1]]])
    colour_t, shape_t = torch.tensor(colour_idx), torch.tensor(shape_idx)
    centre_t = torch.tensor(centres)
    images, masks = render(colour_t, shape_t, centre_t, size, radius)
    return Scenes(images, colour_t, shape_t, centre_t, masks, captions)


def left_of(scenes: Scenes) -> torch.Tensor:
    """(N,) True where object 0 lies left of object 1 (its centre in a smaller column)."""
    return scenes.centres[:, 0, 1] < scenes.centres[:, 1, 1]


def cell_shares(masks: torch.Tensor, grid: int) -> torch.Tensor:
    """The share of each of grid x grid cells that each object covers: masks (N, k, size, size)
    -> (N, k, grid * grid), cells in row-major order (as a CNN's feature grid or a ViT's
    patches flatten). size must be a multiple of grid."""
    size = masks.shape[-1]
    if size % grid:
        raise ValueError(f"grid={grid} must divide the image size {size}")
    return F.avg_pool2d(masks.float(), size // grid).flatten(-2)


def caption_loss(model, images, captions, caption_lens, bos: int, penalty: float = 1.0):
    """A captioner's (``captioning.Captioner``) training loss: the masked cross-entropy of the
    teacher-forced caption plus ``penalty`` times the doubly stochastic penalty. captions (B, n)
    end in <eos>; caption_lens (B,) count it. Returns (loss, cross-entropy alone, detached)."""
    logits = model(images, decoder_input(captions, bos))
    ce = masked_cross_entropy(logits, captions, caption_lens)
    reg = doubly_stochastic_penalty(model.decoder.attention_weights, caption_lens)
    return ce + penalty * reg, ce.detach()
