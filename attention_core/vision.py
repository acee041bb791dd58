"""The Vision Transformer (Dosovitskiy et al., 2021): an image as a sequence of patches; and
attention rollout (Abnar and Zuidema, 2020), which follows its attention through the layers.

An image (B, C, H, W) is cut into (H/P) x (W/P) patches of P x P pixels, each flattened and
mapped by one linear layer to num_hiddens: the tokens. That map is a convolution with kernel
and stride P (``PatchEmbedding.as_conv2d`` gives the equal Conv2d). A learned class token is
put first, learned positions are added (or not: ``positions=False``, and self-attention no
longer knows where a patch was), the chapter-8 encoder blocks run over the n = (H/P)(W/P) + 1
tokens, and a linear head reads the class token's final state.
"""
from __future__ import annotations

import torch
from torch import nn

from .contracts import contract, each, positive_int, require
from .positional import LearnedPositionalEncoding
from .transformer import TransformerEncoderBlock

__all__ = ["patchify", "PatchEmbedding", "VisionTransformer", "attention_rollout"]


def _whole_patches(images, patch_size) -> bool:
    return images.shape[-2] % patch_size == 0 and images.shape[-1] % patch_size == 0


def _not_whole_patches(images, patch_size) -> str:
    return (f"images of shape {tuple(images.shape)}: height and width must be multiples of "
            f"patch_size={patch_size}")


@contract(images="B C H W", patch_size=positive_int,
          where=[require(_whole_patches, _not_whole_patches)])
def patchify(images, patch_size: int):
    """images (B, C, H, W) -> (B, (H/P)(W/P), C P P): the patches in row-major order, each flattened
    channel by channel, row by row (the order of a Conv2d's weight, (out, C, P, P))."""
    B, C, H, W = images.shape
    P = patch_size
    patches = images.reshape(B, C, H // P, P, W // P, P)   # (B, C, rows, P, cols, P)
    return patches.permute(0, 2, 4, 1, 3, 5).reshape(B, (H // P) * (W // P), C * P * P)


class PatchEmbedding(nn.Module):
    """Patches as tokens: forward(images (B, channels, H, W)) -> (B, (H/P)(W/P), num_hiddens),
    one linear map of each flattened P x P patch."""

    @contract(num_hiddens=positive_int, patch_size=positive_int, channels=positive_int)
    def __init__(self, num_hiddens: int, patch_size: int, channels: int = 3):
        super().__init__()
        self.patch_size, self.channels = patch_size, channels
        self.proj = nn.Linear(channels * patch_size * patch_size, num_hiddens)

    @contract(images="B self.channels H W",
              where=[require(lambda self, images: _whole_patches(images, self.patch_size),
                             lambda self, images: _not_whole_patches(images, self.patch_size))])
    def forward(self, images):
        return self.proj(patchify(images, self.patch_size))

    def as_conv2d(self) -> nn.Conv2d:
        """The same map as a convolution with kernel = stride = P, sharing these weights' values:
        conv(images).flatten(2).transpose(1, 2) equals forward(images)."""
        P, d = self.patch_size, self.proj.out_features
        conv = nn.Conv2d(self.channels, d, P, stride=P).to(self.proj.weight)
        with torch.no_grad():
            conv.weight.copy_(self.proj.weight.reshape(d, self.channels, P, P))
            conv.bias.copy_(self.proj.bias)
        return conv


class VisionTransformer(nn.Module):
    """A ViT classifier: patch embedding, a class token, learned positions (if ``positions``),
    ``num_blks`` encoder blocks (pre-norm, as in the ViT paper, with a final LayerNorm), and a
    linear head on the class token.

    forward(images (B, channels, image_size, image_size), head_mask=None) -> logits
    (B, num_classes); head_mask (num_blks, h) scales each block's heads before its W_o (a row
    of ones keeps a block as it is, a 0 removes that head), chapter 7's head mask per block.
    ``keep_attention_weights(model)`` (transformer) makes every block keep its (B, h, n, n)
    weights, token 0 the class token and token 1 + r * (image_size / P) + c patch (r, c).
    """

    @contract(image_size=positive_int, num_blks=positive_int, num_classes=positive_int,
              where=[require(lambda image_size, patch_size: image_size % patch_size == 0,
                             "patch_size={patch_size} must divide image_size={image_size}")])
    def __init__(self, image_size: int, patch_size: int, num_hiddens: int, ffn_num_hiddens: int,
                 num_heads: int, num_blks: int, num_classes: int, *, channels: int = 3,
                 dropout: float = 0.0, positions: bool = True):
        super().__init__()
        self.image_size, self.channels, self.num_blks = image_size, channels, num_blks
        self.num_patches = (image_size // patch_size) ** 2
        self.patch_embedding = PatchEmbedding(num_hiddens, patch_size, channels)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, num_hiddens))
        self.pos_encoding = (LearnedPositionalEncoding(num_hiddens, dropout, self.num_patches + 1)
                             if positions else None)
        self.blks = nn.ModuleList(TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads,
                                                          dropout, use_bias=True, norm_first=True)
                                  for _ in range(num_blks))
        self.norm = nn.LayerNorm(num_hiddens)
        self.head = nn.Linear(num_hiddens, num_classes)

    @contract(images="B self.channels self.image_size self.image_size", head_mask="self.num_blks h")
    def forward(self, images, head_mask=None):
        X = self.patch_embedding(images)                                  # (B, n - 1, d)
        X = torch.cat([self.cls_token.expand(X.shape[0], -1, -1).to(X.dtype), X], dim=1)
        if self.pos_encoding is not None:
            X = self.pos_encoding(X)                                      # (B, n, d)
        for i, blk in enumerate(self.blks):
            X = blk(X, head_mask=None if head_mask is None else head_mask[i])
        return self.head(self.norm(X[:, 0]))                              # the class token

    @property
    def attention_weights(self):
        """Each block's (B, h, n, n) weights, after a forward with them kept."""
        return [blk.attention.attention_weights for blk in self.blks]


@contract(weights=each("B h n n"),
          where=[require(lambda residual: 0 <= residual <= 1,
                         lambda residual: f"residual must be in [0, 1], got {residual}")])
def attention_rollout(weights, residual: float = 0.5):
    """Attention rollout (Abnar and Zuidema, 2020): how much each token's final state draws on
    each input token, following the attention through every layer.

    weights: one (B, h, n, n) tensor per layer, first layer first (``attention_weights`` of a
    model run with them kept). Each layer's heads are averaged and the residual connection is
    counted as attention to oneself: A = residual * I + (1 - residual) * mean_h W, whose rows
    still sum to one; the layers compose by matrix product, A_L ... A_1. Returns (B, n, n);
    row 0 of a ViT's is what the class token reads from each patch.
    """
    n = weights[0].shape[-1]
    eye = torch.eye(n, dtype=weights[0].dtype, device=weights[0].device)
    rollout = eye.expand(weights[0].shape[0], n, n)
    for w in weights:
        rollout = (residual * eye + (1 - residual) * w.mean(1)) @ rollout
    return rollout
