"""Shapes: small generated pictures with captions, for attention over images (chapter 10).

Each scene is a size x size RGB image on a light background with two objects, each a coloured
circle, square or triangle of the same radius, the two of different colours and apart. Its
caption names both, the one whose colour comes first in red, green, blue, yellow first, and
where it is relative to the other, along the axis on which they are further apart: "a red
circle left of a blue square". Everything is drawn from a
``torch.Generator``, so a seed gives the same scenes on every machine, and nothing is
downloaded. A scene also knows where its objects are: their centres and their pixel masks,
against which one can measure how much of a model's attention falls on the object it names.
``train_captioner`` trains a ``captioning.Captioner`` on them (``caption_loss``), ``describe``
captions them and ``attention_on_objects`` scores where it looked; ``train_classifier`` trains
a ``vision.VisionTransformer`` on a question about them, such as ``left_of``.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import torch
from torch.nn import functional as F

from ..captioning import HardAttentionDecoder, doubly_stochastic_penalty
from ..contracts import contract, positive, positive_int, require, tensor
from ..decoding import decoder_input, greedy_decode
from ..variants import reinforce_loss
from .side_by_side import side_by_side
from .training import WarmupLinearDecay, fit, linear_decay
from .translation import masked_cross_entropy
from .vocab import pad_batch

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


def _relation(d_row: float, d_col: float) -> str:
    """Where object 0 is relative to object 1, d = centre 0 - centre 1 (rows grow downwards)."""
    if abs(d_row) > abs(d_col):
        return "above" if d_row < 0 else "below"
    return "left of" if d_col < 0 else "right of"


def placement_fits(centre0, centre1, radius: int, relations=RELATIONS) -> bool:
    """Whether two objects of ``radius`` at centres (row, column) make a valid scene:
    apart by at least 2 radius + 4 pixels on one axis and 1.5 times as far on it as on the
    other (so the relation is plain to see), object 0 in one of ``relations`` to object 1."""
    (r0, c0), (r1, c1) = centre0, centre1
    near, far = sorted((abs(r0 - r1), abs(c0 - c1)))
    return far >= 2 * radius + 4 and far >= 1.5 * near and _relation(r0 - r1, c0 - c1) in relations


def _draw_positions(generator, size: int, radius: int, relations) -> tuple:
    """Two centres that ``placement_fits``, each at least radius + 1 from the border."""
    low, high = radius + 1, size - radius - 1
    while True:
        centre0, centre1 = torch.randint(low, high + 1, (2, 2), generator=generator).tolist()
        if placement_fits(centre0, centre1, radius, relations):
            return tuple(centre0), tuple(centre1)


@contract(size=positive_int, radius=positive_int)
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


def _two_colours(colours) -> bool:
    return colours is None or (len(colours) == 2 and colours[0] != colours[1]
                               and all(c in COLOURS for c in colours))


@contract(n=positive_int, size=positive_int, radius=positive_int, where=[
    require(lambda size, radius: size >= 6 * radius + 6,
            lambda size, radius: f"size={size} leaves no room for two objects of "
            f"radius={radius}: size must be at least 6 * radius + 6 = {6 * radius + 6}"),
    require(lambda colours: _two_colours(colours),
            lambda colours: f"colours must be two different names of {list(COLOURS)}, got "
            f"{colours!r}"),
    require(lambda relations: bool(relations) and all(r in RELATIONS for r in relations),
            lambda relations: f"relations must be a non-empty subset of {RELATIONS}, got "
            f"{relations!r}")])
def make_scenes(n: int, generator: torch.Generator | None = None, *, size: int = 48,
                radius: int = 6, colours=None, relations=RELATIONS) -> Scenes:
    """n scenes of two objects. colours: None (any two different colours; object 0, the
    caption's subject, is the one whose colour comes first in ``COLOURS``, so that the caption
    is a function of the picture) or a pair of names that every scene uses, object 0 the first;
    relations: those the captions may use (the positions are redrawn until one fits).
    Deterministic for a seeded ``generator``."""
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
        relation = _relation(r0 - r1, c0 - c1).split()
        captions.append(["a", names[pair[0]], SHAPES[kinds[0]], *relation,
                         "a", names[pair[1]], SHAPES[kinds[1]]])
    colour_t, shape_t = torch.tensor(colour_idx), torch.tensor(shape_idx)
    centre_t = torch.tensor(centres)
    images, masks = render(colour_t, shape_t, centre_t, size, radius)
    return Scenes(images, colour_t, shape_t, centre_t, masks, captions)


def left_of(scenes: Scenes) -> torch.Tensor:
    """(N,) True where object 0 lies left of object 1 (its centre in a smaller column)."""
    return scenes.centres[:, 0, 1] < scenes.centres[:, 1, 1]


@contract(masks=tensor("N k size size", "bool"), grid=positive_int,
          where=[require(lambda masks, grid: masks.shape[-1] % grid == 0,
                         lambda masks, grid: f"grid={grid} must divide the image size "
                         f"{masks.shape[-1]}")])
def cell_shares(masks: torch.Tensor, grid: int) -> torch.Tensor:
    """The share of each of grid x grid cells that each object covers: masks (N, k, size, size)
    -> (N, k, grid * grid), cells in row-major order (as a CNN's feature grid or a ViT's
    patches flatten). size must be a multiple of grid."""
    size = masks.shape[-1]
    return F.avg_pool2d(masks.float(), size // grid).flatten(-2)


def caption_loss(model, images, captions, caption_lens, bos: int, penalty: float = 1.0):
    """A captioner's (``captioning.Captioner``) training loss: the masked cross-entropy of the
    teacher-forced caption plus ``penalty`` times the doubly stochastic penalty. captions (B, n)
    end in <eos>; caption_lens (B,) count it. Returns (loss, cross-entropy alone, detached).

    With hard attention the chosen cells have no gradient, so the loss adds the REINFORCE
    surrogate of chapter 3: each caption's mean cross-entropy, less the batch's mean (the
    baseline), times the log-probability of the cells its words read."""
    logits = model(images, decoder_input(captions, bos))
    ce = masked_cross_entropy(logits, captions, caption_lens)
    loss = ce + penalty * doubly_stochastic_penalty(model.decoder.attention_weights, caption_lens)
    if isinstance(model.decoder, HardAttentionDecoder):
        real = torch.arange(captions.shape[1], device=captions.device) < caption_lens[:, None]
        per_caption = (F.cross_entropy(logits.transpose(1, 2), captions, reduction="none")
                       * real).sum(1) / caption_lens                          # (B,)
        log_prob = (model.decoder.log_probs * real).sum(1)                   # (B,)
        loss = loss + reinforce_loss(per_caption, log_prob, per_caption.detach().mean())
    return loss, ce.detach()


def caption_tensors(scenes: Scenes, vocab):
    """Captions as (tokens (N, n) ending in <eos>, padded; lengths (N,) counting the <eos>)."""
    return pad_batch([vocab.encode(c) for c in scenes.captions], vocab)


@contract(epochs=positive_int, batch_size=positive_int, lr=positive)
def train_captioner(model, scenes: Scenes, vocab, *, epochs: int = 3, batch_size: int = 32,
                    lr: float = 0.01, penalty: float = 0.0, clip: float = 1.0,
                    generator: torch.Generator | None = None, progress: bool = True,
                    on_step: Callable[[], None] | None = None) -> list:
    """Teacher-forced training on ``scenes`` with ``caption_loss``, through ``fit``: Adam, the
    rate falling linearly from ``lr`` to 0, gradients clipped to norm ``clip``. Batches come
    from ``generator``. The progress bar (tqdm) is display only; ``on_step``, if given, is
    called after every step. Returns each epoch's mean cross-entropy (the penalty not
    included)."""
    device = next(model.parameters()).device
    captions, lens = caption_tensors(scenes, vocab)

    def batches():  # an order per epoch, drawn when the epoch starts
        return torch.randperm(len(scenes), generator=generator).split(batch_size)

    def loss(model, rows):
        longest = int(lens[rows].max())
        return caption_loss(model, scenes.images[rows].to(device),
                            captions[rows, :longest].to(device), lens[rows].to(device),
                            vocab.bos, penalty)

    return fit(model, batches, loss, steps_per_epoch=-(-len(scenes) // batch_size),
               epochs=epochs, lr=lr, schedule=linear_decay, clip=clip, progress=progress,
               on_step=None if on_step is None else lambda step, ce: on_step())


@contract(epochs=positive_int, batch_size=positive_int)
def train_captioners(models: Sequence, scenes: Scenes, vocab, *, seed: int = 0,
                     epochs: int = 3, batch_size: int = 32, workers: int | None = None,
                     progress: bool = True, **kwargs) -> list[list]:
    """Train independent captioners side by side (``side_by_side``), each as
    ``train_captioner(model, scenes, vocab, generator=torch.Generator().manual_seed(seed),
    ...)`` trains it alone on one thread, and return their histories in order. At most one of
    them may draw from the global generator (a hard-attention captioner's samples); the caller
    seeds it. One progress bar counts the steps of all of them."""
    models = list(models)
    steps = epochs * -(-len(scenes) // batch_size)

    def training(model):
        return lambda tick: train_captioner(
            model, scenes, vocab, epochs=epochs, batch_size=batch_size,
            generator=torch.Generator().manual_seed(seed), progress=False, on_step=tick, **kwargs)

    return side_by_side([training(m) for m in models], total=steps * len(models),
                        workers=workers, progress=progress)


@contract(max_len=positive_int)
def describe(model, scenes: Scenes, vocab, max_len: int = 10):
    """Greedy captions of ``scenes`` as word lists, and each word's attention over the grid
    (N, steps, cells) on the CPU."""
    images = scenes.images.to(next(model.parameters()).device)
    tokens, weights = greedy_decode(model, images, None, vocab.bos, vocab.eos, max_len=max_len)
    return [vocab.decode(row) for row in tokens.tolist()], weights.cpu()


@contract(weights="N steps cells", grid=positive_int)
def attention_on_objects(weights, scenes: Scenes, grid: int):
    """How much of the attention of the words that name an object (its colour and its shape)
    falls on the grid cells that object touches, averaged over those words; and the same for
    attention spread evenly over the grid (chance: the share of cells the object touches).
    weights (N, steps, grid * grid), step t the attention while writing word t of the
    caption (teacher-forced or greedy with the right caption). Returns (on, chance) floats."""
    touched = cell_shares(scenes.masks, grid) > 0                        # (N, 2, cells)
    on, chance = [], []
    for b, words in enumerate(scenes.captions):
        for k, steps in ((0, (1, 2)), (1, (len(words) - 2, len(words) - 1))):
            for t in steps:
                on.append(weights[b, t][touched[b, k]].sum())
                chance.append(touched[b, k].float().mean())
    return torch.stack(on).mean().item(), torch.stack(chance).mean().item()


@contract(images="N C H W", labels=tensor("N_labels", "int"), epochs=positive_int,
          batch_size=positive_int, lr=positive, warmup=positive_int,
          where=[require(lambda images, labels: images.shape[0] == labels.shape[0],
                         lambda images, labels: f"images {tuple(images.shape)} and labels "
                         f"{tuple(labels.shape)} must hold the same number of examples")])
def train_classifier(model, images, labels, *, epochs: int = 2, batch_size: int = 64,
                     lr: float = 0.002, weight_decay: float = 0.05, warmup: int = 50,
                     generator: torch.Generator | None = None, progress: bool = True) -> list:
    """Cross-entropy training of an image classifier (a ``vision.VisionTransformer``) through
    ``fit``, with AdamW, the rate rising linearly over ``warmup`` steps, then falling linearly
    to 0. Batches come from ``generator``; the progress bar is display only. Returns each
    epoch's mean loss."""
    device = next(model.parameters()).device

    def batches():  # an order per epoch, drawn when the epoch starts
        return torch.randperm(images.shape[0], generator=generator).split(batch_size)

    def loss(model, rows):
        return F.cross_entropy(model(images[rows].to(device)), labels[rows].to(device))

    return fit(model, batches, loss, steps_per_epoch=-(-images.shape[0] // batch_size),
               epochs=epochs, lr=lr,
               optimizer=functools.partial(torch.optim.AdamW, weight_decay=weight_decay),
               schedule=WarmupLinearDecay(warmup), progress=progress)
