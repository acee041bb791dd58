"""Practice tasks of chapters 5–8: self-attention, the causal mask, the sinusoidal table, the
rotary rotation, splitting and merging heads, grouped-query heads, multi-head attention, the
Transformer encoder block and the decoder's KV-cache step."""
from __future__ import annotations

import math

import torch

from ..attention import SelfAttention, share_kv_heads
from ..masking import causal_mask, masked_softmax, padding_mask
from ..multihead import MultiHeadAttention
from ..positional import RotaryEmbedding, sinusoidal_table
from ..transformer import TransformerDecoderBlock, TransformerEncoderBlock
from .checking import Case, Mistake, Task
from .inputs import DEVICE, randn, seeded

# ---- chapter 5: self-attention ------------------------------------------------------------


def _self_cases(gen):
    layer = seeded(SelfAttention(8, input_size=6), gen)
    X = randn(gen, 2, 5, 6)
    return [
        Case("5 positions", "5 个位置", (layer, X)),
        Case("valid lengths (B,)", "有效长度 (B,)", (layer, X, torch.tensor([3, 5]))),
        Case("valid lengths (B, n)", "有效长度 (B, n)",
             (layer, X, torch.tensor([[1, 2, 3, 4, 5], [5, 5, 2, 2, 1]]))),
        Case("one position", "一个位置", (layer, X[:, :1])),
        Case("float64", "float64", (seeded(SelfAttention(4, input_size=3), gen,
                                           dtype=torch.float64), randn(gen, 1, 4, 3,
                                                                       dtype=torch.float64))),
    ]


def _sa(self, X, valid_lens, *, values=None, scale=True, swap=False, rows=False, causal=False):
    Q, K = self.W_q(X), self.W_k(X)
    V = self.W_v(X) if values is None else values
    if swap:
        Q, K = K, Q
    scores = Q @ K.transpose(1, 2) / (math.sqrt(Q.shape[-1]) if scale else 1.0)
    mask = padding_mask(valid_lens, Q, K.shape[1])
    if rows and mask is not None:
        mask = padding_mask(valid_lens, Q, Q.shape[1]).transpose(-1, -2)
    if causal:
        c = causal_mask(X.shape[1], X.shape[1], device=X.device)
        mask = c if mask is None else mask & c
    return masked_softmax(scores, mask=mask) @ V


def _sa_values_unprojected(self, X, valid_lens=None):
    return _sa(self, X, valid_lens, values=X)


def _sa_no_scale(self, X, valid_lens=None):
    return _sa(self, X, valid_lens, scale=False)


def _sa_swapped(self, X, valid_lens=None):
    return _sa(self, X, valid_lens, swap=True)


def _sa_on_queries(self, X, valid_lens=None):
    return _sa(self, X, valid_lens, rows=True)


def _sa_causal(self, X, valid_lens=None):
    return _sa(self, X, valid_lens, causal=True)


SELF_ATTENTION = Task(
    "self_attention", 5, SelfAttention.forward,
    "SelfAttention.forward: Q, K, V are the projections W_q, W_k, W_v of the one sequence X "
    "(B, n, input_size); Y = softmax(Q K^T / sqrt(d)) V over the valid keys (valid_lens None, "
    "(B,) or (B, n)).",
    "SelfAttention.forward：Q、K、V 是同一个序列 X (B, n, input_size) 经 W_q、W_k、W_v 的投影；"
    "在有效键上计算 Y = softmax(Q K^T / sqrt(d)) V（valid_lens 为 None、(B,) 或 (B, n)）。",
    _self_cases,
    (Mistake("values not projected", _sa_values_unprojected,
             "the values are X itself; they are its projection V = W_v(X) (the layer has "
             "three maps, one each for queries, keys and values).",
             "值直接用了 X；应是它的投影 V = W_v(X)（这一层有三个映射，查询、键、值各一个）。"),
     Mistake("no scaling", _sa_no_scale,
             "the scores are not divided by sqrt(d), d the size of Q and K.",
             "分数没有除以 sqrt(d)（d 是 Q 和 K 的维数）。"),
     Mistake("queries and keys swapped", _sa_swapped,
             "the scores are K Q^T instead of Q K^T: entry (i, j) must be query i against key j "
             "(W_q and W_k are different maps, so the two differ).",
             "分数写成了 K Q^T 而不是 Q K^T：第 (i, j) 个元素应是查询 i 对键 j"
             "（W_q 和 W_k 是不同的映射，所以两者不同）。"),
     Mistake("padding masked on the queries", _sa_on_queries,
             "the valid lengths mask the queries instead of the keys: every query may read the "
             "keys j < length.",
             "有效长度掩蔽的是查询而不是键：每个查询都可以读 j < 长度的键。"),
     Mistake("a causal mask", _sa_causal,
             "a causal mask is applied; this layer is the encoder's self-attention, in which "
             "every position sees every valid position, earlier or later.",
             "加了因果掩码；这一层是编码器的自注意力，每个位置都能看到所有有效位置，无论前后。")))


# ---- chapter 5: the causal mask -----------------------------------------------------------


def _causal_cases(gen):
    return [
        Case("4 by 4", "4 × 4", (4, 4), {"device": DEVICE}),
        Case("1 by 1", "1 × 1", (1, 1), {"device": DEVICE}),
        Case("3 queries, 5 keys", "3 个查询、5 个键", (3, 5), {"device": DEVICE}),
        Case("5 queries, 2 keys", "5 个查询、2 个键", (5, 2), {"device": DEVICE}),
    ]


def _causal_future(n_queries, n_keys, device=None):
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).triu()


def _causal_not_self(n_queries, n_keys, device=None):
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril(-1)


def _causal_inverted(n_queries, n_keys, device=None):
    return ~torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril()


def _causal_float(n_queries, n_keys, device=None):
    return torch.ones(n_queries, n_keys, device=device).tril()


def _causal_bottom_right(n_queries, n_keys, device=None):
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril(n_keys - n_queries)


