"""Trained models that ship with the book, and the one command that writes them.

* ``bahdanau``: chapter 4's attention model. Chapter 8 sets it beside its Transformer;
  retraining it there would repeat chapter 4's longest minute, so chapter 8 loads these
  weights. Chapter 4's page also runs them in the reader's browser (``book.translator``).
* ``transformer``: chapter 8's Transformer, which chapter 8's page runs in the browser.

They are written by one command, and by nothing else (the tests only read them):

    python -m attention_core.worlds.pretrained [name ...]      (default: every model)

It builds the chapters' corpus (chapter 4's splits and seeds, which chapter 8 shares), trains
the model with its chapter's call to ``train_seq2seq`` (same initialisation, batches, learning
rate and schedule) and saves, with the weights, the vocabularies they belong to, the loss of
each epoch, the training time and the machine it ran on. A model trained this way on another
CPU differs from the shipped one only by rounding (its chapter's bands hold for both).
"""
from __future__ import annotations

import platform
import time
from pathlib import Path

import torch

from ..seq2seq import make_model
from ..transformer import make_transformer
from .translation import TranslationData, make_splits, train_seq2seq, warmup_linear_decay

DIRECTORY = Path(__file__).with_name("trained")

# name: (file, the model's constructor arguments, train_seq2seq's arguments), as the chapters
# have them; kind "transformer" is make_transformer, any other make_model's kind; "warmup" is
# warmup_linear_decay's argument, the schedule
RECIPES = {
    "bahdanau": ("bahdanau_chapter4.pt",
                 dict(kind="attention", embed_size=32, num_hiddens=128),
                 dict(epochs=4, batch_size=128, lr=0.01)),
    "transformer": ("transformer_chapter8.pt",
                    dict(kind="transformer", num_hiddens=64, ffn_num_hiddens=128, num_heads=4,
                         num_blks=2),
                    dict(epochs=10, batch_size=128, lr=0.005, warmup=150)),
}


def _recipe(name: str):
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}, got {name!r}")
    return RECIPES[name]


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


def train_model(name: str, data, pairs, *, device=None, progress: bool = True):
    """Train ``name``'s model on ``pairs`` exactly as its chapter does: (model, losses, seconds)."""
    train_args = dict(_recipe(name)[2])
    if "warmup" in train_args:
        train_args["schedule"] = warmup_linear_decay(train_args.pop("warmup"))
    torch.manual_seed(0)
    model = build_model(name, data).to(device or "cpu")
    start = time.perf_counter()
    losses = train_seq2seq(model, data, pairs, generator=torch.Generator().manual_seed(0),
                           device=device, progress=progress, **train_args)
    return model, losses, time.perf_counter() - start


def shipped_record(name: str, *, directory: Path | None = None) -> dict:
    """What ``write`` saved for ``name``: state_dict, src_itos, tgt_itos, losses, seconds, ..."""
    path = Path(directory or DIRECTORY) / _recipe(name)[0]
    return torch.load(path, map_location="cpu", weights_only=True)


def load_model(name: str, data, *, device=None, directory: Path | None = None):
    """The shipped model ``name``, for the vocabularies of ``data``: (model, losses, seconds),
    the losses and training seconds being those recorded when the weights were written."""
    record = shipped_record(name, directory=directory)
    path = Path(directory or DIRECTORY) / _recipe(name)[0]
    for side in ("src", "tgt"):
        shipped, ours = record[f"{side}_itos"], getattr(data, f"{side}_vocab").itos
        if shipped != ours:
            raise ValueError(f"{path.name} was trained with another {side} vocabulary "
                             f"({len(shipped)} tokens) than data's ({len(ours)} tokens): "
                             f"rewrite it with `python -m {__name__}`")
    model = build_model(name, data)
    model.load_state_dict(record["state_dict"])
    return model.to(device or "cpu").eval(), record["losses"], record["seconds"]


def write(name: str, *, directory: Path | None = None) -> Path:
    """Train ``name``'s model on its chapter's corpus and save it (see the module's docstring)."""
    data, train, _, _ = chapter4_corpus()
    model, losses, seconds = train_model(name, data, train)
    path = Path(directory or DIRECTORY) / _recipe(name)[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict(), "losses": losses, "seconds": seconds,
                "src_itos": data.src_vocab.itos, "tgt_itos": data.tgt_vocab.itos,
                "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
                "threads": torch.get_num_threads(), "torch": str(torch.__version__)}, path)
    return path


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:] or RECIPES:
        print(f"{name}: wrote {write(name)}")
