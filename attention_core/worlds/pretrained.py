"""Trained models that ship with the book: one recipe per model, and the one command that
writes them.

* ``plain`` and ``attention``: chapter 4's two models, the GRU encoder-decoder without and
  with attention, with what chapter 4 records after every epoch. Chapter 4 loads them unless
  the reader asks it to train them (``RETRAIN``), which takes minutes.
* ``bahdanau``: chapter 4's attention model again, the same recipe trained on another CPU:
  the model that chapter 4's page runs in the reader's browser (``book.translator``) and whose
  mistakes on typed sentences chapter 4 shows, and the one chapter 8 sets beside its
  Transformer. It differs from ``attention`` only by rounding, which over a few hundred
  updates is enough for different mistakes on sentences unlike the training data.
* ``transformer``: chapter 8's Transformer, which chapter 8 loads unless asked to train it, and
  which its page runs in the browser.
* ``captioners``: chapter 10's soft and hard captioners, trained from one start side by side,
  with their losses; chapter 10 loads them unless asked to train them.
* ``fetch``: chapter 7's seven fetch models (1, 2, 4 and 8 heads; 8 heads sharing 2 or 1
  key/value heads; 4 heads sharing 1), with their loss histories; chapter 7 loads them unless
  asked to train them.
* ``lengths``: chapter 6's six look-back models, one per way of giving positions (none,
  sinusoidal, learned, RoPE at bases 10000 and 100, ALiBi), with their loss histories; chapter
  6 loads them unless asked to train them. ``lengths_long``: RoPE at base 10000 and ALiBi again,
  trained three times as long.

Each has a ``Recipe`` in ``RECIPES``: the arguments its chapter builds and trains it with,
which the chapter, this module, ``bench/recipes.py`` and the tests all read. The weights are
written by one command, and by nothing else (the tests only read them):

    python -m attention_core.worlds.pretrained name [name ...]

It takes no default: rewriting ``bahdanau`` or ``transformer`` on another CPU changes the
mistakes on typed sentences that chapters 4 and 8 show and assert.

``write`` builds the recipe's data (chapter 4's splits, which chapter 8 shares; chapter 10's
scenes; the fetch task draws its own), trains the models as their chapter does (``train``:
same initialisation, batches, learning rate and schedule) and saves, with the weights, the
vocabularies they belong to, the loss histories, the training time and the machine it ran on.
Chapter 4's models also keep what chapter 4 records after every epoch: the exact match on its
1,000 validation sentences (and the seconds that scoring took, which the training time leaves
out). A model trained this way on another CPU differs from the shipped one only by rounding
(its chapter's bands hold for both); on the same CPU and thread count it is the same, bit for
bit.
"""
from __future__ import annotations

import dataclasses
import platform
import time
from pathlib import Path

import torch
from torch import nn

from ..captioning import Captioner, HardAttentionDecoder
from ..contracts import contract, instance_of, one_of, require
from ..seq2seq import EncoderDecoder, make_model
from ..transformer import make_transformer
from .corpus import make_splits
from .fetch import FetchModel, FetchTask, train_fetch_all
from .lengths import LookbackModel, train_lookback_all
from .metrics import exact_match
from .shapes import make_scenes, train_captioners
from .training import WarmupLinearDecay
from .translation import train_seq2seq, translate
from .vocab import TranslationData, Vocab

