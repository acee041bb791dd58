"""Trained models that ship with the book, and the one command that writes them.

* ``plain`` and ``attention``: chapter 4's two models, the GRU encoder-decoder without and
  with attention, with what chapter 4 records after every epoch. Chapter 4 loads them unless
  the reader asks it to train them (``RETRAIN``), which takes minutes on a 2-core CPU.
* ``bahdanau``: chapter 4's attention model again, the same recipe trained on another CPU
  (2026-11-25): the model that chapter 4's page runs in the reader's browser
  (``book.translator``) and whose mistakes on typed sentences chapter 4 shows, and the one
  chapter 8 sets beside its Transformer. It differs from ``attention`` only by rounding, which
  over 628 updates is enough for different mistakes on sentences unlike the training data.
* ``transformer``: chapter 8's Transformer, which chapter 8 loads unless asked to train it, and
  which its page runs in the browser.
* ``captioners``: chapter 10's soft and hard captioners, trained from one start side by side,
  with their losses; chapter 10 loads them unless asked to train them.
* ``fetch``: chapter 7's seven fetch models (1, 2, 4 and 8 heads; 8 heads sharing 2 or 1
  key/value heads; 4 heads sharing 1), with their loss histories; chapter 7 loads them unless
  asked to train them.

They are written by one command, and by nothing else (the tests only read them):

    python -m attention_core.worlds.pretrained name [name ...]

It takes no default: rewriting ``bahdanau`` or ``transformer`` on another CPU changes the
mistakes on typed sentences that chapters 4 and 8 show and assert.

It builds the chapters' corpus (chapter 4's splits and seeds, which chapter 8 shares), trains
the model with its chapter's call to ``train_seq2seq`` (same initialisation, batches, learning
rate and schedule) and saves, with the weights, the vocabularies they belong to, the loss of
each epoch, the training time and the machine it ran on. Chapter 4's models also keep what
chapter 4 records after every epoch: the exact match on its 1,000 validation sentences (and
the seconds that scoring took, which the training time leaves out). A model trained this way
on another CPU differs from the shipped one only by rounding (its chapter's bands hold for
both); on the same CPU and thread count it is the same, bit for bit.
"""
from __future__ import annotations

import platform
import time
from pathlib import Path

import torch

from ..captioning import Captioner
from ..seq2seq import make_model
from ..transformer import make_transformer
from .fetch import FetchModel, FetchTask, train_fetch_all
from .shapes import make_scenes, train_captioners
from .translation import (TranslationData, Vocab, exact_match, make_splits, train_seq2seq,
                          translate, warmup_linear_decay)

DIRECTORY = Path(__file__).with_name("trained")

# name: (file, the model's constructor arguments, train_seq2seq's arguments), as the chapters
# have them; kind "transformer" is make_transformer, any other make_model's kind; "warmup" is
# warmup_linear_decay's argument, the schedule
RECIPES = {
    "plain": ("plain_chapter4.pt",
              dict(kind="plain", embed_size=32, num_hiddens=128),
              dict(epochs=4, batch_size=128, lr=0.01)),
    "attention": ("attention_chapter4.pt",
                  dict(kind="attention", embed_size=32, num_hiddens=128),
                  dict(epochs=4, batch_size=128, lr=0.01)),
    "bahdanau": ("bahdanau_chapter4.pt",
                 dict(kind="attention", embed_size=32, num_hiddens=128),
                 dict(epochs=4, batch_size=128, lr=0.01)),
    "transformer": ("transformer_chapter8.pt",
                    dict(kind="transformer", num_hiddens=64, ffn_num_hiddens=128, num_heads=4,
                         num_blks=2),
                    dict(epochs=10, batch_size=128, lr=0.005, warmup=150)),
}
# the models that chapter 4 scores on its validation split after every epoch
VALIDATED = ("plain", "attention")
# chapter 10's two captioners: the file, Captioner's arguments, train_captioners' arguments
CAPTIONERS = ("captioners_chapter10.pt", dict(embed_size=32, num_hiddens=96, image_size=32),
              dict(seed=0, epochs=4, batch_size=32, lr=0.01))
# chapter 7's fetch models: the file, FetchModel's arguments, each model's (num_heads,
# num_kv_heads), train_fetch_all's arguments; chapter 7 builds each model after
# torch.manual_seed(0) and trains the first four in one call, the last three in another
FETCH = ("fetch_chapter7.pt", dict(task=FetchTask(n_items=8, n_labels=16), num_hiddens=32),
         ((1, 1), (2, 2), (4, 4), (8, 8), (8, 2), (8, 1), (4, 1)), dict(seed=0))
NAMES = (*RECIPES, "captioners", "fetch")


def _recipe(name: str):
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}, got {name!r}")
    return RECIPES[name]


