"""What one training step of each chapter's model costs, and what four cheaper-looking
variants change (not a test).

    python bench/training_steps.py [--rounds 3] [--only bahdanau,captioner]

Models: chapter 4's Bahdanau and plain GRU models and chapter 8's Transformer (batch 128 of
chapter 4's corpus), chapter 10's captioner (batch 32 of its scenes). Variants, each against the
step as the chapters run it (2 threads here, Adam's for-loop):

* ``foreach``: ``Adam(foreach=True)``, one call per step for all the parameters. It gives the
  same parameters bit for bit (checked below on the first model);
* ``gru_cell``: the Bahdanau decoder's step through ``torch.gru_cell`` with the recurrent
  layer's own weights (one layer), instead of calling ``nn.GRU`` on a length-1 sequence: the same
  arithmetic, checked bit for bit below;
* ``1 thread``: ``torch.set_num_threads(1)``, as ``worlds.fetch.train_fetch`` trains;
* ``halves`` (translation models): data parallelism on the CPU's two cores. Each half of the
  batch, its padding trimmed, runs forward and backward in its own Python thread on one CPU
  thread (as ``worlds.side_by_side`` trains two models), through a second copy of the model
  that shares its parameters (the decoders keep their last attention weights, which two
  threads must not share); the two gradients are summed in a fixed order, then clipped and
  applied as in ``train_step`` (``worlds.training.optimizer_step``). The same gradient up to
  rounding; its losses are printed beside the chapters'.

The variants take turns within each round, so that a change of load on the machine hits them
all; the table gives each one's best round and its ratio to the chapters' step.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import time
from concurrent import futures

import torch

from attention_core.captioning import Captioner
from attention_core.decoding import decoder_input
from attention_core.seq2seq import AttentionDecoder, make_model
from attention_core.transformer import make_transformer
from attention_core.worlds.corpus import make_splits
from attention_core.worlds.shapes import caption_loss, caption_tensors, make_scenes
from attention_core.worlds.training import optimizer_step
from attention_core.worlds.translation import masked_cross_entropy, train_step
from attention_core.worlds.vocab import TranslationData, Vocab

AS_SHIPPED = AttentionDecoder.forward


def gru_cell_forward(self, tokens, state):
    """AttentionDecoder.forward with its one-layer GRU step through torch.gru_cell."""
    rnn, hidden, memory = self.rnn, state.hidden, state.enc_outputs
    outputs, weights = [], []
    for x in self.embedding(tokens).unbind(1):
        context = self.attention(hidden[-1][:, None], memory, memory, state.valid_lens,
                                 projected_keys=state.projected_keys)
        h = torch.gru_cell(torch.cat([x, context[:, 0]], dim=-1), hidden[0], rnn.weight_ih_l0,
                           rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)
        hidden = h[None]
        outputs.append(h[:, None])
        weights.append(self.attention.attention_weights)
    self.attention_weights = torch.cat(weights, 1)
    return self.dense(torch.cat(outputs, 1)), dataclasses.replace(state, hidden=hidden)


def sharing_copy(model):
    """A second instance of ``model`` whose parameters are ``model``'s own tensors."""
    twin, own = copy.deepcopy(model), dict(model.named_modules())
    for name, module in twin.named_modules():
        for key in module._parameters:
            module._parameters[key] = own[name]._parameters[key]
    return twin


