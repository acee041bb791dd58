"""Chapter 8's solutions: a decoder-only (GPT-style) translator for chapter 4's corpus.

The model is a stack of ``TransformerEncoderBlock`` run with ``is_causal=True``: causal
self-attention and the FFN, no cross-attention. It reads one row per sentence pair,

    e_1 ... e_m  <sep>  c_1 ... c_k  <eos>

the English tokens, a separator, the Chinese tokens and the Chinese <eos>, in one joint
vocabulary: English index i stays i, Chinese index j becomes ``len(src_vocab) + j``, and the
separator is the Chinese <bos>. Position i predicts token i + 1, and the loss counts only the
predictions of the Chinese tokens and the final <eos>. Padding sits at the end of a row, where
the causal mask already hides it from every earlier position.
"""
from __future__ import annotations

import torch
from torch import nn

from ..contracts import contract, positive, positive_int
from ..decoding import TOKENS
from ..positional import PositionalEncoding
from ..transformer import TokenEmbedding, TransformerEncoderBlock
from ..worlds.training import fit, linear_decay
from ..worlds.vocab import UNK, source_and_target


class DecoderOnlyLM(nn.Module):
    """Token embeddings times sqrt(d) plus sinusoidal positions, ``num_blks`` causal blocks,
    and a linear layer to the vocabulary. forward(tokens (B, n)) -> logits (B, n, vocab_size);
    the logits at position i depend on tokens 0 .. i only."""

    @contract(vocab_size=positive_int, num_blks=positive_int)
    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, *, max_len: int = 1000):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = TokenEmbedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential(*[TransformerEncoderBlock(num_hiddens, ffn_num_hiddens,
                                                            num_heads, dropout)
                                    for _ in range(num_blks)])
        self.dense = nn.Linear(num_hiddens, vocab_size)

    @contract(tokens=TOKENS)
    def forward(self, tokens):
        X = self.pos_encoding(self.embedding(tokens))  # (B, n, d): embedding * sqrt(d) + positions
        for blk in self.blks:
            X = blk(X, is_causal=True)       # (B, n, d): position i sees positions <= i
        return self.dense(X)                 # (B, n, vocab_size)

    @property
    def attention_weights(self):
        """Per block: (B, h, n, n) self-attention weights of the last call, when kept."""
        return [blk.attention.attention_weights for blk in self.blks]


def joint_vocab_size(data) -> int:
    """English tokens, then Chinese tokens: the decoder-only model's vocabulary size."""
    return len(data.src_vocab) + len(data.tgt_vocab)


def joint_rows(data, src, src_lens, tgt, tgt_lens):
    """Batches of ``data.tensors`` -> (rows (B, n), loss_mask (B, n - 1), english_lens (B,)).

    Row b is e_1 .. e_m <sep> c_1 .. c_k <eos> then padding (index 0), m = src_lens[b] - 1
    (the source's own <eos> is dropped: the separator marks the end of the English) and
    k + 1 = tgt_lens[b]. The model reads rows[:, :-1] and predicts rows[:, 1:];
    loss_mask[b, i] is True where rows[b, i + 1] is a Chinese token or the final <eos>.
    """
    offset, sep = len(data.src_vocab), len(data.src_vocab) + data.tgt_vocab.bos
    english = src_lens - 1                                         # (B,): m, English tokens
    rows = torch.zeros(src.shape[0], int((english + 1 + tgt_lens).max()), dtype=torch.long)
    for b, (m, k) in enumerate(zip(english.tolist(), tgt_lens.tolist(), strict=True)):
        rows[b, :m] = src[b, :m]                                   # English
        rows[b, m] = sep                                           # separator
        rows[b, m + 1:m + 1 + k] = tgt[b, :k] + offset             # Chinese and its <eos>
    i = torch.arange(rows.shape[1] - 1)                            # predicting token i + 1
    loss_mask = (i >= english[:, None]) & (i < (english + tgt_lens)[:, None])
    return rows, loss_mask, english


def decoder_only_loss(model, rows, loss_mask):
    """Mean cross-entropy of the predictions that loss_mask keeps (the Chinese side)."""
    logits = model(rows[:, :-1])                                   # (B, n - 1, vocab)
    losses = nn.functional.cross_entropy(logits.transpose(1, 2), rows[:, 1:],
                                         reduction="none")          # (B, n - 1)
    return (losses * loss_mask).sum() / loss_mask.sum()


