"""What warmup, the decay, the number of epochs and label smoothing do to chapter 8's
Transformer, measured on chapter 4's corpus *on validation data* and over several seeds
(tens of minutes on 2 CPU cores; not a test).

    python bench/transformer_schedules.py [--runs post-linear,...] [--epochs 8,10]
        [--seeds 0,1,2] [--out results.jsonl]

Each run trains the chapter's model (width 64, 4 heads, 2 + 2 blocks, FFN 128; ``--blocks``
changes the depth) with Adam, batch 128, peak rate 0.005, seed s for the initialisation and
the batches, and prints (and appends to ``--out`` as one JSON line) its loss per epoch, the
exact match on the 1000 validation pairs and on the longest sentences (30 source tokens or
more; 30-44 in the set drawn) of a
length-controlled *validation* set (generator seed 2, none of its sentences in the training
split, the test split or the chapter's length test set), with its training time. The chapter
chooses its recipe from these numbers; the test split and the length test set are scored once,
by the chosen model, in the chapter.
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from attention_core.decoding import greedy_decode
from attention_core.transformer import make_transformer
from attention_core.worlds.translation import (
    TranslationData,
    exact_match,
    inverse_sqrt_warmup,
    linear_decay,
    make_length_test,
    make_splits,
    train_seq2seq,
    warmup_linear_decay,
)

RUNS = {  # name: (norm_first, schedule, label_smoothing)
    "post-linear": (False, warmup_linear_decay(150), 0.0),
    "post-invsqrt": (False, inverse_sqrt_warmup(150), 0.0),
    "post-nowarmup": (False, linear_decay, 0.0),
    "pre-linear": (True, warmup_linear_decay(150), 0.0),
    "pre-invsqrt": (True, inverse_sqrt_warmup(150), 0.0),
    "pre-nowarmup": (True, linear_decay, 0.0),
    "post-linear-smooth": (False, warmup_linear_decay(150), 0.1),
}


def validation_sets():
    """(train, valid, the longest bucket of a length-controlled validation set)."""
    train, valid, test = make_splits(n_train=20000, n_valid=1000, n_test=1000,
                                     generator=torch.Generator().manual_seed(0))
    length_test = make_length_test(per_items=200, generator=torch.Generator().manual_seed(1),
                                   exclude=[p.source for p in train])
    held_out = [p.source for p in train + test + length_test]
    length_valid = make_length_test(per_items=200, generator=torch.Generator().manual_seed(2),
                                    exclude=held_out)
    return train, valid, [p for p in length_valid if len(p.source) >= 30]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default=",".join(RUNS))
    p.add_argument("--epochs", default="8")
    p.add_argument("--seeds", default="0")
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    train, valid, longest = validation_sets()
    data = TranslationData(train)

    def translate(model, pairs):
        out = []
        for i in range(0, len(pairs), 250):
            src, lens, _, _ = data.tensors(pairs[i:i + 250])
            tokens, _ = greedy_decode(model, src, lens, data.tgt_vocab.bos, data.tgt_vocab.eos, 60)
            out += [data.tgt_vocab.decode(row) for row in tokens.tolist()]
        return out

    print(f"threads {torch.get_num_threads()}, torch {torch.__version__}, "
          f"{len(longest)} long validation sentences", flush=True)
    for epochs in map(int, args.epochs.split(",")):
        for name in args.runs.split(","):
            for seed in map(int, args.seeds.split(",")):
                norm_first, schedule, smoothing = RUNS[name]
                torch.manual_seed(seed)
                model = make_transformer(len(data.src_vocab), len(data.tgt_vocab), 64, 128, 4,
                                         args.blocks, norm_first=norm_first)
                start = time.perf_counter()
                losses = train_seq2seq(model, data, train, epochs=epochs, batch_size=128,
                                       lr=0.005, schedule=schedule, label_smoothing=smoothing,
                                       progress=False,
                                       generator=torch.Generator().manual_seed(seed))
                seconds = time.perf_counter() - start
                model.eval()
                row = dict(run=name, epochs=epochs, seed=seed, blocks=args.blocks,
                           seconds=round(seconds), losses=[round(x, 4) for x in losses],
                           valid_em=exact_match(translate(model, valid), [p.target for p in valid]),
                           longest_em=exact_match(translate(model, longest),
                                                  [p.target for p in longest]),
                           n_longest=len(longest))
                print(json.dumps(row), flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