CAUSAL_MASK = Task(
    "causal_mask", 5, causal_mask,
    "The boolean (n_q, n_k) mask, True where key j <= query i (True = may attend, torch's "
    "polarity), on the given device.",
    "布尔掩码 (n_q, n_k)：键 j <= 查询 i 处为 True（True = 可以关注，与 torch 同一约定），"
    "放在给定的设备上。",
    _causal_cases,
    (Mistake("the future instead of the past", _causal_future,
             "your mask lets query i see keys j >= i (triu); it must see j <= i: tril.",
             "你的掩码让查询 i 看 j >= i 的键（triu）；它应看 j <= i 的键：用 tril。"),
     Mistake("a query cannot see itself", _causal_not_self,
             "the diagonal is excluded (tril(-1)); query i may attend to key i itself.",
             "对角线被排除了（tril(-1)）；查询 i 可以关注键 i 自身。"),
     Mistake("True where blocked", _causal_inverted,
             "the polarity is inverted: here True must mean 'may attend' (as in torch's "
             "scaled_dot_product_attention), not 'masked out'.",
             "真假反了：这里 True 表示“可以关注”（与 torch 的 scaled_dot_product_attention "
             "相同），而不是“被掩蔽”。"),
     Mistake("a float mask", _causal_float,
             "the mask is a float tensor of ones and zeros; it must be boolean (a float mask is "
             "added to the scores, so 0 would hide nothing).",
             "掩码是由 0 和 1 组成的浮点张量；它应是布尔型（浮点掩码会被加到分数上，0 什么也掩蔽"
             "不了）。"),
     Mistake("aligned to the bottom right", _causal_bottom_right,
             "the diagonal is aligned to the last key (tril(n_k - n_q)); here it starts at the "
             "top left, as torch's is_causal does: query i sees keys 0 … i.",
             "对角线对齐到了最后一个键（tril(n_k - n_q)）；这里它从左上角开始，与 torch 的 "
             "is_causal 相同：查询 i 看键 0 … i。")))


# ---- chapter 6: the sinusoidal table ------------------------------------------------------


def _sin_cases(gen):
    return [
        Case("50 positions, 16 features", "50 个位置、16 个特征", (50, 16), {"device": DEVICE}),
        Case("base 100", "底数 100", (7, 6), {"base": 100.0, "device": DEVICE}),
        Case("an odd number of features", "特征数为奇数", (4, 5), {"device": DEVICE}),
        Case("one position", "一个位置", (1, 8), {"device": DEVICE}),
        Case("float64", "float64", (60, 32), {"dtype": torch.float64, "device": DEVICE}),
    ]


