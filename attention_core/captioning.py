"""Show, attend and tell (Xu et al., 2015): a caption written word by word, each word attending
over a grid of image features.

A small CNN turns an image into a g x g grid of feature vectors, which are the keys and values
(the annotations a_i of the paper), with a learned vector per cell added so that a weighted
average still says where it came from. The decoder is chapter 4's ``AttentionDecoder``: at each
step additive attention, queried by the previous state, averages the grid into a context, and
a GRU reads it with the previous word. Its initial state is tanh(W mean_i a_i), as in the paper.

Greedy captions come from ``decoding.greedy_decode(model, images, None, bos, eos)`` (no
lengths: every cell is there), with each word's attention over the grid. Training
(``worlds.shapes.caption_loss``) adds the paper's doubly stochastic penalty,
lam * sum_i (1 - sum_t alpha_ti)^2 over the grid cells i: summed over the caption, each cell's
attention should come near one, so that over the caption the model looks at every part of the
image rather than at one cell each time.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .attention import AdditiveAttention
from .contracts import contract, lengths, positive_int, require
from .decoding import TOKENS
from .seq2seq import AttentionDecoder, EncoderDecoder
from .variants import sample_values

__all__ = ["GridEncoder", "SampledAttention", "HardAttentionDecoder", "Captioner",
           "doubly_stochastic_penalty"]


class GridEncoder(nn.Module):
    """Three 3x3 convolutions (16, 32, num_hiddens channels), each followed by batch
    normalization, ReLU and 2x2 max pooling: (B, C, H, W) ->
    features (B, (H/8)(W/8), num_hiddens) in row-major cell order, plus a learned vector per
    cell; and the decoder's initial state (1, B, num_hiddens) = tanh(W mean of the features).
    forward(images (B, channels, image_size, image_size), valid_lens=None) -> (features,
    state); valid_lens is ignored (every cell is there), for the seq2seq encoder signature."""

    @contract(num_hiddens=positive_int, image_size=positive_int, channels=positive_int,
              where=[require(lambda image_size: image_size % 8 == 0,
                             "image_size={image_size} must be a multiple of 8 (three 2x2 "
                             "poolings)")])
    def __init__(self, num_hiddens: int, image_size: int = 48, channels: int = 3):
        super().__init__()
        widths = [channels, 16, 32, num_hiddens]
        # batch normalization: without it, a captioner trained for a few thousand steps on CPU
        # stalled with half its captions wrong in about half of the seeds tried
        self.convs = nn.ModuleList(nn.Sequential(nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b))
                                   for a, b in zip(widths, widths[1:]))
        self.grid = image_size // 8
        self.cells = nn.Parameter(torch.zeros(self.grid * self.grid, num_hiddens))
        nn.init.normal_(self.cells, std=0.02)
        self.init = nn.Linear(num_hiddens, num_hiddens)
        self.image_size, self.channels = image_size, channels

    @contract(images="B self.channels self.image_size self.image_size")
    def forward(self, images, valid_lens=None):
        """The annotations a_i and the decoder's first state."""
        X = images
        for conv_bn in self.convs:                                   # convolution, batch norm
            X = F.max_pool2d(F.relu(conv_bn(X)), 2)
        features = X.flatten(2).transpose(1, 2) + self.cells        # (B, g * g, d)
        return features, torch.tanh(self.init(features.mean(1)))[None]


class SampledAttention(AdditiveAttention):
    """Hard attention (Xu et al.'s stochastic version): the additive weights alpha are computed
    as usual, but the output is the value of one key, drawn from alpha in training mode and the
    most weighted one in evaluation mode. Keeps ``attention_weights`` (alpha) and appends each
    call's log alpha_i (B, n_q), differentiable, to ``log_probs``, for a REINFORCE loss."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log_probs = []

    def forward(self, queries, keys, values, valid_lens=None, projected_keys=None):
        super().forward(queries, keys, values, valid_lens, projected_keys)   # alpha, checked
        output, _, log_prob = sample_values(self.attention_weights, values,
                                                        greedy=not self.training)
        self.log_probs.append(log_prob)                       # log alpha_i: (B, n_q)
        return output                                         # v_i: (B, n_q, d_v)


class HardAttentionDecoder(AttentionDecoder):
    """Chapter 4's decoder with ``SampledAttention``: each word reads one cell of the grid.
    After a forward, ``log_probs`` (B, n) holds log alpha of each step's chosen cell."""

    @contract(vocab_size=positive_int, embed_size=positive_int, num_hiddens=positive_int)
    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int):
        super().__init__(vocab_size, embed_size, num_hiddens)
        self.attention = SampledAttention(num_hiddens, query_size=num_hiddens,
                                          key_size=num_hiddens)

    def init_state(self, enc_outputs, src_valid_lens):
        self.attention.log_probs = []          # a new caption: forget the last one's choices
        return super().init_state(enc_outputs, src_valid_lens)

    @property
    def log_probs(self):
        return torch.cat(self.attention.log_probs, 1)


class Captioner(EncoderDecoder):
    """GridEncoder and chapter 4's AttentionDecoder (or, with ``hard=True``, the
    HardAttentionDecoder). forward(images (B, *image), tokens (B, n)) -> logits (B, n, vocab)
    with teacher forcing (tokens: <bos> + caption[:-1]), *image being (channels, image_size,
    image_size) as the encoder checks; the decoder keeps ``attention_weights`` (B, n, g * g)."""

    @contract(vocab_size=positive_int, embed_size=positive_int, num_hiddens=positive_int,
              image_size=positive_int)
    def __init__(self, vocab_size: int, embed_size: int = 32, num_hiddens: int = 64,
                 image_size: int = 48, hard: bool = False):
        decoder = HardAttentionDecoder if hard else AttentionDecoder
        super().__init__(GridEncoder(num_hiddens, image_size),
                         decoder(vocab_size, embed_size, num_hiddens))

    @contract(images="B *image", tokens=TOKENS)
    def forward(self, images, tokens, src_valid_lens=None):
        return super().forward(images, tokens, None)  # every cell of the grid is there


@contract(weights="B n cells", valid_lens=lengths(per="B", upto="n"))
def doubly_stochastic_penalty(weights, valid_lens=None):
    """sum_i (1 - sum_t alpha_ti)^2 per image, averaged over the batch: weights (B, n, cells);
    steps at or past ``valid_lens`` (B,) (padding) count for nothing."""
    if valid_lens is not None:
        steps = torch.arange(weights.shape[1], device=weights.device)
        weights = weights * (steps[None, :, None] < valid_lens.to(weights.device)[:, None, None])
    return ((1 - weights.sum(1)) ** 2).sum(-1).mean()
