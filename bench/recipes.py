"""Would a cheaper training recipe keep chapters 4, 8 and 10's claims? (Minutes each; not a test.)

Trains a chapter's model(s) with the recipe given on the command line, outside the notebook,
and checks what the chapter asserts about how well they learn (its assert cells' thresholds),
with the training time beside it. Chapter 4's finer claims (where the misaligned weights fall,
what beam search changes) are left to its notebook. A recipe that passes here still needs
``bench/spread.py`` on the edited chapter, and a change to chapter 4's recipe also moves the
weights the book ships (``worlds.pretrained``).

    python bench/recipes.py ch4 [--epochs 4] [--hiddens 128] [--batch 128] [--lr 0.01]
    python bench/recipes.py ch8 [--epochs 10] [--batch 128] [--lr 0.005] [--warmup 150]
    python bench/recipes.py ch10 [--epochs 4] [--batch 32] [--lr 0.01]

ch4 trains the plain and the attention model, each with the validation split scored after every
epoch, as chapter 4's training cell does; ch8 trains the Transformer and compares it with the
shipped Bahdanau weights, as chapter 8 does; ch10 trains the soft and the hard captioner side by
side from one start, as chapter 10 does. The defaults are the chapters' own recipes.
"""
from __future__ import annotations

import argparse
import time

import torch

from attention_core.captioning import Captioner
from attention_core.seq2seq import make_model
from attention_core.solutions_support.ch04 import length_buckets
from attention_core.transformer import make_transformer
from attention_core.worlds.pretrained import load_model
from attention_core.worlds.shapes import describe, make_scenes, train_captioners
from attention_core.worlds.translation import (TranslationData, Vocab, alignment_accuracy, bleu,
                                               exact_match, make_length_test, make_splits,
                                               teacher_forced_weights, train_seq2seq, translate,
                                               warmup_linear_decay)

DEFAULTS = {"ch4": (4, 128, 0.01), "ch8": (10, 128, 0.005), "ch10": (4, 32, 0.01)}  # the chapters'


def bucket_em(model, data, by_length):
    """Exact match per source-length bucket of the length-controlled test set (chapter 4's)."""
    return [row[4] for row in length_buckets(translate(model, data, by_length), by_length)]


def check(name, ok):
    print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    return ok


def chapter4(args, data, train, valid, test, by_length):
    valid_refs, refs = [p.target for p in valid], [p.target for p in test]
    models, losses, valid_em, seconds = {}, {}, {}, {}
    for kind in ("plain", "attention"):
        torch.manual_seed(0)
        models[kind] = make_model(kind, len(data.src_vocab), len(data.tgt_vocab), embed_size=32,
                                  num_hiddens=args.hiddens)
        valid_em[kind] = []

        def validate(epoch, model, kind=kind):
            valid_em[kind].append(exact_match(translate(model, data, valid), valid_refs))

        start = time.perf_counter()
        losses[kind] = train_seq2seq(models[kind], data, train, epochs=args.epochs,
                                     batch_size=args.batch, lr=args.lr, progress=False,
                                     generator=torch.Generator().manual_seed(0),
                                     on_epoch_end=validate)
        seconds[kind] = time.perf_counter() - start
    for kind in models:
        print(f"{kind:>9}: {seconds[kind]:5.1f} s, losses {[round(x, 4) for x in losses[kind]]}, "
              f"valid EM {[f'{e:.1%}' for e in valid_em[kind]]}")
    test_em = {k: exact_match(translate(m, data, test), refs) for k, m in models.items()}
    test_bleu = bleu(translate(models["attention"], data, test), refs)
    buckets = {k: bucket_em(m, data, by_length) for k, m in models.items()}
    weights = teacher_forced_weights(models["attention"], data, test)
    alignment = alignment_accuracy(weights, [p.alignment for p in test])
    print(f"test EM: attention {test_em['attention']:.1%} (BLEU {test_bleu:.1f}), plain "
          f"{test_em['plain']:.1%}; alignment {alignment:.1%}")
    print("bucket EM: " + "; ".join(f"{k} {[f'{e:.1%}' for e in b]}" for k, b in buckets.items()))
    att, plain = valid_em["attention"], valid_em["plain"]
    results = [check("attention's final loss under a tenth of the plain model's",
                     losses["attention"][-1] < losses["plain"][-1] / 10),
               check("attention's valid EM ends at 97% or more", att[-1] >= 0.97),
               check("the plain model still climbs (4 points or more) and stays under 60%",
                     len(plain) > 1 and plain[-1] - plain[-2] >= 0.04 and plain[-1] < 0.6),
               check("test EM: attention 94% or more, BLEU 97 or more; plain under 50%",
                     test_em["attention"] >= 0.94 and test_bleu >= 97 and test_em["plain"] < 0.5),
               check("every bucket above 80% for attention; the longest 50 points over plain",
                     min(buckets["attention"]) > 0.8
                     and buckets["attention"][-1] >= buckets["plain"][-1] + 0.5),
               check("the plain model's longest bucket 50 points under its shortest",
                     buckets["plain"][0] > buckets["plain"][-1] + 0.5),
               check("alignment accuracy 60% or more", alignment >= 0.6)]
    if args.epochs == 4:  # the chapter's claims about the gains of its four epochs
        gains = [b - a for a, b in zip(att, att[1:])]
        results.append(check("the gains shrink: +15 points or more, then at most +10, +4",
                             gains[0] >= 0.15 and gains[1] <= 0.1 and gains[2] <= 0.04))
    return sum(seconds.values()), all(results)