def _check_vocabulary(path: Path, what: str, shipped: list, ours: list, name: str) -> None:
    """Refuse weights trained with another vocabulary than the one they are loaded for."""
    if shipped != ours:
        raise ValueError(f"{path.name} was trained with another {what} ({len(shipped)} tokens) "
                         f"than the data's ({len(ours)} tokens): rewrite it with "
                         f"`python -m {__name__} {name}`")


def _machine() -> dict:
    return {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "threads": torch.get_num_threads(), "torch": str(torch.__version__)}


def build_model(name: str, data):
    """``name``'s model, freshly initialised from the global generator, for ``data``'s vocabularies."""
    args = dict(_recipe(name)[1])
    kind = args.pop("kind")
    if kind == "transformer":
        return make_transformer(len(data.src_vocab), len(data.tgt_vocab), **args)
    return make_model(kind, len(data.src_vocab), len(data.tgt_vocab), **args)


def chapter4_corpus():
    """Chapter 4's splits and vocabularies: (TranslationData, train, valid, test)."""
    train, valid, test = make_splits(n_train=20000, n_valid=1000, n_test=1000,
                                     generator=torch.Generator().manual_seed(0))
    return TranslationData(train), train, valid, test


def train_model(name: str, data, pairs, *, device=None, progress: bool = True,
                on_epoch_end=None):
    """Train ``name``'s model on ``pairs`` exactly as its chapter does: (model, losses, seconds).
    on_epoch_end: passed to ``train_seq2seq`` (it leaves the trained model unchanged); its
    time counts in the seconds."""
    train_args = dict(_recipe(name)[2])
    if "warmup" in train_args:
        train_args["schedule"] = warmup_linear_decay(train_args.pop("warmup"))
    torch.manual_seed(0)
    model = build_model(name, data).to(device or "cpu")
    start = time.perf_counter()
    losses = train_seq2seq(model, data, pairs, generator=torch.Generator().manual_seed(0),
                           device=device, progress=progress, on_epoch_end=on_epoch_end,
                           **train_args)
    return model, losses, time.perf_counter() - start


def shipped_record(name: str, *, directory: Path | None = None) -> dict:
    """What ``write`` saved for ``name``: state_dict, src_itos, tgt_itos, losses, seconds, ...;
    for the ``VALIDATED`` models also valid_em (one exact match per epoch) and
    valid_seconds."""
    path = Path(directory or DIRECTORY) / _recipe(name)[0]
    return torch.load(path, map_location="cpu", weights_only=True)


def load_model(name: str, data, *, device=None, directory: Path | None = None):
    """The shipped model ``name``, for the vocabularies of ``data``: (model, losses, seconds),
    the losses and training seconds being those recorded when the weights were written."""
    record = shipped_record(name, directory=directory)
    path = Path(directory or DIRECTORY) / _recipe(name)[0]
    for side in ("src", "tgt"):
        _check_vocabulary(path, f"{side} vocabulary", record[f"{side}_itos"],
                          getattr(data, f"{side}_vocab").itos, name)
    model = build_model(name, data)
    model.load_state_dict(record["state_dict"])
    return model.to(device or "cpu").eval(), record["losses"], record["seconds"]


def write(name: str, *, directory: Path | None = None) -> Path:
    """Train ``name``'s model on its chapter's corpus and save it (see the module's docstring)."""
    data, train, valid, _ = chapter4_corpus()
    scored = {"valid_em": [], "valid_seconds": 0.0}

    def validate(epoch, model):  # chapter 4's: the validation split's exact match
        start = time.perf_counter()
        scored["valid_em"].append(exact_match(translate(model, data, valid),
                                              [p.target for p in valid]))
        scored["valid_seconds"] += time.perf_counter() - start

    validated = name in VALIDATED
    model, losses, seconds = train_model(name, data, train,
                                         on_epoch_end=validate if validated else None)
    record = {"state_dict": model.state_dict(), "losses": losses, "seconds": seconds,
              "src_itos": data.src_vocab.itos, "tgt_itos": data.tgt_vocab.itos, **_machine()}
    if validated:  # the training time without the scoring
        record.update(scored, seconds=seconds - scored["valid_seconds"])
    path = Path(directory or DIRECTORY) / _recipe(name)[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(record, path)
    return path


def chapter10_scenes():
    """Chapter 10's training scenes and their vocabulary: (scenes, vocab)."""
    scenes = make_scenes(8000, torch.Generator().manual_seed(0), size=32, radius=4)
    return scenes, Vocab(scenes.captions)


def train_captioner_pair(scenes, vocab, *, progress: bool = True):
    """Chapter 10's soft and hard captioners, trained as its training cell trains them: the
    hard one from the soft one's start, side by side, the hard one's draws of cells seeded.
    Returns (soft, hard, soft losses, hard losses, seconds)."""
    _, model_args, train_args = CAPTIONERS
    torch.manual_seed(0)
    soft = Captioner(len(vocab), **model_args)
    hard = Captioner(len(vocab), **model_args, hard=True)
    hard.load_state_dict(soft.state_dict())
    torch.manual_seed(0)
    start = time.perf_counter()
    losses, hard_losses = train_captioners([soft, hard], scenes, vocab, progress=progress,
                                           **train_args)
    return soft, hard, losses, hard_losses, time.perf_counter() - start


def load_captioners(soft, hard, vocab, *, directory: Path | None = None):
    """Load chapter 10's shipped captioners into ``soft`` and ``hard`` (Captioners built with
    its arguments, for ``vocab``); returns their loss histories (soft losses, hard losses)."""
    path = Path(directory or DIRECTORY) / CAPTIONERS[0]
    record = torch.load(path, map_location="cpu", weights_only=True)
    _check_vocabulary(path, "vocabulary", record["itos"], vocab.itos, "captioners")
    soft.load_state_dict(record["soft"])
    hard.load_state_dict(record["hard"])
    return record["losses"], record["hard_losses"]


def write_captioners(*, directory: Path | None = None) -> Path:
    """Train chapter 10's captioners and save them (see the module's docstring)."""
    scenes, vocab = chapter10_scenes()
    soft, hard, losses, hard_losses, seconds = train_captioner_pair(scenes, vocab)
    path = Path(directory or DIRECTORY) / CAPTIONERS[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"soft": soft.state_dict(), "hard": hard.state_dict(), "losses": losses,
                "hard_losses": hard_losses, "seconds": seconds, "itos": vocab.itos,
                **_machine()}, path)
    return path


