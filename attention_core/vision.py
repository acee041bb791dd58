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

from ._checks import check_positive_int, check_rank, check_size, check_tensor
from .positional import LearnedPositionalEncoding
from .transformer import TransformerEncoderBlock


def _check_images(images, channels: int, patch_size: int) -> None:
    """The door of the patch embedding: (B, C, H, W) floats, C as built, H and W multiples of P."""
    check_tensor("images", images)
    check_rank("images", images, 4, "(batch, channels, height, width)")
    check_size("images", images, 1, channels, "the layer's channels")
    if images.shape[-2] % patch_size or images.shape[-1] % patch_size:
        raise ValueError(f"images of shape {tuple(images.shape)}: height and width must be "
                         f"multiples of patch_size={patch_size}")


def patchify(images, patch_size: int):
    """(B, C, H, W) -> (B, (H/P)(W/P), C P P): the patches in row-major order, each flattened
    channel by channel, row by row (the order of a Conv2d's weight, (out, C, P, P))."""
    B, C, H, W = images.shape
    P = patch_size
    patches = images.reshape(B, C, H // P, P, W // P, P)   # (B, C, rows, P, cols, P)
    return patches.permute(0, 2, 4, 1, 3, 5).reshape(B, (H // P) * (W // P), C * P * P)


class PatchEmbedding(nn.Module):
    """Patches as tokens: forward(images (B, C, H, W)) -> (B, (H/P)(W/P), num_hiddens),
    one linear map of each flattened P x P patch."""

    def __init__(self, num_hiddens: int, patch_size: int, channels: int = 3):
        super().__init__()
        check_positive_int(num_hiddens=num_hiddens, patch_size=patch_size, channels=channels)
        self.patch_size, self.channels = patch_size, channels
        self.proj = nn.Linear(channels * patch_size * patch_size, num_hiddens)

    def forward(self, images):
        _check_images(images, self.channels, self.patch_size)
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

    forward(images (B, C, image_size, image_size)) -> logits (B, num_classes).
    ``keep_attention_weights(model)`` (transformer) makes every block keep its (B, h, n, n)
    weights, token 0 the class token and token 1 + r * (image_size / P) + c patch (r, c).
    """

    def __init__(self, image_size: int, patch_size: int, num_hiddens: int, ffn_num_hiddens: int,
                 num_heads: int, num_blks: int, num_classes: int, *, channels: int = 3,
                 dropout: float = 0.0, positions: bool = True):
        super().__init__()
        check_positive_int(image_size=image_size, num_blks=num_blks, num_classes=num_classes)
        if image_size % patch_size:
            raise ValueError(f"patch_size={patch_size} must divide image_size={image_size}")
        self.image_size = image_size
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

    def forward(self, images):
        _check_images(images, self.patch_embedding.channels, self.patch_embedding.patch_size)
        check_size("images", images, -1, self.image_size, "the model's image_size")
        check_size("images", images, -2, self.image_size, "the model's image_size")
        X = self.patch_embedding(images)                                  # (B, n - 1, d)
        X = torch.cat([self.cls_token.expand(X.shape[0], -1, -1).to(X.dtype), X], dim=1)
        if self.pos_encoding is not None:
            X = self.pos_encoding(X)                                      # (B, n, d)
        for blk in self.blks:
            X = blk(X)
        return self.head(self.norm(X[:, 0]))                              # the class token

    @property
    def attention_weights(self):
        """Each block's (B, h, n, n) weights, after a forward with them kept."""
        return [blk.attention.attention_weights for blk in self.blks]


def attention_rollout(weights, residual: float = 0.5):
    """Attention rollout (Abnar and Zuidema, 2020): how much each token's final state draws on
    each input token, following the attention through every layer.

    weights: one (B, h, n, n) tensor per layer, first layer first (``attention_weights`` of a
    model run with them kept). Each layer's heads are averaged and the residual connection is
    counted as attention to oneself: A = residual * I + (1 - residual) * mean_h W, whose rows
    still sum to one; the layers compose by matrix product, A_L ... A_1. Returns (B, n, n);
    row 0 of a ViT's is what the class token reads from each patch.
    """
    if not weights:
        raise ValueError("weights must hold at least one layer's (B, h, n, n) attention")
    if not 0 <= residual <= 1:
        raise ValueError(f"residual must be in [0, 1], got {residual}")
    for i, w in enumerate(weights):
        check_tensor(f"weights[{i}]", w)
        check_rank(f"weights[{i}]", w, 4, "(batch, heads, n, n)")
    n = weights[0].shape[-1]
    eye = torch.eye(n, dtype=weights[0].dtype, device=weights[0].device)
    rollout = eye.expand(weights[0].shape[0], n, n)
    for w in weights:
        rollout = (residual * eye + (1 - residual) * w.mean(1)) @ rollout
    return rollout