@contract(epochs=positive_int, batch_size=positive_int, lr=positive)
def train_decoder_only(model, data, pairs, *, epochs: int = 4, batch_size: int = 128,
                       lr: float = 0.005, clip: float = 1.0, schedule=None,
                       generator: torch.Generator | None = None, device=None):
    """``train_seq2seq``'s recipe for the decoder-only model (``fit``): the same batches (from
    the same generator), Adam, gradient clipping and schedule (default: linear decay to zero).
    Returns the mean loss of each epoch."""
    device = device or next(model.parameters()).device

    def loss(model, batch):
        rows, loss_mask, _ = joint_rows(data, *batch)
        return decoder_only_loss(model, rows.to(device), loss_mask.to(device))

    return fit(model, lambda: data.batches(pairs, batch_size, generator), loss,
               steps_per_epoch=-(-len(pairs) // batch_size), epochs=epochs, lr=lr,
               schedule=schedule or linear_decay, clip=clip, progress=False)


@contract(max_len=positive_int)
def translate_decoder_only(model, data, pairs, *, max_len: int = 60, device=None) -> list:
    """Greedy translations (lists of Chinese tokens): the prompt is the English and <sep>;
    each step appends the most likely next token, until <eos>. Sentences with the same number
    of English tokens are decoded together, so no row is padded. Without a cache, each step
    reads the whole row again (the chapter's cache would work here unchanged)."""
    device = device or next(model.parameters()).device
    offset, vocab = len(data.src_vocab), data.tgt_vocab
    groups = {}
    for i, pair in enumerate(pairs):
        groups.setdefault(len(source_and_target(pair)[0]), []).append(i)
    predictions = [None] * len(pairs)
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for index in groups.values():
            src, src_lens, tgt, tgt_lens = data.tensors([pairs[i] for i in index])
            rows, _, m = joint_rows(data, src, src_lens, tgt, tgt_lens)
            tokens = rows[:, :int(m[0]) + 1].to(device)             # (G, m + 1): English, <sep>
            done = torch.zeros(len(index), dtype=torch.bool, device=device)
            for _ in range(max_len):
                nxt = model(tokens)[:, -1].argmax(-1)               # (G,)
                tokens = torch.cat([tokens, nxt[:, None]], 1)
                done |= nxt == offset + vocab.eos
                if bool(done.all()):
                    break
            chinese = tokens[:, int(m[0]) + 1:] - offset            # back to Chinese indices
            chinese[chinese < 0] = vocab[UNK]                      # an English token: <unk>
            for i, row in zip(index, chinese.tolist(), strict=True):
                predictions[i] = vocab.decode(row)
    model.train(was_training)
    return predictions


def chinese_to_english_weights(model, data, pairs, *, device=None):
    """Teacher-forced self-attention weights of the Chinese positions on the English ones,
    the part of the decoder-only model that does cross-attention's work.

    Returns (weights, english_share): per block, weights (B, h, n_tgt, n_src) with row t the
    position that predicts Chinese token t (the separator for t = 0) and column j English
    token j, zero past each sentence's lengths, so ``alignment_accuracy`` can score each head;
    english_share (h,) the mean weight that a Chinese row puts on the English tokens.
    """
    device = device or next(model.parameters()).device
    rows, loss_mask, m = joint_rows(data, *data.tensors(pairs))
    keep = [blk.attention.need_weights for blk in model.blks]
    for blk in model.blks:
        blk.attention.need_weights = True
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        model(rows[:, :-1].to(device))
        weights = [w.float().cpu() for w in model.attention_weights]  # (B, h, n - 1, n - 1)
    model.train(was_training)
    for blk, k in zip(model.blks, keep, strict=True):
        blk.attention.need_weights = k
    n_tgt, n_src = int(loss_mask.sum(1).max()), int(m.max())
    per_block, shares = [], []
    for w in weights:
        out = torch.zeros(w.shape[0], w.shape[1], n_tgt, n_src)
        share = []
        for b, (mb, k) in enumerate(zip(m.tolist(), loss_mask.sum(1).tolist(), strict=True)):
            out[b, :, :k, :mb] = w[b, :, mb:mb + k, :mb]          # Chinese rows, English columns
            share.append(out[b, :, :k, :mb].sum(-1).mean(-1))     # (h,)
        per_block.append(out)
        shares.append(torch.stack(share).mean(0))
    return per_block, shares