DIRECTORY = Path(__file__).with_name("trained")


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How a chapter builds and trains a model that the book ships.

    kind: "plain" or "attention" (``seq2seq.make_model``'s kind), "transformer"
    (``transformer.make_transformer``), "captioners" (a soft and a hard ``Captioner``) or
    "fetch" (one ``FetchModel`` per entry of ``heads``) or "lengths" (one ``LookbackModel`` per
    entry of ``positions``). model: the constructor's arguments besides the vocabulary sizes
    (and the heads, or the positions); training: the training function's arguments
    (``train_seq2seq``, ``train_captioners``, ``train_fetch_all``, ``train_lookback_all``)
    besides the data, the seed and the device. seed: ``torch.manual_seed`` before each model is
    built, and the seed of the batches' generator. file: where the weights lie, under ``trained/``.
    """

    kind: str
    file: str
    model: dict
    training: dict
    seed: int = 0
    heads: tuple = ()          # fetch: each model's (num_heads, num_kv_heads)
    positions: tuple = ()      # lengths: each model's (positions, rope_base or None)
    validated: bool = False    # chapter 4 scores its validation split after every epoch


CHAPTER_4 = dict(model=dict(embed_size=32, num_hiddens=128),
                 training=dict(epochs=4, batch_size=128, lr=0.01))
RECIPES = {
    "plain": Recipe("plain", "plain_chapter4.pt", **CHAPTER_4, validated=True),
    "attention": Recipe("attention", "attention_chapter4.pt", **CHAPTER_4, validated=True),
    "bahdanau": Recipe("attention", "bahdanau_chapter4.pt", **CHAPTER_4),
    "transformer": Recipe("transformer", "transformer_chapter8.pt",
                          model=dict(num_hiddens=64, ffn_num_hiddens=128, num_heads=4,
                                     num_blks=2),
                          training=dict(epochs=10, batch_size=128, lr=0.005,
                                        schedule=WarmupLinearDecay(150))),
    "captioners": Recipe("captioners", "captioners_chapter10.pt",
                         model=dict(embed_size=32, num_hiddens=96, image_size=32),
                         training=dict(epochs=4, batch_size=32, lr=0.01)),
    "fetch": Recipe("fetch", "fetch_chapter7.pt",
                    model=dict(task=FetchTask(n_items=8, n_labels=16), num_hiddens=32),
                    training=dict(),
                    heads=((1, 1), (2, 2), (4, 4), (8, 8), (8, 2), (8, 1), (4, 1))),
    "lengths": Recipe("lengths", "lengths_chapter6.pt",
                      model=dict(vocab_size=16, num_hiddens=64, num_heads=4, num_blks=2,
                                 max_len=128),
                      training=dict(steps=400, batch=64, length=32, offset=3, lr=3e-3),
                      positions=(("none", None), ("sinusoidal", None), ("learned", None),
                                 ("rope", 10000.0), ("rope", 100.0), ("alibi", None))),
    "lengths_long": Recipe("lengths", "lengths_long_chapter6.pt",
                           model=dict(vocab_size=16, num_hiddens=64, num_heads=4, num_blks=2,
                                      max_len=128),
                           training=dict(steps=1200, batch=64, length=32, offset=3, lr=3e-3),
                           positions=(("rope", 10000.0), ("alibi", None))),
}
FAMILIES = ("fetch", "lengths")  # kinds whose file holds several models, each with a history
NAMES = tuple(RECIPES)
TRANSLATION = ("plain", "attention", "transformer")  # the kinds that translate


def recipe_of(name) -> Recipe:
    """``RECIPES[name]``, or ``name`` itself when it is a Recipe (a variant of one)."""
    return name if isinstance(name, Recipe) else RECIPES[name]


a_recipe = require(lambda name: isinstance(name, Recipe) or name in RECIPES,
                   lambda name: f"name must be one of {sorted(RECIPES)} or a Recipe, got {name!r}")


def chapter4_corpus():
    """Chapter 4's splits and vocabularies: (TranslationData, train, valid, test)."""
    train, valid, test = make_splits(n_train=20000, n_valid=1000, n_test=1000,
                                     generator=torch.Generator().manual_seed(0))
    return TranslationData(train), train, valid, test


def chapter10_scenes():
    """Chapter 10's training scenes and their vocabulary: (scenes, vocab)."""
    scenes = make_scenes(8000, torch.Generator().manual_seed(0), size=32, radius=4)
    return scenes, Vocab(scenes.captions)


# ---- the models of a recipe, and their names in its file -----------------------------------
@contract(where=[a_recipe])
def build(name, vocab=None, *, device=None) -> list[nn.Module]:
    """The models of ``name``'s recipe (a name of ``RECIPES`` or a Recipe), freshly initialised
    as their chapter initialises them, each after ``torch.manual_seed(seed)``: one translation
    model for the vocabularies of ``vocab`` (a TranslationData); the soft and the hard
    captioner for ``vocab`` (a Vocab), the hard one starting from the soft one's weights; or
    one fetch model per entry of ``heads``, or one look-back model per entry of ``positions``
    (no vocabulary)."""
    recipe = recipe_of(name)
    torch.manual_seed(recipe.seed)
    if recipe.kind == "captioners":
        soft = Captioner(len(vocab), **recipe.model)
        hard = Captioner(len(vocab), **recipe.model, hard=True)
        hard.load_state_dict(soft.state_dict())
        models = [soft, hard]
    elif recipe.kind == "fetch":
        models = []
        for h, h_kv in recipe.heads:
            torch.manual_seed(recipe.seed)
            models.append(FetchModel(**recipe.model, num_heads=h, num_kv_heads=h_kv))
    elif recipe.kind == "lengths":
        models = []
        for positions, base in recipe.positions:
            torch.manual_seed(recipe.seed)
            models.append(LookbackModel(positions, **recipe.model,
                                        **({"rope_base": base} if base else {})))
    elif recipe.kind == "transformer":
        models = [make_transformer(len(vocab.src_vocab), len(vocab.tgt_vocab), **recipe.model)]
    else:
        models = [make_model(recipe.kind, len(vocab.src_vocab), len(vocab.tgt_vocab),
                             **recipe.model)]
    return [m.to(device or "cpu") for m in models]


def _key(recipe: Recipe, model) -> str:
    """The name of ``model``'s weights in its recipe's file."""
    if recipe.kind == "captioners":
        return "hard" if isinstance(model.decoder, HardAttentionDecoder) else "soft"
    if recipe.kind == "fetch":
        return f"heads={model.attention.num_heads},kv_heads={model.attention.num_kv_heads}"
    if recipe.kind == "lengths":
        return _lengths_key(model.positions, model.rope_base)
    return "model"


def _lengths_key(positions: str, base) -> str:
    return f"positions={positions}" + (f",base={base:g}" if positions == "rope" else "")


def _keys(recipe: Recipe) -> list[str]:
    """The names of the weights its file holds, in the order ``build`` makes the models."""
    if recipe.kind == "captioners":
        return ["soft", "hard"]
    if recipe.kind == "fetch":
        return [f"heads={h},kv_heads={h_kv}" for h, h_kv in recipe.heads]
    if recipe.kind == "lengths":
        return [_lengths_key(positions, base) for positions, base in recipe.positions]
    return ["model"]


def _stored(recipe: Recipe, record: dict) -> dict:
    """{key: (state dict, history)} of a record as ``write`` saves it."""
    if recipe.kind == "captioners":
        return {"soft": (record["soft"], record["losses"]),
                "hard": (record["hard"], record["hard_losses"])}
    if recipe.kind in FAMILIES:
        return {k: (state_dict, record["histories"][k])
                for k, state_dict in record["state_dicts"].items()}
    return {"model": (record["state_dict"], record["losses"])}


def _record(recipe: Recipe, models, histories) -> dict:
    """The weights and histories as ``write`` saves them (``_stored`` reads them back)."""
    if recipe.kind == "captioners":
        (soft, hard), (losses, hard_losses) = models, histories
        return {"soft": soft.state_dict(), "hard": hard.state_dict(), "losses": losses,
                "hard_losses": hard_losses}
    if recipe.kind in FAMILIES:
        keys = [_key(recipe, m) for m in models]
        return {"state_dicts": {k: m.state_dict() for k, m in zip(keys, models, strict=True)},
                "histories": dict(zip(keys, histories, strict=True))}
    (model,), (losses,) = models, histories
    return {"state_dict": model.state_dict(), "losses": losses}


def _vocabularies(recipe: Recipe, vocab) -> dict:
    """The token lists a record keeps of the vocabularies its models read."""
    if recipe.kind == "captioners":
        return {"itos": vocab.itos}
    if recipe.kind in FAMILIES:
        return {}
    return {"src_itos": vocab.src_vocab.itos, "tgt_itos": vocab.tgt_vocab.itos}


# ---- training, loading, writing ------------------------------------------------------------
@contract(where=[a_recipe])
def train(name, data=None, *, device=None, progress: bool = True, on_epoch_end=None):
    """Train ``name``'s models (a name of ``RECIPES`` or a Recipe) exactly as their chapter
    does: (models, histories, seconds), one history per model.

    data: for a translation recipe (TranslationData, training pairs), as ``chapter4_corpus``
    gives them; for the captioners (scenes, vocab), as ``chapter10_scenes`` gives them; for
    the fetch and look-back models None (they draw their own batches). on_epoch_end: passed to
    ``train_seq2seq`` (it leaves the trained model unchanged); its time counts in the seconds.
    """
    recipe = recipe_of(name)
    if recipe.kind == "captioners":
        scenes, vocab = data
        models = build(recipe, vocab, device=device)
        torch.manual_seed(recipe.seed)  # the hard captioner's draws of cells
        start = time.perf_counter()
        histories = train_captioners(models, scenes, vocab, seed=recipe.seed, progress=progress,
                                     **recipe.training)
    elif recipe.kind == "fetch":
        models = build(recipe, device=device)
        start = time.perf_counter()
        histories = train_fetch_all(models, seed=recipe.seed, device=device, progress=progress,
                                    **recipe.training)
    elif recipe.kind == "lengths":
        models = build(recipe, device=device)
        start = time.perf_counter()
        histories = train_lookback_all(models, seed=recipe.seed, device=device,
                                       progress=progress, **recipe.training)
    else:
        vocab, pairs = data
        models = build(recipe, vocab, device=device)
        start = time.perf_counter()
        histories = [train_seq2seq(models[0], vocab, pairs,
                                   generator=torch.Generator().manual_seed(recipe.seed),
                                   device=device, progress=progress, on_epoch_end=on_epoch_end,
                                   **recipe.training)]
    return models, histories, time.perf_counter() - start


def _path(name, directory) -> Path:
    return Path(directory or DIRECTORY) / recipe_of(name).file


@contract(name=one_of(RECIPES))
def shipped_record(name: str, *, directory: Path | None = None) -> dict:
    """What ``write`` saved for ``name``: the weights, the loss histories, the vocabularies'
    tokens, the training seconds and the machine, as the recipe's kind keeps them (a
    translation model: state_dict, losses, src_itos, tgt_itos, and for the ``validated``
    recipes valid_em, one exact match per epoch, and valid_seconds)."""
    return torch.load(_path(name, directory), map_location="cpu", weights_only=True)


def _models_fit(name, models) -> str:
    """Why ``models`` cannot take ``name``'s shipped weights ("" if they can)."""
    recipe, models = RECIPES[name], list(models)
    cls = {"captioners": Captioner, "fetch": FetchModel,
           "lengths": LookbackModel}.get(recipe.kind, EncoderDecoder)
    for model in models:  # every model is checked before any is loaded
        if not isinstance(model, cls):
            return f"models must be {cls.__name__}s, got {type(model).__name__}"
        if recipe.kind == "fetch":
            width, task = model.embed_query.out_features, recipe.model["task"]
            if model.task != task or width != recipe.model["num_hiddens"]:
                return (f"{recipe.file} holds models of {task} and width "
                        f"{recipe.model['num_hiddens']}, got {model.task} and width {width}")
        if _key(recipe, model) not in _keys(recipe):
            return (f"{recipe.file} has no model with {_key(recipe, model)}; it has "
                    f"{', '.join(_keys(recipe))}")
    return "" if models else "models must be a non-empty sequence of models"


def _vocabularies_fit(name, models, vocab, directory) -> str:
    """Why the shipped weights of ``name`` do not belong to ``vocab`` ("" if they do)."""
    recipe = RECIPES[name]
    if recipe.kind in FAMILIES or not list(models) or _models_fit(name, models):
        return ""
    record = torch.load(_path(name, directory), map_location="cpu", weights_only=True,
                        mmap=True)
    ours = _vocabularies(recipe, vocab)
    for key, what in (("src_itos", "src vocabulary"), ("tgt_itos", "tgt vocabulary"),
                      ("itos", "vocabulary")):
        if key in ours and record[key] != ours[key]:
            return (f"{recipe.file} was trained with another {what} ({len(record[key])} "
                    f"tokens) than the data's ({len(ours[key])} tokens): rewrite it with "
                    f"`python -m {__name__} {name}`")
    return ""


@contract(name=one_of(RECIPES), where=[
    require(lambda name, models: not _models_fit(name, models), _models_fit),
    require(lambda name, models, vocab, directory: not _vocabularies_fit(name, models, vocab,
                                                                         directory),
            _vocabularies_fit)])
def load(name: str, models, vocab=None, *, directory: Path | None = None) -> list:
    """Load ``name``'s shipped weights into ``models`` (a sequence of models built with its
    recipe's arguments, as ``build`` builds them: each gets the weights of the model it is,
    found by ``_key``), set them to evaluation mode, and return their loss histories in order.
    vocab: what the models read, as for ``build`` (the shipped weights must have been trained
    with it); None for the fetch and look-back models. A list with a model the file does not hold is
    refused before any model is loaded."""
    stored = _stored(RECIPES[name], shipped_record(name, directory=directory))
    histories = []
    for model in models:
        state_dict, history = stored[_key(RECIPES[name], model)]
        model.load_state_dict(state_dict)
        model.eval()
        histories.append(history)
    return histories


@contract(name=one_of(RECIPES), data=instance_of(TranslationData))
def load_model(name: str, data, *, device=None, directory: Path | None = None):
    """A shipped translation model, built and loaded for the vocabularies of ``data``:
    (model, losses, seconds), the losses and training seconds being those recorded when the
    weights were written."""
    (model,) = build(name, data)
    (losses,) = load(name, [model], data, directory=directory)
    return model.to(device or "cpu"), losses, shipped_record(name, directory=directory)["seconds"]


def _machine() -> dict:
    return {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "threads": torch.get_num_threads(), "torch": str(torch.__version__)}


@contract(name=one_of(RECIPES))
def write(name: str, *, directory: Path | None = None) -> Path:
    """Train ``name``'s models on their chapter's data and save them (see the module's
    docstring)."""
    recipe = RECIPES[name]
    scored = {"valid_em": [], "valid_seconds": 0.0}
    on_epoch_end = None
    if recipe.kind == "captioners":
        data = chapter10_scenes()
        vocab = data[1]
    elif recipe.kind in FAMILIES:
        data = vocab = None
    else:
        vocab, train_pairs, valid, _ = chapter4_corpus()
        data = vocab, train_pairs

        def score(epoch, model):  # chapter 4's: the validation split's exact match
            start = time.perf_counter()
            scored["valid_em"].append(exact_match(translate(model, vocab, valid),
                                                  [p.target for p in valid]))
            scored["valid_seconds"] += time.perf_counter() - start

        on_epoch_end = score if recipe.validated else None
    models, histories, seconds = train(name, data, on_epoch_end=on_epoch_end)
    record = {**_record(recipe, models, histories), "seconds": seconds,
              **_vocabularies(recipe, vocab), **_machine()}
    if recipe.validated:  # the training time without the scoring
        record.update(scored, seconds=seconds - scored["valid_seconds"])
    path = _path(name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(record, path)
    return path


if __name__ == "__main__":
    import sys

    names = sys.argv[1:]
    if not names or set(names) - set(RECIPES):
        sys.exit(f"usage: python -m attention_core.worlds.pretrained name [name ...], names among "
                 f"{', '.join(RECIPES)}")
    for name in names:
        print(f"{name}: wrote {write(name)}")
