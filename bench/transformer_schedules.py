"""What warmup, the decay, the norm placement and label smoothing do to chapter 8's Transformer,
measured on chapter 4's corpus (several minutes on 2 CPU cores; not a test).

    python bench/transformer_schedules.py [--runs post-linear,pre-linear,...] [--epochs 8]

Each run trains the chapter's model (width 64, 4 heads, 2 + 2 blocks, FFN 128) with Adam,
batch 128, peak rate 0.005, the same seeds, and prints its loss per epoch, the exact match and
BLEU on the 1000 test pairs, and the exact match of the longest bucket (30-47 source tokens) of
the length test, with its training time.
"""
from __future__ import annotations

import argparse
import time

import torch

from attention_core.decoding import greedy_decode
from attention_core.transformer import make_transformer
from attention_core.worlds.translation import (
    TranslationData,
    bleu,
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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default=",".join(RUNS))
    p.add_argument("--epochs", type=int, default=8)
    args = p.parse_args()
    train, _, test = make_splits(n_train=20000, n_valid=1000, n_test=1000,
                                 generator=torch.Generator().manual_seed(0))
    by_length = make_length_test(per_items=200, generator=torch.Generator().manual_seed(1),
                                 exclude=[p.source for p in train])
    longest = [p for p in by_length if len(p.source) >= 30]
    data = TranslationData(train)

    def translate(model, pairs):
        out = []
        for i in range(0, len(pairs), 250):
            src, lens, _, _ = data.tensors(pairs[i:i + 250])
            tokens, _ = greedy_decode(model, src, lens, data.tgt_vocab.bos, data.tgt_vocab.eos, 60)
            out += [data.tgt_vocab.decode(row) for row in tokens.tolist()]
        return out

    print(f"threads {torch.get_num_threads()}, torch {torch.__version__}, {args.epochs} epochs")
    for name in args.runs.split(","):
        norm_first, schedule, smoothing = RUNS[name]
        torch.manual_seed(0)
        model = make_transformer(len(data.src_vocab), len(data.tgt_vocab), 64, 128, 4, 2,
                                 norm_first=norm_first)
        start = time.perf_counter()
        losses = train_seq2seq(model, data, train, epochs=args.epochs, batch_size=128, lr=0.005,
                               schedule=schedule, label_smoothing=smoothing, progress=False,
                               generator=torch.Generator().manual_seed(0))
        seconds = time.perf_counter() - start
        pred = translate(model, test)
        refs = [p.target for p in test]
        em_long = exact_match(translate(model, longest), [p.target for p in longest])
        print(f"{name:<20} {seconds:5.0f} s  loss per epoch {[round(x, 3) for x in losses]}  "
              f"EM {exact_match(pred, refs):.1%}  BLEU {bleu(pred, refs):.1f}  "
              f"longest-bucket EM {em_long:.1%}", flush=True)


if __name__ == "__main__":
    main()