def _fetch_key(num_heads: int, num_kv_heads: int) -> str:  # a fetch model's name in the file
    return f"heads={num_heads},kv_heads={num_kv_heads}"


def chapter7_fetch_models(*, device=None) -> dict[tuple[int, int], FetchModel]:
    """Chapter 7's fetch models, freshly initialised as chapter 7 initialises them, by
    (num_heads, num_kv_heads)."""
    _, model_args, heads, _ = FETCH
    models = {}
    for h, h_kv in heads:
        torch.manual_seed(0)
        model = FetchModel(**model_args, num_heads=h, num_kv_heads=h_kv)
        models[h, h_kv] = model.to(device or "cpu")
    return models


def load_fetch_models(models, *, directory: Path | None = None) -> list[list[float]]:
    """Load chapter 7's shipped weights into ``models`` (FetchModels built with its arguments;
    each gets the weights of the model with its numbers of heads and key/value heads), set
    them to eval mode, and return their loss histories (one mean per 100 steps) in order."""
    path = Path(directory or DIRECTORY) / FETCH[0]
    record = torch.load(path, map_location="cpu", weights_only=True)
    models, keys = list(models), []
    for model in models:  # every model is checked before any is loaded
        if not isinstance(model, FetchModel):
            raise ValueError(f"models must be FetchModels, got {type(model).__name__}")
        width = model.embed_query.out_features
        if model.task != FETCH[1]["task"] or width != FETCH[1]["num_hiddens"]:
            raise ValueError(f"{path.name} holds models of {FETCH[1]['task']} and width "
                             f"{FETCH[1]['num_hiddens']}, got {model.task} and width {width}")
        keys.append(_fetch_key(model.attention.num_heads, model.attention.num_kv_heads))
        if keys[-1] not in record["state_dicts"]:
            raise ValueError(f"{path.name} has no model with {keys[-1]}; it has "
                             f"{', '.join(record['state_dicts'])}")
    for model, key in zip(models, keys):
        model.load_state_dict(record["state_dicts"][key])
        model.eval()
    return [record["histories"][key] for key in keys]


def write_fetch(*, directory: Path | None = None) -> Path:
    """Train chapter 7's fetch models as chapter 7 does and save, by ``_fetch_key``, their
    state dicts and loss histories, with the training seconds and the machine. One call trains
    all seven: each trains exactly as it would alone."""
    models = chapter7_fetch_models()
    start = time.perf_counter()
    histories = train_fetch_all(models.values(), **FETCH[3])
    seconds = time.perf_counter() - start
    keys = [_fetch_key(*heads) for heads in models]
    path = Path(directory or DIRECTORY) / FETCH[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dicts": {k: m.state_dict() for k, m in zip(keys, models.values())},
                "histories": dict(zip(keys, histories)), "seconds": seconds, **_machine()}, path)
    return path


WRITERS = {"captioners": write_captioners, "fetch": write_fetch}

if __name__ == "__main__":
    import sys

    names = sys.argv[1:]
    if not names or set(names) - set(NAMES):
        sys.exit(f"usage: python -m attention_core.worlds.pretrained name [name ...], names among "
                 f"{', '.join(NAMES)}")
    for name in names:
        print(f"{name}: wrote {WRITERS[name]() if name in WRITERS else write(name)}")