def chapter8(args, data, train, valid, test, by_length):
    refs = [p.target for p in test]
    total = args.epochs * -(-len(train) // args.batch)
    torch.manual_seed(0)
    model = make_transformer(len(data.src_vocab), len(data.tgt_vocab), num_hiddens=64,
                             ffn_num_hiddens=128, num_heads=4, num_blks=2)
    start = time.perf_counter()
    losses = train_seq2seq(model, data, train, epochs=args.epochs, batch_size=args.batch,
                           lr=args.lr, schedule=warmup_linear_decay(min(args.warmup, total - 1)),
                           generator=torch.Generator().manual_seed(0), progress=False)
    seconds = time.perf_counter() - start
    em = exact_match(translate(model, data, test), refs)
    buckets = bucket_em(model, data, by_length)
    bahdanau = bucket_em(load_model("bahdanau", data)[0], data, by_length)
    print(f"Transformer: {seconds:.1f} s for {total} steps, final loss {losses[-1]:.4f}, test EM "
          f"{em:.1%}, bucket EM {[f'{e:.1%}' for e in buckets]} (shipped Bahdanau: longest "
          f"{bahdanau[-1]:.1%})")
    results = [check("test EM 95% or more", em >= 0.95),
               check("every bucket 80% or more", min(buckets) >= 0.8),
               check("the longest bucket within two sentences of Bahdanau's",
                     buckets[-1] >= bahdanau[-1] - 2 / 47 - 1e-9)]
    return seconds, all(results)


def chapter10(args):
    train = make_scenes(8000, torch.Generator().manual_seed(0), size=32, radius=4)
    test = make_scenes(1000, torch.Generator().manual_seed(1), size=32, radius=4)
    vocab = Vocab(train.captions)
    torch.manual_seed(0)
    soft = Captioner(len(vocab), embed_size=32, num_hiddens=96, image_size=32)
    hard = Captioner(len(vocab), embed_size=32, num_hiddens=96, image_size=32, hard=True)
    hard.load_state_dict(soft.state_dict())
    torch.manual_seed(0)  # the hard captioner's draws of cells
    start = time.perf_counter()
    losses, hard_losses = train_captioners([soft, hard], train, vocab, seed=0, epochs=args.epochs,
                                           batch_size=args.batch, lr=args.lr, progress=False)
    seconds = time.perf_counter() - start
    exact = {}
    for kind, model in (("soft", soft), ("hard", hard)):
        captions, _ = describe(model, test, vocab)
        exact[kind] = sum(c == t for c, t in zip(captions, test.captions)) / len(test)
    print(f"captioners: {seconds:.1f} s side by side; soft losses {[round(x, 4) for x in losses]}, "
          f"exact {exact['soft']:.1%}; hard losses {[round(x, 4) for x in hard_losses]}, exact "
          f"{exact['hard']:.1%}")
    results = [check("soft captions exactly right: 97% or more", exact["soft"] >= 0.97),
               check("the soft loss falls every epoch", losses == sorted(losses, reverse=True)),
               check("hard: over 40%, and 10 points or more under soft",
                     0.4 < exact["hard"] <= exact["soft"] - 0.1),
               check("hard's final loss over five times soft's", hard_losses[-1] > 5 * losses[-1])]
    return seconds, all(results)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("chapter", choices=("ch4", "ch8", "ch10"))
    p.add_argument("--epochs", type=int)
    p.add_argument("--hiddens", type=int, default=128, help="ch4: the GRUs' width")
    p.add_argument("--batch", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--warmup", type=int, default=150, help="ch8: warmup steps")
    args = p.parse_args()
    epochs, batch, lr = DEFAULTS[args.chapter]
    args.epochs, args.batch, args.lr = args.epochs or epochs, args.batch or batch, args.lr or lr
    shown = {"ch4": ("epochs", "hiddens", "batch", "lr"), "ch10": ("epochs", "batch", "lr"),
             "ch8": ("epochs", "batch", "lr", "warmup")}[args.chapter]
    print(f"{args.chapter}: " + ", ".join(f"{k} {getattr(args, k)}" for k in shown)
          + f"; {torch.get_num_threads()} threads")
    if args.chapter == "ch10":
        seconds, passed = chapter10(args)
    else:
        train, valid, test = make_splits(n_train=20000, n_valid=1000, n_test=1000,
                                         generator=torch.Generator().manual_seed(0))
        by_length = make_length_test(per_items=200, generator=torch.Generator().manual_seed(1),
                                     exclude=[p.source for p in train])
        run = chapter4 if args.chapter == "ch4" else chapter8
        seconds, passed = run(args, TranslationData(train), train, valid, test, by_length)
    print(f"training {seconds:.0f} s; the chapter's claims {'hold' if passed else 'DO NOT hold'}")

if __name__ == "__main__":
    main()