def _table(max_len, num_hiddens, dtype, device, base, *, angles_fn, first=torch.sin,
           second=torch.cos, interleave=True):
    i = torch.arange(max_len, dtype=dtype, device=device)[:, None]
    j = torch.arange(0, num_hiddens, 2, dtype=dtype, device=device)[None, :]
    angles = angles_fn(i, j, base, num_hiddens)
    P = torch.zeros(max_len, num_hiddens, dtype=dtype, device=device)
    if interleave:
        P[:, 0::2] = first(angles)
        P[:, 1::2] = second(angles)[:, : num_hiddens // 2]
    else:
        half = angles.shape[1]
        P[:, :half] = first(angles)
        P[:, half:] = second(angles)[:, : num_hiddens - half]
    return P


def _right(i, j, base, d):
    return i / base ** (j / d)


def _sin_swapped(max_len, num_hiddens, dtype=torch.float32, device=None, base=10000.0):
    return _table(max_len, num_hiddens, dtype, device, base, angles_fn=_right, first=torch.cos,
                  second=torch.sin)


def _sin_by_position(max_len, num_hiddens, dtype=torch.float32, device=None, base=10000.0):
    return _table(max_len, num_hiddens, dtype, device, base,
                  angles_fn=lambda i, j, base, d: j / base ** (i / d))


def _sin_pair_index(max_len, num_hiddens, dtype=torch.float32, device=None, base=10000.0):
    return _table(max_len, num_hiddens, dtype, device, base,
                  angles_fn=lambda i, j, base, d: i / base ** (j / 2 / d))


def _sin_halves(max_len, num_hiddens, dtype=torch.float32, device=None, base=10000.0):
    return _table(max_len, num_hiddens, dtype, device, base, angles_fn=_right, interleave=False)


def _sin_odd(max_len, num_hiddens, dtype=torch.float32, device=None, base=10000.0):
    i = torch.arange(max_len, dtype=dtype, device=device)[:, None]
    j = torch.arange(0, num_hiddens, 2, dtype=dtype, device=device)[None, :]
    P = torch.zeros(max_len, num_hiddens, dtype=dtype, device=device)
    P[:, 0::2] = torch.sin(i / base ** (j / num_hiddens))
    P[:, 1::2] = torch.cos(i / base ** (j / num_hiddens))
    return P


SINUSOIDAL_TABLE = Task(
    "sinusoidal_table", 6, sinusoidal_table,
    "The table P (max_len, num_hiddens): P[i, 2j] = sin(i w_j), P[i, 2j+1] = cos(i w_j), with "
    "w_j = base^(-2j / num_hiddens); an odd num_hiddens has one sine column more.",
    "位置编码表 P (max_len, num_hiddens)：P[i, 2j] = sin(i w_j)，P[i, 2j+1] = cos(i w_j)，"
    "其中 w_j = base^(-2j / num_hiddens)；num_hiddens 为奇数时正弦列多一列。",
    _sin_cases,
    (Mistake("sin and cos swapped", _sin_swapped,
             "the even columns hold cosines and the odd ones sines; it is the other way round: "
             "P[i, 2j] = sin, P[i, 2j+1] = cos.",
             "偶数列放了余弦、奇数列放了正弦；应反过来：P[i, 2j] = sin，P[i, 2j+1] = cos。"),
     Mistake("frequency indexed by position", _sin_by_position,
             "the frequency changes with the position; it changes with the column pair j "
             "(w_j = base^(-2j/d)), and the position i multiplies it: angle i * w_j.",
             "频率随位置变了；它应随列对 j 变（w_j = base^(-2j/d)），位置 i 乘在它上面：角度 "
             "i * w_j。"),
     Mistake("exponent j / d instead of 2j / d", _sin_pair_index,
             "the exponent counts pairs (j / d) where it counts columns: w_j = base^(-2j/d), so "
             "the last pair's period reaches about 2π · base.",
             "指数按列对数（j / d）计算了，应按列数：w_j = base^(-2j/d)，这样最后一对的周期约为 "
             "2π · base。"),
     Mistake("sines and cosines in two halves", _sin_halves,
             "the sines fill the first half of the columns and the cosines the second; they "
             "alternate: column 2j holds sin, column 2j+1 holds cos of the same angle.",
             "正弦占了前一半列、余弦占了后一半；它们应交替排列：第 2j 列是正弦，第 2j+1 列是同一"
             "角度的余弦。"),
     Mistake("fails for an odd size", _sin_odd,
             "an odd num_hiddens has one more sine column than cosine columns: fill the cosines "
             "with angles[:, :num_hiddens // 2].",
             "num_hiddens 为奇数时，正弦列比余弦列多一列：余弦列只填 "
             "angles[:, :num_hiddens // 2]。")))


# ---- chapter 6: the rotary rotation -------------------------------------------------------


def _rotary_cases(gen):
    rope, rope100 = RotaryEmbedding(8), RotaryEmbedding(8, base=100.0)
    return [
        Case("positions 0 … 5", "位置 0 … 5", (rope, randn(gen, 2, 6, 8))),
        Case("heads (B, h, n, d)", "多头 (B, h, n, d)", (rope, randn(gen, 2, 3, 5, 8))),
        Case("explicit positions 10, 11, 12", "显式位置 10、11、12",
             (rope, randn(gen, 1, 3, 8), torch.tensor([10, 11, 12]))),
        Case("base 100", "底数 100", (rope100, randn(gen, 2, 4, 8))),
        Case("float16 at positions near 3000", "float16，位置接近 3000",
             (rope, randn(gen, 1, 4, 8, dtype=torch.float16), torch.tensor([0, 999, 2047, 2999]))),
        Case("one position", "一个位置", (rope, randn(gen, 2, 1, 8))),
        Case("heads from split_heads (not contiguous)", "split_heads 得到的头（不连续）",
             (rope, randn(gen, 2, 5, 3, 8).transpose(1, 2))),
    ]


def _rope(self, X, positions, *, sign=1.0, half_split=False, ignore_positions=False,
          in_dtype=False, flip=False):
    if positions is None or ignore_positions:
        positions = torch.arange(X.shape[-2], device=X.device)
    theta = self.theta.flip(0) if flip else self.theta
    kind = X.dtype if in_dtype else torch.float32
    angles = positions.to(kind)[:, None] * theta.to(kind)
    cos, sin = torch.cos(angles).to(X.dtype), torch.sin(angles).to(X.dtype) * sign
    if half_split:
        d = X.shape[-1] // 2
        x, y = X[..., :d], X[..., d:]
        return torch.cat([x * cos - y * sin, x * sin + y * cos], dim=-1)
    out = torch.empty_like(X)
    out[..., 0::2] = X[..., 0::2] * cos - X[..., 1::2] * sin
    out[..., 1::2] = X[..., 0::2] * sin + X[..., 1::2] * cos
    return out


def _rope_backwards(self, X, positions=None):
    return _rope(self, X, positions, sign=-1.0)


def _rope_halves(self, X, positions=None):
    return _rope(self, X, positions, half_split=True)


def _rope_positions_ignored(self, X, positions=None):
    return _rope(self, X, positions, ignore_positions=True)


def _rope_angles_in_dtype(self, X, positions=None):
    return _rope(self, X, positions, in_dtype=True)


def _rope_frequencies_reversed(self, X, positions=None):
    return _rope(self, X, positions, flip=True)


ROTARY = Task(
    "rotary", 6, RotaryEmbedding.forward,
    "RotaryEmbedding.forward: turn each pair (x_{2j}, x_{2j+1}) of the row at position i by the "
    "angle i * theta_j (self.theta, computed in float32): (x cos - y sin, x sin + y cos); "
    "positions default to 0 … n - 1.",
    "RotaryEmbedding.forward：把位置 i 那一行的每一对 (x_{2j}, x_{2j+1}) 转过角度 "
    "i * theta_j（self.theta，在 float32 中计算）：(x cos - y sin, x sin + y cos)；"
    "positions 默认为 0 … n - 1。",
    _rotary_cases,
    (Mistake("turned the other way", _rope_backwards,
             "your pairs turn by minus the angle (clockwise); they must turn "
             "counter-clockwise, (x, y) to (x cos - y sin, x sin + y cos).",
             "你的每一对都转了负的角度（顺时针）；应逆时针转：(x, y) 变为 "
             "(x cos - y sin, x sin + y cos)。"),
     Mistake("pairs from the two halves", _rope_halves,
             "the pairs are (x_j, x_{j+d/2}), the 'rotate half' layout of some libraries; this "
             "package rotates adjacent pairs (x_{2j}, x_{2j+1}).",
             "成对的是 (x_j, x_{j+d/2})，即一些库的“旋转一半”排布；本包旋转相邻的一对 "
             "(x_{2j}, x_{2j+1})。"),
     Mistake("positions ignored", _rope_positions_ignored,
             "the positions argument is ignored and rows are numbered 0 … n - 1; a decoder step "
             "passes the true positions (for example 10, 11, 12).",
             "positions 参数被忽略了，各行被编号为 0 … n - 1；解码器逐步运行时会传入真实的位置"
             "（例如 10、11、12）。"),
     Mistake("angles in float16", _rope_angles_in_dtype,
             "the angles i * theta_j are computed in the input's dtype; in float16 a position "
             "above 2048 is rounded and an angle of thousands of radians keeps no digit of its "
             "fraction. Compute them in float32, then cast cos and sin.",
             "角度 i * theta_j 是按输入的数据类型算的；在 float16 中，大于 2048 的位置会被舍入，"
             "几千弧度的角度连小数部分都保不住。请在 float32 中计算，再把 cos 和 sin 转回去。"),
     Mistake("frequencies reversed", _rope_frequencies_reversed,
             "the frequencies are reversed: pair 0 turns fastest (theta_0 = 1) and the last pair "
             "slowest.",
             "频率顺序反了：第 0 对转得最快（theta_0 = 1），最后一对最慢。")))


# ---- chapter 7: splitting and merging heads -----------------------------------------------


def _split_cases(gen):
    return [
        Case("12 features, 3 heads", "12 个特征、3 个头", (randn(gen, 2, 5, 12), 3)),
        Case("one head", "一个头", (randn(gen, 2, 4, 6), 1)),
        Case("as many heads as features", "头数等于特征数", (randn(gen, 1, 3, 4), 4)),
        Case("one position", "一个位置", (randn(gen, 2, 1, 8), 2)),
        Case("a slice of a wider tensor", "从更宽的张量切出的一片",
             (randn(gen, 2, 6, 16)[..., :12], 4)),
    ]


def _split_heads_first(x, heads):
    batch, n, _ = x.shape
    return x.reshape(batch, heads, n, x.shape[-1] // heads)


def _split_heads_inner(x, heads):
    batch, n, _ = x.shape
    return x.reshape(batch, n, x.shape[-1] // heads, heads).permute(0, 3, 1, 2)


def _split_no_transpose(x, heads):
    batch, n, _ = x.shape
    return x.reshape(batch, n, heads, x.shape[-1] // heads)


def _split_wrong_transpose(x, heads):
    batch, n, _ = x.shape
    return x.reshape(batch, n, heads, x.shape[-1] // heads).transpose(1, 3)


SPLIT_HEADS = Task(
    "split_heads", 7, MultiHeadAttention.split_heads,
    "MultiHeadAttention.split_heads: (B, n, heads * d_head) -> (B, heads, n, d_head); head k "
    "takes features k * d_head … (k + 1) * d_head - 1 of every position.",
    "MultiHeadAttention.split_heads：(B, n, heads * d_head) -> (B, heads, n, d_head)；第 k 个头"
    "取每个位置的第 k * d_head … (k + 1) * d_head - 1 个特征。",
    _split_cases,
    (Mistake("reshaped straight to (B, h, n, d_head)", _split_heads_first,
             "x is reshaped straight to (B, heads, n, d_head): that cuts the sequence, not each "
             "position's features. View it as (B, n, heads, d_head), then transpose(1, 2).",
             "x 被直接 reshape 成 (B, heads, n, d_head)：这切开的是序列，而不是每个位置的特征。"
             "应先看作 (B, n, heads, d_head)，再 transpose(1, 2)。"),
     Mistake("head as the inner axis", _split_heads_inner,
             "the features are split as (d_head, heads), so each head takes every h-th "
             "feature; split as (heads, d_head): head k takes a contiguous block.",
             "特征被拆成了 (d_head, heads)，于是每个头隔 h 个取一个特征；应拆成 (heads, d_head)："
             "第 k 个头取连续的一段。"),
     Mistake("not transposed", _split_no_transpose,
             "the result is still (B, n, heads, d_head); transpose(1, 2) makes the heads a batch "
             "axis: (B, heads, n, d_head).",
             "结果还是 (B, n, heads, d_head)；用 transpose(1, 2) 把头变成批量维："
             "(B, heads, n, d_head)。"),
     Mistake("transposed the wrong axes", _split_wrong_transpose,
             "the wrong axes are swapped; from (B, n, heads, d_head), swap axes 1 and 2.",
             "交换的轴不对；从 (B, n, heads, d_head) 出发，应交换第 1 和第 2 维。")))


def _merge_cases(gen):
    return [
        Case("3 heads of 4", "3 个头，每头 4 维", (randn(gen, 2, 3, 5, 4),)),
        Case("one head", "一个头", (randn(gen, 2, 1, 4, 6),)),
        Case("one position", "一个位置", (randn(gen, 2, 4, 1, 2),)),
        Case("heads from a transpose (not contiguous)", "由 transpose 得到的头（不连续）",
             (randn(gen, 2, 5, 3, 4).transpose(1, 2),)),
    ]


def _merge_no_transpose(x):
    batch, h, n, d_head = x.shape
    return x.reshape(batch, n, h * d_head)


def _merge_heads_last(x):
    batch, h, n, d_head = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, n, h * d_head)


def _merge_along_positions(x):
    batch, h, n, d_head = x.shape
    return x.reshape(batch, h * n, d_head)


def _merge_mean(x):
    return x.mean(1)


MERGE_HEADS = Task(
    "merge_heads", 7, MultiHeadAttention.merge_heads,
    "MultiHeadAttention.merge_heads: (B, h, n, d_head) -> (B, n, h * d_head), each position's "
    "head outputs concatenated [H_1, …, H_h] (the inverse of split_heads).",
    "MultiHeadAttention.merge_heads：(B, h, n, d_head) -> (B, n, h * d_head)，把每个位置各头的"
    "输出拼接起来 [H_1, …, H_h]（split_heads 的逆）。",
    _merge_cases,
    (Mistake("reshaped without the transpose", _merge_no_transpose,
             "reshaping (B, h, n, d_head) straight to (B, n, h * d_head) mixes positions of one "
             "head into one row; transpose(1, 2) first, so each row gathers one position's "
             "heads.",
             "把 (B, h, n, d_head) 直接 reshape 成 (B, n, h * d_head) 会把同一个头的不同位置混进"
             "一行；应先 transpose(1, 2)，让每一行收集同一个位置的各个头。"),
     Mistake("features interleaved across heads", _merge_heads_last,
             "the heads are interleaved feature by feature; concatenate them whole, [H_1, …, "
             "H_h]: from (B, n, h, d_head), reshape to (B, n, h * d_head).",
             "各头被逐个特征地交错排在一起；应整块拼接 [H_1, …, H_h]：从 (B, n, h, d_head) "
             "reshape 成 (B, n, h * d_head)。"),
     Mistake("concatenated along the positions", _merge_along_positions,
             "the heads are concatenated along the sequence (h * n rows); they are "
             "concatenated along the features of each position.",
             "各头沿序列方向拼接（h * n 行）；应沿每个位置的特征方向拼接。"),
     Mistake("heads averaged", _merge_mean,
             "the heads are averaged; multi-head attention concatenates their outputs, and W_o "
             "then mixes them.",
             "各头被取了平均；多头注意力把它们的输出拼接起来，再由 W_o 混合。")))


# ---- chapter 7: grouped-query heads -------------------------------------------------------


def _gqa_cases(gen):
    return [
        Case("8 query heads, 2 key/value heads", "8 个查询头、2 个键/值头",
             (randn(gen, 2, 8, 3, 4), randn(gen, 2, 2, 5, 4), randn(gen, 2, 2, 5, 6))),
        Case("one key/value head (multi-query)", "一个键/值头（多查询）",
             (randn(gen, 1, 4, 2, 4), randn(gen, 1, 1, 3, 4), randn(gen, 1, 1, 3, 4))),
        Case("as many key/value heads as query heads", "键/值头与查询头一样多",
             (randn(gen, 2, 3, 2, 4), randn(gen, 2, 3, 2, 4), randn(gen, 2, 3, 2, 4))),
        Case("6 query heads, 3 key/value heads", "6 个查询头、3 个键/值头",
             (randn(gen, 1, 6, 2, 4), randn(gen, 1, 3, 4, 4), randn(gen, 1, 3, 4, 2))),
        Case("no head axis (B, n, d)", "没有头这一维 (B, n, d)",
             (randn(gen, 2, 3, 4), randn(gen, 2, 5, 4), randn(gen, 2, 5, 4))),
    ]


def _gqa(queries, keys, values, repeat):
    if keys.dim() < 4 or keys.shape[-3] == queries.shape[-3]:
        return keys, values
    group = queries.shape[-3] // keys.shape[-3]
    return repeat(keys, group), repeat(values, group)


def _gqa_tiled(queries, keys, values):
    return _gqa(queries, keys, values, lambda x, g: x.repeat(1, g, 1, 1))


def _gqa_group_count(queries, keys, values):
    return _gqa(queries, keys, values,
                lambda x, g: x.repeat_interleave(x.shape[-3], dim=-3))


def _gqa_along_positions(queries, keys, values):
    return _gqa(queries, keys, values, lambda x, g: x.repeat_interleave(g, dim=-2))


def _gqa_values_left(queries, keys, values):
    k, _ = _gqa(queries, keys, values, lambda x, g: x.repeat_interleave(g, dim=-3))
    return k, values


SHARE_KV_HEADS = Task(
    "share_kv_heads", 7, share_kv_heads,
    "Grouped-query attention by copying: with h query heads and h_kv key/value heads (h_kv "
    "dividing h), repeat each key/value head for its group, so query head i reads key/value "
    "head i // (h / h_kv). Inputs without a head axis, or with h_kv = h, come back unchanged. "
    "Returns (keys, values).",
    "以复制实现分组查询注意力：有 h 个查询头和 h_kv 个键/值头（h_kv 整除 h）时，把每个键/值头"
    "为它那一组复制，使查询头 i 读键/值头 i // (h / h_kv)。没有头这一维、或 h_kv = h 时原样返回。"
    "返回 (keys, values)。",
    _gqa_cases,
    (Mistake("heads tiled instead of grouped", _gqa_tiled,
             "the key/value heads are tiled (1, 2, 1, 2, …), so query head i reads head "
             "i % h_kv; each must be repeated in place for its group (1, 1, 2, 2, …): "
             "repeat_interleave along the head axis.",
             "键/值头被平铺成 (1, 2, 1, 2, …)，于是查询头 i 读的是头 i % h_kv；每个头应就地为"
             "它那一组重复 (1, 1, 2, 2, …)：在头这一维上用 repeat_interleave。"),
     Mistake("repeated h_kv times", _gqa_group_count,
             "each head is repeated h_kv times; it is repeated once per query head of its "
             "group: h / h_kv times.",
             "每个头被重复了 h_kv 次；它应为组里的每个查询头重复一次：共 h / h_kv 次。"),
     Mistake("repeated along the positions", _gqa_along_positions,
             "the copies are made along the positions (dim -2); make them along the head axis "
             "(dim -3).",
             "复制是沿位置这一维（dim -2）做的；应沿头这一维（dim -3）复制。"),
     Mistake("values not repeated", _gqa_values_left,
             "only the keys are repeated; the values have the same heads and need the same "
             "copies.",
             "只复制了键；值有同样的头，也需要同样的复制。")),
    outputs=("keys", "values"))


# ---- chapter 7: multi-head attention ------------------------------------------------------


def _mha_cases(gen):
    mha = seeded(MultiHeadAttention(16, 4, query_size=16, key_size=16, value_size=16), gen)
    cross = seeded(MultiHeadAttention(12, 3, query_size=5, key_size=7, value_size=6), gen)
    gqa = seeded(MultiHeadAttention(16, 4, num_kv_heads=2, query_size=16, key_size=16,
                                    value_size=16), gen)
    X = randn(gen, 2, 5, 16)
    return [
        Case("self-attention, 4 heads", "自注意力，4 个头", (mha, X, X, X)),
        Case("cross-attention, sizes 5, 7, 6", "交叉注意力，维数 5、7、6",
             (cross, randn(gen, 2, 3, 5), randn(gen, 2, 4, 7), randn(gen, 2, 4, 6),
              torch.tensor([4, 2]))),
        Case("valid lengths (B, n_q)", "有效长度 (B, n_q)",
             (mha, X, X, X, torch.tensor([[1, 2, 3, 4, 5], [5, 5, 1, 1, 1]]))),
        Case("causal", "因果", (mha, X, X, X), {"is_causal": True}),
        Case("grouped heads (2 key/value heads)", "分组头（2 个键/值头）", (gqa, X, X, X)),
        Case("one position", "一个位置", (mha, X[:, :1], X[:, :1], X[:, :1])),
    ]


def _mha(self, queries, keys, values, valid_lens, is_causal, *, out=True, scale=None,
         merge_plain=False, rows=False, causal_ok=True, tile=False, split_plain=False):
    def split(x, heads):
        if split_plain:  # (B, n, heads * d_head) read as (B, heads, n, d_head)
            return x.reshape(x.shape[0], heads, x.shape[1], x.shape[2] // heads)
        return self.split_heads(x, heads)
    q = split(self.W_q(queries), self.num_heads)
    k = split(self.W_k(keys), self.num_kv_heads)
    v = split(self.W_v(values), self.num_kv_heads)
    group = self.num_heads // self.num_kv_heads
    if tile:
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    else:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    mask = padding_mask(valid_lens, q, k.shape[2])
    if rows and mask is not None:
        mask = padding_mask(valid_lens, q, q.shape[2]).transpose(-1, -2)
    if is_causal and causal_ok:
        c = causal_mask(q.shape[2], k.shape[2], device=q.device)
        mask = c if mask is None else mask & c
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    heads = masked_softmax(q @ k.transpose(-2, -1) * scale, mask=mask) @ v
    B, h, n, d = heads.shape
    if split_plain:  # the same mistake undone on the way back
        merged = heads.reshape(B, n, h * d)
    else:
        merged = heads.reshape(B, n, h * d) if merge_plain else self.merge_heads(heads)
    return self.W_o(merged) if out else merged


def _mha_no_w_o(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal, out=False)


def _mha_scale_hiddens(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                       is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal,
                scale=1 / math.sqrt(self.W_o.in_features))


def _mha_merge_plain(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                     is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal, merge_plain=True)


def _mha_on_queries(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                    is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal, rows=True)


def _mha_causal_ignored(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                        is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal, causal_ok=False)


def _mha_tiled(self, queries, keys, values, valid_lens=None, need_weights=None, *,
               is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal, tile=True)


def _mha_no_scale(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                  is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal, scale=1.0)


def _mha_split_plain(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                     is_causal=False, head_mask=None):
    return _mha(self, queries, keys, values, valid_lens, is_causal, split_plain=True)


MULTIHEAD = Task(
    "multihead_attention", 7, MultiHeadAttention.forward,
    "MultiHeadAttention.forward (need_weights and head_mask may be ignored; dropout is off in "
    "the check): project with self.W_q, W_k, W_v, split into heads (self.num_heads for "
    "queries, self.num_kv_heads for keys and values; split_heads and merge_heads are yours to "
    "use, attend_heads is not), attend in each head with scale 1 / sqrt(d_head) over the valid "
    "keys (and, when is_causal, keys j <= i), merge the heads, apply W_o.",
    "MultiHeadAttention.forward（可以不管 need_weights 和 head_mask；检查时不用 dropout）："
    "用 self.W_q、W_k、W_v 投影，拆成多个头（查询 self.num_heads 个，键和值 self.num_kv_heads "
    "个；可以用 split_heads 和 merge_heads，但不要用 attend_heads），在每个头里以 "
    "1 / sqrt(d_head) 的缩放在有效键上做注意力（is_causal 时只看 j <= i 的键），合并各头，"
    "再乘 W_o。",
    _mha_cases,
    (Mistake("no output projection", _mha_no_w_o,
             "W_o is missing: the concatenated heads go through the output projection W_o, "
             "which mixes what the heads found.",
             "少了 W_o：拼接后的各头要经过输出投影 W_o，由它混合各头找到的东西。"),
     Mistake("scaled by num_hiddens", _mha_scale_hiddens,
             "the scores are divided by sqrt(d), d = num_hiddens the layer's width; in each head "
             "they are divided by sqrt(d_head), d_head = d / num_heads, the size of that head's "
             "queries.",
             "分数除以了 sqrt(d)，d = num_hiddens 是这一层的宽度；每个头里应除以 sqrt(d_head)，"
             "d_head = d / num_heads，即该头查询的维数。"),
     Mistake("no scaling", _mha_no_scale,
             "the scores are not scaled: in each head divide q · k by sqrt(d_head).",
             "分数没有缩放：每个头里 q · k 都要除以 sqrt(d_head)。"),
     Mistake("heads split without the transpose", _mha_split_plain,
             "the projections are reshaped straight to (B, h, n, d_head), which cuts the "
             "sequence, not each position's features: view them as (B, n, h, d_head), then "
             "transpose(1, 2) (split_heads).",
             "投影被直接 reshape 成 (B, h, n, d_head)，切开的是序列而不是每个位置的特征：应先看作 "
             "(B, n, h, d_head)，再 transpose(1, 2)（即 split_heads）。"),
     Mistake("heads merged without the transpose", _mha_merge_plain,
             "the heads (B, h, n, d_head) are reshaped to (B, n, h * d_head) without moving the "
             "head axis next to the features: transpose(1, 2) first (merge_heads).",
             "各头 (B, h, n, d_head) 没有先把头这一维挪到特征旁边就 reshape 成了 "
             "(B, n, h * d_head)：应先 transpose(1, 2)（即 merge_heads）。"),
     Mistake("padding masked on the queries", _mha_on_queries,
             "the valid lengths mask the queries instead of the keys.",
             "有效长度掩蔽的是查询而不是键。"),
     Mistake("is_causal ignored", _mha_causal_ignored,
             "is_causal=True changes nothing; with it, query i may not see keys j > i.",
             "is_causal=True 没有起作用；此时查询 i 不能看 j > i 的键。"),
     Mistake("key/value heads tiled", _mha_tiled,
             "with grouped heads, query head i must read key/value head "
             "i // (num_heads / num_kv_heads) (repeat_interleave), not i % num_kv_heads "
             "(repeat).",
             "分组头时，查询头 i 应读键/值头 i // (num_heads / num_kv_heads)"
             "（repeat_interleave），而不是 i % num_kv_heads（repeat）。")))


# ---- chapter 8: the encoder block ---------------------------------------------------------


def _block_cases(gen):
    block = seeded(TransformerEncoderBlock(16, 32, 4), gen, scale=0.3)
    X = randn(gen, 2, 5, 16)
    return [
        Case("5 positions", "5 个位置", (block, X)),
        Case("valid lengths", "有效长度", (block, X, torch.tensor([2, 5]))),
        Case("causal", "因果", (block, X), {"is_causal": True}),
        Case("one position", "一个位置", (block, X[:, :1])),
    ]


def _block(self, X, valid_lens, is_causal, *, variant=""):
    def attention(H):
        return self.attention(H, H, H, None if variant == "no lens" else valid_lens,
                              is_causal=is_causal)
    ln1, ln2 = self.addnorm1.ln, self.addnorm2.ln
    if variant == "pre":
        Y = X + attention(ln1(X))
        return Y + self.ffn(ln2(Y))
    if variant == "no residual":
        Y = ln1(attention(X))
        return ln2(self.ffn(Y))
    Y = ln1(X + attention(X))
    if variant == "ffn on X":
        return ln2(Y + self.ffn(X))
    if variant == "skip from X":
        return ln2(X + self.ffn(Y))
    return ln2(Y + self.ffn(Y))


def _block_pre_norm(self, X, valid_lens=None, *, is_causal=False, head_mask=None):
    return _block(self, X, valid_lens, is_causal, variant="pre")


def _block_no_residual(self, X, valid_lens=None, *, is_causal=False, head_mask=None):
    return _block(self, X, valid_lens, is_causal, variant="no residual")


def _block_ffn_on_input(self, X, valid_lens=None, *, is_causal=False, head_mask=None):
    return _block(self, X, valid_lens, is_causal, variant="ffn on X")


def _block_skip_from_input(self, X, valid_lens=None, *, is_causal=False, head_mask=None):
    return _block(self, X, valid_lens, is_causal, variant="skip from X")


def _block_no_lens(self, X, valid_lens=None, *, is_causal=False, head_mask=None):
    return _block(self, X, valid_lens, is_causal, variant="no lens")


ENCODER_BLOCK = Task(
    "encoder_block", 8, TransformerEncoderBlock.forward,
    "TransformerEncoderBlock.forward (post-norm, head_mask may be ignored): "
    "Y = LayerNorm(X + MultiHead(X, X, X)) with self.attention and self.addnorm1, then "
    "LayerNorm(Y + FFN(Y)) with self.ffn and self.addnorm2; valid_lens and is_causal go to the "
    "attention.",
    "TransformerEncoderBlock.forward（后置规范化，可以不管 head_mask）：用 self.attention 和 "
    "self.addnorm1 得到 Y = LayerNorm(X + MultiHead(X, X, X))，再用 self.ffn 和 self.addnorm2 "
    "得到 LayerNorm(Y + FFN(Y))；valid_lens 和 is_causal 交给注意力。",
    _block_cases,
    (Mistake("normalised before the sublayer", _block_pre_norm,
             "this is pre-norm, X + Sublayer(LayerNorm(X)); the block is post-norm, as in "
             "Vaswani et al.: LayerNorm(X + Sublayer(X)).",
             "这是前置规范化 X + Sublayer(LayerNorm(X))；这个块是后置规范化，与 Vaswani 等人相同："
             "LayerNorm(X + Sublayer(X))。"),
     Mistake("no residual connections", _block_no_residual,
             "the residual connections are missing: each sublayer's output is added to its "
             "input before the LayerNorm.",
             "少了残差连接：每个子层的输出要先加上它的输入，再做 LayerNorm。"),
     Mistake("FFN reads the block's input", _block_ffn_on_input,
             "the FFN reads X; it reads Y, the output of the attention sublayer.",
             "FFN 读的是 X；它应读注意力子层的输出 Y。"),
     Mistake("second residual from the block's input", _block_skip_from_input,
             "the second residual adds X; it adds Y, the input of the FFN sublayer.",
             "第二个残差加的是 X；应加 FFN 子层的输入 Y。"),
     Mistake("valid lengths dropped", _block_no_lens,
             "valid_lens does not reach the attention, so positions attend to padding.",
             "valid_lens 没有传给注意力，于是各位置关注到了填充。")))


# ---- chapter 8: the decoder's KV-cache step ----------------------------------------------


def _cache_cases(gen):
    block = seeded(TransformerDecoderBlock(16, 32, 4), gen, scale=0.3)
    gqa = seeded(TransformerDecoderBlock(16, 32, 4, num_kv_heads=2), gen, scale=0.3)

    def cache(b, t):
        h_kv = b.attention1.num_kv_heads
        return randn(gen, 2, h_kv, t, 4), randn(gen, 2, h_kv, t, 4)
    return [
        Case("no cache, 4 positions", "没有缓存，4 个位置", (block, randn(gen, 2, 4, 16), None)),
        Case("3 cached positions, one new", "缓存了 3 个位置，来 1 个新的",
             (block, randn(gen, 2, 1, 16), cache(block, 3))),
        Case("3 cached positions, two new at once", "缓存了 3 个位置，一次来 2 个新的",
             (block, randn(gen, 2, 2, 16), cache(block, 3))),
        Case("grouped heads, 2 cached, one new", "分组头，缓存了 2 个，来 1 个新的",
             (gqa, randn(gen, 2, 1, 16), cache(gqa, 2))),
    ]


def _step(self, X, cache, *, variant=""):
    att = self.attention1
    q = att.project_queries(X)
    k, v = att.project_kv(X, X)
    if cache is not None and variant == "before attending":  # attend to the cache, then grow it
        out = att.attend_heads(q, cache[0], cache[1])
        return out, (torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2))
    if cache is not None:
        if variant == "new first":
            k, v = torch.cat([k, cache[0]], 2), torch.cat([v, cache[1]], 2)
        elif variant != "forgot":
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
    n, t = X.shape[1], k.shape[2] - X.shape[1]
    shift = 0 if variant == "mask from zero" else t
    mask = torch.ones(n, k.shape[2], dtype=torch.bool, device=X.device).tril(shift)
    out = att.attend_heads(q, k, v, mask)
    if variant == "forgot" and cache is not None:
        return out, (torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2))
    if variant == "not grown" and cache is not None:
        return out, cache
    return out, (k, v)


def _cache_no_mask(self, X, cache):
    att = self.attention1
    q = att.project_queries(X)
    k, v = att.project_kv(X, X)
    if cache is not None:
        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
    return att.attend_heads(q, k, v), (k, v)


def _cache_before_attending(self, X, cache):
    return _step(self, X, cache, variant="before attending")


def _cache_mask_from_zero(self, X, cache):
    return _step(self, X, cache, variant="mask from zero")


def _cache_new_first(self, X, cache):
    return _step(self, X, cache, variant="new first")


def _cache_forgot(self, X, cache):
    return _step(self, X, cache, variant="forgot")


def _cache_not_grown(self, X, cache):
    return _step(self, X, cache, variant="not grown")


KV_CACHE_STEP = Task(
    "kv_cache_step", 8, TransformerDecoderBlock.self_attention,
    "TransformerDecoderBlock.self_attention: causal self-attention of X (B, n, d) over the "
    "cached keys and values (B, h_kv, t, d_head) and its own; query i of X sits at position "
    "t + i and sees keys 0 … t + i. cache is None on the first call (t = 0), else (keys, "
    "values). Use self.attention1: project_queries(X) -> (B, h, n, d_head), project_kv(X, X) "
    "-> keys, values (B, h_kv, n, d_head), and attend_heads(q, k, v, mask), which applies W_o; "
    "mask is boolean, True = may attend, broadcastable to (B, h, n, t + n) (its is_causal is "
    "aligned to the top left, which is wrong once there is a cache). Returns (output "
    "(B, n, d), the grown cache (keys, values)).",
    "TransformerDecoderBlock.self_attention：X (B, n, d) 在缓存的键和值 (B, h_kv, t, d_head) "
    "以及它自己的键和值上做因果自注意力；X 的第 i 个查询位于位置 t + i，能看到键 0 … t + i。"
    "第一次调用时 cache 为 None（t = 0），否则为 (keys, values)。使用 self.attention1："
    "project_queries(X) -> (B, h, n, d_head)，project_kv(X, X) -> keys, values "
    "(B, h_kv, n, d_head)，以及 attend_heads(q, k, v, mask)（它会乘上 W_o）；mask 是布尔型，"
    "True 表示可以关注，可广播到 (B, h, n, t + n)（它的 is_causal 从左上角对齐，有缓存时就"
    "不对了）。"
    "返回 (输出 (B, n, d), 增长后的缓存 (keys, values))。",
    _cache_cases,
    (Mistake("the new position misses itself", _cache_before_attending,
             "the new queries attend to the cache only and the new keys are appended after "
             "attending; append first, so each new position also sees itself.",
             "新查询只关注了缓存，新的键是在注意力之后才追加的；应先追加，这样每个新位置也能看到"
             "它自己。"),
     Mistake("causal mask not shifted by the cache", _cache_mask_from_zero,
             "with t cached positions, query i of X is position t + i: the mask is "
             "tril(t), not tril(0) (or is_causal), which lets query i see only keys 0 … i, the "
             "oldest, and hides the newest keys, its own among them.",
             "缓存了 t 个位置时，X 的第 i 个查询位于位置 t + i：掩码应是 tril(t)，而不是 "
             "tril(0)（或 is_causal）；后者只让查询 i 看到最早的键 0 … i，却掩蔽了最新的键，"
             "包括它自己的。"),
     Mistake("no causal mask", _cache_no_mask,
             "there is no causal mask: one new query may see every key, but when several "
             "positions arrive at once (the first call, a prompt), query i must not see the "
             "positions after it: mask with tril(t).",
             "没有因果掩码：只来一个新查询时它确实可以看所有键，但一次来多个位置时（第一次调用、"
             "一段提示），查询 i 不能看它后面的位置：用 tril(t) 掩蔽。"),
     Mistake("new keys before the cache", _cache_new_first,
             "the new keys go before the cached ones; the cache keeps positions in order, so "
             "append them after: torch.cat([cache, new], dim=2).",
             "新的键放在了缓存之前；缓存按位置顺序保存，应追加在后面："
             "torch.cat([cache, new], dim=2)。"),
     Mistake("cache not read", _cache_forgot,
             "the new queries attend only to this call's keys; they must also read the t "
             "cached ones.",
             "新查询只关注了本次调用的键；它们还必须读缓存里的 t 个键。"),
     Mistake("cache not grown", _cache_not_grown,
             "the returned cache is the old one; return it with this call's keys and values "
             "appended, for the next step.",
             "返回的是旧缓存；应返回追加了本次键和值的缓存，供下一步使用。")),
    outputs=("output", "cache keys", "cache values"))

TASKS = [SELF_ATTENTION, CAUSAL_MASK, SINUSOIDAL_TABLE, ROTARY, SPLIT_HEADS, MERGE_HEADS,
         SHARE_KV_HEADS, MULTIHEAD, ENCODER_BLOCK, KV_CACHE_STEP]