def halves_step(model, twin, pool, optimizer, src, src_lens, tgt, tgt_lens, bos):
    """``train_step`` with the batch's two halves computed side by side (see ``halves``)."""
    params, tokens, h = list(model.parameters()), tgt_lens.sum(), src.shape[0] // 2

    def half(net, rows):
        s, sl, t, tl = src[rows], src_lens[rows], tgt[rows], tgt_lens[rows]
        s, t = s[:, :int(sl.max())], t[:, :int(tl.max())]  # this half's own padding only
        loss = masked_cross_entropy(net(s, decoder_input(t, bos), sl), t, tl) * tl.sum() / tokens
        return loss.detach(), torch.autograd.grad(loss, params)

    (loss_a, grads_a), (loss_b, grads_b) = [job.result() for job in (
        pool.submit(half, model, slice(0, h)), pool.submit(half, twin, slice(h, None)))]
    optimizer.zero_grad()
    for p, a, b in zip(params, grads_a, grads_b, strict=True):
        p.grad = a + b
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    return loss_a + loss_b


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="", help="comma-separated model names")
    args = p.parse_args()

    train, _, _ = make_splits(n_train=20000, n_valid=1000, n_test=1000,
                              generator=torch.Generator().manual_seed(0))
    data = TranslationData(train)
    batches = list(data.batches(train, 128, torch.Generator().manual_seed(0)))[:30]
    sizes = (len(data.src_vocab), len(data.tgt_vocab))
    scenes = make_scenes(2000, torch.Generator().manual_seed(0), size=32, radius=4)
    vocab = Vocab(scenes.captions)
    captions, lens = caption_tensors(scenes, vocab)
    rows = list(torch.randperm(2000, generator=torch.Generator().manual_seed(0)).split(32))[:40]

    pool = futures.ThreadPoolExecutor(2, initializer=torch.set_num_threads, initargs=(1,))
    first_losses = {}

    def translation_steps(build, steps):
        def run(foreach, halves=False):
            torch.manual_seed(0)
            model = build()
            opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=foreach)
            if halves:
                twin = sharing_copy(model)
                def step(*b):
                    return halves_step(model, twin, pool, opt, *b, data.tgt_vocab.bos)
            else:
                def step(*b):
                    return train_step(model, opt, *b, data.tgt_vocab.bos)
            for b in batches[:3]:  # warm-up
                loss = step(*b)
            first_losses[halves] = float(loss)
            start = time.perf_counter()
            for b in batches[3:3 + steps]:
                step(*b)
            return (time.perf_counter() - start) / steps, model
        return run

    def caption_steps(steps):
        def run(foreach):
            torch.manual_seed(0)
            model = Captioner(len(vocab), embed_size=32, num_hiddens=96, image_size=32).train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=foreach)

            def step(r):
                longest = int(lens[r].max())
                loss, _ = caption_loss(model, scenes.images[r], captions[r, :longest], lens[r],
                                       vocab.bos, 0.0)
                optimizer_step(model, opt, loss, clip=1.0)
            for r in rows[:3]:
                step(r)
            start = time.perf_counter()
            for r in rows[3:3 + steps]:
                step(r)
            return (time.perf_counter() - start) / steps, model
        return run

    models = {
        "bahdanau": (translation_steps(lambda: make_model("attention", *sizes), 12), True),
        "plain": (translation_steps(lambda: make_model("plain", *sizes), 20), False),
        "transformer": (translation_steps(lambda: make_transformer(
            *sizes, num_hiddens=64, ffn_num_hiddens=128, num_heads=4, num_blks=2), 20), False),
        "captioner": (caption_steps(30), True),
    }
    chosen = [m for m in models if not args.only or m in args.only.split(",")]
    threads = torch.get_num_threads()

    def variant(run, foreach=False, cell=False, one_thread=False, **halves):
        def go():
            AttentionDecoder.forward = gru_cell_forward if cell else AS_SHIPPED
            torch.set_num_threads(1 if one_thread else threads)
            try:
                return run(foreach, **halves)
            finally:
                AttentionDecoder.forward = AS_SHIPPED
                torch.set_num_threads(threads)
        return go

    table = {}
    for name in chosen:
        run, has_gru_decoder = models[name]
        table[name] = {"as the chapters": variant(run), "foreach": variant(run, foreach=True),
                       "1 thread": variant(run, one_thread=True)}
        if has_gru_decoder:
            table[name]["gru_cell"] = variant(run, cell=True)
        if name != "captioner":
            table[name]["halves"] = variant(run, halves=True)

    # the variants that claim the same arithmetic: same parameters after the timed steps
    first = chosen[0]
    reference = table[first]["as the chapters"]()[1]
    for same in ("foreach", "gru_cell"):
        if same in table[first]:
            other = table[first][same]()[1]
            pairs = zip(reference.parameters(), other.parameters(), strict=True)
            equal = all(torch.equal(a, b) for a, b in pairs)
            print(f"{first}, {same}: parameters bit for bit the chapters' after the steps: {equal}")
    if "halves" in table[first]:  # not the same arithmetic: the loss after the warm-up steps
        table[first]["halves"]()
        print(f"{first}, halves: loss of the third step {first_losses[True]:.7f}, "
              f"the chapters' {first_losses[False]:.7f}")

    best = {(m, v): float("inf") for m in table for v in table[m]}
    for _ in range(args.rounds):
        for m in table:
            for v, go in table[m].items():
                best[m, v] = min(best[m, v], go()[0])
    print(f"\nms per training step, best of {args.rounds} rounds ({threads} threads unless said)")
    for m in table:
        base = best[m, "as the chapters"]
        print(f"{m:<12} " + "   ".join(f"{v} {best[m, v] * 1e3:6.1f} ({best[m, v] / base:4.2f}x)"
                                      for v in table[m]))


if __name__ == "__main__":
    main()
