"""Practice tasks of chapters 9 and 10: the online softmax's statistics, attention tile by tile,
sliding windows, patches as tokens and attention rollout."""
from __future__ import annotations

import math

import torch

from ..efficient import chunked_attention, sliding_window_attention, softmax_statistics
from ..masking import causal_mask, masked_softmax, padding_mask
from ..vision import attention_rollout, patchify
from .checking import Case, Mistake, Task
from .inputs import randn

# ---- chapter 9: the online softmax --------------------------------------------------------


def _stats_cases(gen):
    x = randn(gen, 3, 300, scale=3)
    masked_start = x.clone()
    masked_start[1, :128] = float("-inf")  # a first block the mask hides entirely
    return [
        Case("300 scores, blocks of 128", "300 个分数，每块 128", (x,)),
        Case("blocks of 1", "每块 1 个", (x[:, :40], 1)),
        Case("one block larger than the row", "一块比整行还长", (x, 512)),
        Case("a first block of -inf", "第一块全是 -inf", (masked_start, 128)),
        Case("scores that grow along the row", "沿行递增的分数",
             (torch.linspace(-20, 20, 90).repeat(2, 1), 16)),
        Case("(B, h, n) in float64", "(B, h, n)，float64",
             (randn(gen, 2, 2, 70, dtype=torch.float64, scale=5), 32)),
    ]


def _stats(x, block_size, *, rescale="right", start=None, running=True):
    lowest = torch.finfo(x.dtype).min if start is None else start
    m = torch.full(x.shape[:-1], lowest, dtype=x.dtype, device=x.device)
    l = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for s in range(0, x.shape[-1], block_size):
        block = x[..., s:s + block_size]
        m_new = torch.maximum(m, block.amax(-1)) if running else block.amax(-1)
        factor = {"right": torch.exp(m - m_new), "none": torch.ones_like(m),
                  "inverted": torch.exp(m_new - m)}[rescale]
        l = l * factor + torch.exp(block - m_new[..., None]).sum(-1)
        m = m_new
    return m, l


def _stats_not_rescaled(x, block_size=128):
    return _stats(x, block_size, rescale="none")


def _stats_rescaled_inverted(x, block_size=128):
    return _stats(x, block_size, rescale="inverted")


def _stats_from_minus_inf(x, block_size=128):
    return _stats(x, block_size, start=float("-inf"))


def _stats_block_maximum(x, block_size=128):
    return _stats(x, block_size, running=False)


SOFTMAX_STATISTICS = Task(
    "softmax_statistics", 9, softmax_statistics,
    "One pass over the last axis of x in blocks of block_size, keeping the running maximum m "
    "and the running sum l = sum_j exp(x_j - m), rescaled whenever the maximum grows: "
    "l <- l * exp(m_old - m_new) + sum_block exp(x_j - m_new). Returns (m, l).",
    "沿 x 的最后一维按 block_size 分块扫一遍，维护当前最大值 m 和当前和 l = sum_j exp(x_j - m)，"
    "最大值变大时重新缩放：l <- l * exp(m_old - m_new) + sum_block exp(x_j - m_new)。"
    "返回 (m, l)。",
    _stats_cases,
    (Mistake("the sum not rescaled", _stats_not_rescaled,
             "when the maximum grows, the sum so far still counts exp(x_j - m_old); multiply it "
             "by exp(m_old - m_new) before adding the new block.",
             "最大值变大时，之前的和仍按 exp(x_j - m_old) 计；加新块之前要先乘以 "
             "exp(m_old - m_new)。"),
     Mistake("rescaled the wrong way", _stats_rescaled_inverted,
             "the sum is multiplied by exp(m_new - m_old), which is >= 1; the factor is "
             "exp(m_old - m_new) <= 1: every earlier term shrinks relative to the new maximum.",
             "和被乘以了 exp(m_new - m_old)，它 >= 1；因子应是 exp(m_old - m_new) <= 1："
             "之前的每一项相对于新的最大值都变小了。"),
     Mistake("started at -inf", _stats_from_minus_inf,
             "m starts at -inf, so a first block of -inf scores gives exp(-inf - (-inf)) = NaN; "
             "start at torch.finfo(x.dtype).min, which is below every score but finite.",
             "m 从 -inf 开始，于是全为 -inf 的第一块会得到 exp(-inf - (-inf)) = NaN；应从 "
             "torch.finfo(x.dtype).min 开始：它比所有分数都小，但有限。"),
     Mistake("the block's maximum, not the running one", _stats_block_maximum,
             "m is each block's own maximum; it is the running maximum over all blocks so far, "
             "torch.maximum(m, block.amax(-1)).",
             "m 取的是每块自己的最大值；它应是到目前为止所有块的最大值："
             "torch.maximum(m, block.amax(-1))。")),
    outputs=("m", "l"))


# ---- chapter 9: attention tile by tile ----------------------------------------------------


def _tiled_cases(gen):
    q, k, v = randn(gen, 2, 40, 8), randn(gen, 2, 40, 8), randn(gen, 2, 40, 6)
    return [
        Case("40 positions, blocks of 16", "40 个位置，每块 16", (q, k, v), {"block_size": 16}),
        Case("causal, blocks of 16", "因果，每块 16", (q, k, v),
             {"is_causal": True, "block_size": 16}),
        Case("valid lengths, one of them 0", "有效长度，其中一个为 0",
             (q, k, v, torch.tensor([0, 23])), {"block_size": 16}),
        Case("7 queries, 40 keys, a boolean mask", "7 个查询、40 个键，布尔掩码",
             (q[:, :7], k, v), {"mask": randn(gen, 7, 40) > -0.5, "block_size": 8}),
        Case("heads, grouped (4 query heads, 2 key/value heads)",
             "分组头（4 个查询头、2 个键/值头）",
             (randn(gen, 1, 4, 20, 8), randn(gen, 1, 2, 20, 8), randn(gen, 1, 2, 20, 8)),
             {"block_size": 8, "is_causal": True}),
        Case("one block for everything", "只有一块", (q, k, v), {"block_size": 256}),
        Case("scale 0.5", "缩放 0.5", (q, k, v), {"scale": 0.5, "block_size": 16}),
    ]


def _tiled(queries, keys, values, valid_lens, is_causal, mask, scale, block_size, *,
           rescale=True, per_tile=False, guard=True, use_scale=True):
    group = queries.shape[-3] // keys.shape[-3] if keys.dim() >= 4 else 1
    keys, values = keys.repeat_interleave(group, -3), values.repeat_interleave(group, -3)
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    scale = (1 / math.sqrt(queries.shape[-1]) if scale is None else scale) if use_scale else 1.0
    allowed = torch.ones(n_q, n_k, dtype=torch.bool, device=queries.device)
    lens = padding_mask(valid_lens, queries, n_k)
    if lens is not None:
        allowed = allowed & lens
    if mask is not None:
        allowed = allowed & mask
    if is_causal:
        allowed = allowed & causal_mask(n_q, n_k, device=queries.device)
    allowed = allowed.expand(*queries.shape[:-2], n_q, n_k)
    lowest = torch.finfo(queries.dtype).min
    m = torch.full(queries.shape[:-1], lowest, dtype=queries.dtype, device=queries.device)
    l = torch.zeros_like(m)
    acc = torch.zeros(*queries.shape[:-1], values.shape[-1], dtype=queries.dtype,
                      device=queries.device)
    for k0 in range(0, n_k, block_size):
        k1 = min(k0 + block_size, n_k)
        s = queries @ keys[..., k0:k1, :].transpose(-2, -1) * scale
        ok = allowed[..., k0:k1]
        s = s.masked_fill(~ok, lowest)
        m_new = torch.maximum(m, s.amax(-1))
        p = torch.exp(s - m_new[..., None]).masked_fill(~ok, 0.0)
        if per_tile:
            acc = acc + masked_softmax(s, mask=ok) @ values[..., k0:k1, :]
            m = m_new
            continue
        alpha = torch.exp(m - m_new) if rescale else torch.ones_like(m)
        l = alpha * l + p.sum(-1)
        acc = alpha[..., None] * acc + p @ values[..., k0:k1, :]
        m = m_new
    if per_tile:
        return acc
    if guard:
        return torch.where(l[..., None] > 0, acc / l.clamp_min(1e-30)[..., None], 0.0)
    return acc / l[..., None]


def _tiled_not_rescaled(queries, keys, values, valid_lens=None, *, is_causal=False, mask=None,
                        scale=None, block_size=256):
    return _tiled(queries, keys, values, valid_lens, is_causal, mask, scale, block_size,
                  rescale=False)


def _tiled_per_tile(queries, keys, values, valid_lens=None, *, is_causal=False, mask=None,
                    scale=None, block_size=256):
    return _tiled(queries, keys, values, valid_lens, is_causal, mask, scale, block_size,
                  per_tile=True)


def _tiled_zero_rows_nan(queries, keys, values, valid_lens=None, *, is_causal=False, mask=None,
                         scale=None, block_size=256):
    return _tiled(queries, keys, values, valid_lens, is_causal, mask, scale, block_size,
                  guard=False)


def _tiled_no_scale(queries, keys, values, valid_lens=None, *, is_causal=False, mask=None,
                    scale=None, block_size=256):
    return _tiled(queries, keys, values, valid_lens, is_causal, mask, scale, block_size,
                  use_scale=False)


TILED_ATTENTION = Task(
    "tiled_attention", 9, chunked_attention,
    "chunked_attention's forward: exact softmax(Q K^T * scale) V (scale 1 / sqrt(d) by default) "
    "computed one block of keys at a time, with a running maximum m, running sum l and running "
    "weighted sum of values per query, each rescaled by exp(m_old - m_new) when the maximum "
    "grows; output acc / l. Masks: valid_lens, mask, is_causal; a query with no key gets zeros.",
    "chunked_attention 的前向：一次处理一块键，精确计算 softmax(Q K^T * scale) V（默认 scale "
    "为 1 / sqrt(d)）；每个查询维护当前最大值 m、当前和 l 以及当前的值加权和，最大值变大时都乘以 "
    "exp(m_old - m_new)；输出 acc / l。掩码：valid_lens、mask、is_causal；没有键的查询输出为零。",
    _tiled_cases,
    (Mistake("the accumulator not rescaled", _tiled_not_rescaled,
             "when the maximum grows, the running sum and the weighted sum of values keep "
             "their old scale; multiply both by alpha = exp(m_old - m_new) before adding the "
             "tile.",
             "最大值变大时，当前和与值的加权和仍保持旧的尺度；加入新块之前，两者都要乘以 "
             "alpha = exp(m_old - m_new)。"),
     Mistake("each tile normalised on its own", _tiled_per_tile,
             "each tile gets its own softmax and the tiles' outputs are added; the softmax "
             "normalises over all keys, so keep l and divide once at the end.",
             "每块各做一次 softmax，再把各块的输出相加；softmax 是在全部键上归一化的，所以要"
             "保留 l，最后只除一次。"),
     Mistake("no guard for a query with no key", _tiled_zero_rows_nan,
             "a query with no key ends with l = 0, and acc / l = 0 / 0 = NaN; give it a zero "
             "output.",
             "没有键的查询最后 l = 0，acc / l = 0 / 0 = NaN；应让它输出零。"),
     Mistake("no scaling", _tiled_no_scale,
             "the scores are not scaled: multiply q · k by scale, 1 / sqrt(d) when scale is "
             "None.",
             "分数没有缩放：q · k 要乘以 scale；scale 为 None 时取 1 / sqrt(d)。")))


# ---- chapter 9: sliding windows -----------------------------------------------------------


def _window_cases(gen):
    q, k, v = randn(gen, 2, 20, 8), randn(gen, 2, 20, 8), randn(gen, 2, 20, 4)
    return [
        Case("20 positions, window 3", "20 个位置，窗口 3", (q, k, v, 3)),
        Case("causal, window 3", "因果，窗口 3", (q, k, v, 3), {"is_causal": True}),
        Case("valid lengths", "有效长度", (q, k, v, 4), {"valid_lens": torch.tensor([7, 20])}),
        Case("window 1", "窗口 1", (q, k, v, 1)),
        Case("a window wider than the sequence", "窗口比序列还宽",
             (q[:, :6], k[:, :6], v[:, :6], 9)),
        Case("grouped heads", "分组头", (randn(gen, 1, 4, 12, 8), randn(gen, 1, 2, 12, 8),
                                          randn(gen, 1, 2, 12, 8), 2)),
        Case("scale 0.5", "缩放 0.5", (q, k, v, 2), {"scale": 0.5}),
    ]


def _window(queries, keys, values, window, is_causal, valid_lens, scale, *, rule,
            use_lens=True, tile=False, nan_rows=False):
    group = queries.shape[-3] // keys.shape[-3] if keys.dim() >= 4 else 1
    if tile:
        keys, values = keys.repeat(1, group, 1, 1), values.repeat(1, group, 1, 1)
    else:
        keys, values = keys.repeat_interleave(group, -3), values.repeat_interleave(group, -3)
    n = queries.shape[-2]
    i = torch.arange(n, device=queries.device)[:, None]
    j = torch.arange(n, device=queries.device)[None, :]
    allowed = rule(i, j, window, is_causal)
    lens = padding_mask(valid_lens, queries, n)
    if lens is not None and use_lens:
        allowed = allowed & lens
    scale = 1 / math.sqrt(queries.shape[-1]) if scale is None else scale
    scores = queries @ keys.transpose(-2, -1) * scale
    if nan_rows:
        return torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1) @ values
    return masked_softmax(scores, mask=allowed) @ values


def _right_window(i, j, w, causal):
    return ((i - j).abs() <= w) & ((j <= i) if causal else True)


def _window_without_self(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                         scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, scale,
                   rule=lambda i, j, w, c: _right_window(i, j, w, c) & (j != i))


def _window_strict(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                   scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, scale,
                   rule=lambda i, j, w, c: ((i - j).abs() < w) & ((j <= i) if c else True))


def _window_causal_ignored(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                           scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, scale,
                   rule=lambda i, j, w, c: (i - j).abs() <= w)


def _window_one_sided(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                      scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, scale,
                   rule=lambda i, j, w, c: (i - j >= 0) & (i - j <= w))


def _window_lens_ignored(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                         scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, scale,
                   rule=_right_window, use_lens=False)


def _window_minus_inf(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                      scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, scale,
                   rule=_right_window, nan_rows=True)


def _window_heads_tiled(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                        scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, scale,
                   rule=_right_window, tile=True)


def _window_scale_ignored(queries, keys, values, window, *, is_causal=False, valid_lens=None,
                          scale=None):
    return _window(queries, keys, values, window, is_causal, valid_lens, None,
                   rule=_right_window)


SLIDING_WINDOW = Task(
    "sliding_window", 9, sliding_window_attention,
    "Self-attention within a window, for queries (B, [h,] n, d), keys (B, [h_kv,] n, d) and "
    "values (B, [h_kv,] n, d_v), h_kv dividing h: each query i attends to the keys j with "
    "|i - j| <= window (i - window <= j <= i when is_causal), among the valid ones (j < "
    "valid_lens, one length per sequence); scores q · k * scale, scale 1 / sqrt(d) when None. "
    "A query with no key to attend to outputs zeros. A dense mask is fine for the check (the "
    "package's version never builds one).",
    "窗口内的自注意力，queries (B, [h,] n, d)、keys (B, [h_kv,] n, d)、values (B, [h_kv,] n, "
    "d_v)，h_kv 整除 h：每个查询 i 关注满足 |i - j| <= window 的键 j（is_causal 时为 "
    "i - window <= j <= i），且只在有效键中（j < valid_lens，每个序列一个长度）；分数为 "
    "q · k * scale，scale 为 None 时取 1 / sqrt(d)。没有可关注的键的查询输出零。检查时用稠密"
    "掩码即可（包里的版本从不构造它）。",
    _window_cases,
    (Mistake("the window excludes the query itself", _window_without_self,
             "the query's own position is left out; the window |i - j| <= window includes "
             "j = i.",
             "查询自己的位置被排除了；窗口 |i - j| <= window 包含 j = i。"),
     Mistake("one key too few on each side", _window_strict,
             "your window is |i - j| < window, which leaves out the keys exactly window away; "
             "the window is |i - j| <= window (i - window <= j <= i when causal).",
             "你的窗口写成了 |i - j| < window，漏掉了恰好相距 window 的键；窗口应是 "
             "|i - j| <= window（因果时为 i - window <= j <= i）。"),
     Mistake("is_causal ignored", _window_causal_ignored,
             "is_causal=True changes nothing; with it the window is one-sided: "
             "i - window <= j <= i.",
             "is_causal=True 没有起作用；此时窗口只有一侧：i - window <= j <= i。"),
     Mistake("always one-sided", _window_one_sided,
             "the window only looks back even without is_causal; without it, it reaches "
             "window positions on both sides.",
             "即使没有 is_causal，窗口也只向前看；没有 is_causal 时它应向两侧各伸 window 个位置。"),
     Mistake("valid lengths ignored", _window_lens_ignored,
             "valid_lens is ignored, so queries near the end read padding.",
             "valid_lens 被忽略了，于是靠近末尾的查询读到了填充。"),
     Mistake("-inf without zeroing", _window_minus_inf,
             "masking with -inf leaves a query with no key in its window (past a short "
             "sequence's end) with softmax(-inf, …, -inf) = NaN; such a query outputs zeros "
             "(masked_softmax does this).",
             "用 -inf 掩蔽时，窗口里没有任何键的查询（在短序列末尾之后）会得到 "
             "softmax(-inf, …, -inf) = NaN；这样的查询应输出零（masked_softmax 就是这样做的）。"),
     Mistake("key/value heads tiled", _window_heads_tiled,
             "with grouped heads, query head i must read key/value head i // (h / h_kv) "
             "(repeat_interleave), not i % h_kv (repeat).",
             "分组头时，查询头 i 应读键/值头 i // (h / h_kv)（repeat_interleave），而不是 "
             "i % h_kv（repeat）。"),
     Mistake("scale ignored", _window_scale_ignored,
             "the scale argument is ignored; 1 / sqrt(d) is only its default, when scale is "
             "None.",
             "scale 参数被忽略了；1 / sqrt(d) 只是 scale 为 None 时的默认值。")))


# ---- chapter 10: patches as tokens --------------------------------------------------------


def _patch_cases(gen):
    images = randn(gen, 2, 3, 8, 8)
    return [
        Case("8 × 8, patches of 4", "8 × 8，4 × 4 的图像块", (images, 4)),
        Case("patches of 1 (every pixel a token)", "1 × 1 的图像块（每个像素一个词元）",
             (images, 1)),
        Case("one patch for the whole image", "整张图一个图像块", (images, 8)),
        Case("4 × 8, patches of 2", "4 × 8，2 × 2 的图像块", (randn(gen, 1, 3, 4, 8), 2)),
        Case("one channel", "单通道", (randn(gen, 2, 1, 6, 6), 3)),
        Case("channels-last memory", "通道在最后的内存布局",
             (randn(gen, 2, 3, 4, 4).to(memory_format=torch.channels_last), 2)),
        Case("float64", "float64", (randn(gen, 1, 2, 4, 6, dtype=torch.float64), 2)),
    ]


def _patches(images, patch_size, order, *, square=False):
    """patchify with the grid axes (B, C, rows, P, cols, P) permuted to ``order``; square: the
    grid taken as rows x rows."""
    B, C, H, W = images.shape
    P = patch_size
    x = images.reshape(B, C, H // P, P, (H if square else W) // P, P).permute(*order)
    return x.reshape(B, -1, C * P * P)


def _patch_channels_last(images, patch_size):
    return _patches(images, patch_size, (0, 2, 4, 3, 5, 1))


def _patch_column_major(images, patch_size):
    return _patches(images, patch_size, (0, 4, 2, 1, 3, 5))


def _patch_no_permute(images, patch_size):
    B, C, H, W = images.shape
    return images.reshape(B, (H // patch_size) * (W // patch_size), C * patch_size ** 2)


def _patch_transposed(images, patch_size):
    return _patches(images, patch_size, (0, 2, 4, 1, 5, 3))


def _patch_square(images, patch_size):
    return _patches(images, patch_size, (0, 2, 4, 1, 3, 5), square=True)


PATCHIFY = Task(
    "patchify", 10, patchify,
    "images (B, C, H, W) -> (B, (H/P)(W/P), C P P): the P × P patches in row-major order (left "
    "to right, then top to bottom), each flattened channel by channel, row by row (the order of "
    "a Conv2d weight (out, C, P, P)). H and W are multiples of P; the dtype is kept.",
    "images (B, C, H, W) -> (B, (H/P)(W/P), C P P)：P × P 的图像块按行优先排列（先从左到右，"
    "再从上到下），每块按通道、再按行展平（与 Conv2d 权重 (out, C, P, P) 的顺序相同）。H 和 W "
    "都是 P 的倍数；数据类型保持不变。",
    _patch_cases,
    (Mistake("channels last inside a patch", _patch_channels_last,
             "each patch is flattened as (P, P, C), pixel by pixel; flatten it as (C, P, P), "
             "channel by channel, so that it matches a Conv2d's weight.",
             "每块按 (P, P, C) 逐像素展平了；应按 (C, P, P) 逐通道展平，才与 Conv2d 的权重对应。"),
     Mistake("patches in column-major order", _patch_column_major,
             "the patches run down the columns first; the order is row-major: the patch at "
             "(row r, column c) is token r * (W/P) + c.",
             "图像块先沿列往下排了；顺序应是行优先：第 r 行第 c 列的图像块是第 r * (W/P) + c "
             "个词元。"),
     Mistake("reshaped without a permute", _patch_no_permute,
             "a plain reshape of (B, C, H, W) cuts rows of pixels, not P × P patches; reshape to "
             "(B, C, H/P, P, W/P, P) and permute the patch grid axes to the front.",
             "直接 reshape (B, C, H, W) 切出的是一行行像素，而不是 P × P 的图像块；应先 reshape 成 "
             "(B, C, H/P, P, W/P, P)，再把块网格的两维 permute 到前面。"),
     Mistake("each patch transposed", _patch_transposed,
             "inside a patch the pixels are read column by column; read them row by row.",
             "块内的像素是逐列读取的；应逐行读取。"),
     Mistake("a square image assumed", _patch_square,
             "the grid is taken as (H/P) × (H/P); an image may be wider than it is tall: the "
             "grid is (H/P) rows × (W/P) columns.",
             "网格被当成了 (H/P) × (H/P)；图像的宽和高可以不同：网格是 (H/P) 行 × (W/P) 列。")))


# ---- chapter 10: attention rollout --------------------------------------------------------


def _rollout_cases(gen):
    def layers(count, B=2, h=3, n=5, dtype=torch.float32):
        return [torch.softmax(randn(gen, B, h, n, n, scale=2), -1).to(dtype) for _ in range(count)]
    three = layers(3)
    return [
        Case("3 layers of 3 heads", "3 层，每层 3 个头", (three,)),
        Case("residual 0", "residual 0", (three, 0.0)),
        Case("residual 0.8", "residual 0.8", (three, 0.8)),
        Case("one layer", "一层", (layers(1),)),
        Case("float64, 4 layers", "float64，4 层", (layers(4, B=1, dtype=torch.float64), 0.3)),
    ]


def _rollout(weights, residual, *, order="left", pool="mean", unnormalised=False):
    n = weights[0].shape[-1]
    eye = torch.eye(n, dtype=weights[0].dtype, device=weights[0].device)
    rollout = eye.expand(weights[0].shape[0], n, n)
    for w in weights:
        heads = w.mean(1) if pool == "mean" else w.amax(1)
        A = eye + heads if unnormalised else residual * eye + (1 - residual) * heads
        rollout = A @ rollout if order == "left" else rollout @ A
    return rollout


def _rollout_reversed(weights, residual=0.5):
    return _rollout(weights, residual, order="right")


def _rollout_no_residual(weights, residual=0.5):
    return _rollout(weights, 0.0)


def _rollout_max_heads(weights, residual=0.5):
    return _rollout(weights, residual, pool="max")


def _rollout_unnormalised(weights, residual=0.5):
    return _rollout(weights, residual, unnormalised=True)


ROLLOUT = Task(
    "attention_rollout", 10, attention_rollout,
    "Attention rollout: for each layer, first to last, A = residual * I + (1 - residual) * "
    "(the heads' mean of its weights); the layers compose as A_L … A_1. weights: a list of "
    "(B, h, n, n); returns (B, n, n).",
    "注意力展开（rollout）：对每一层（从第一层到最后一层），A = residual * I + (1 - residual) * "
    "（该层各头权重的平均）；各层按 A_L … A_1 复合。weights：(B, h, n, n) 的列表；返回 (B, n, n)。",
    _rollout_cases,
    (Mistake("layers composed in the wrong order", _rollout_reversed,
             "the product is A_1 … A_L; a later layer reads what the earlier ones produced, so "
             "it multiplies from the left: rollout = A @ rollout.",
             "乘积写成了 A_1 … A_L；后面的层读的是前面各层的产物，所以从左边乘："
             "rollout = A @ rollout。"),
     Mistake("residual ignored", _rollout_no_residual,
             "the residual connection is not counted: mix the identity in, "
             "residual * I + (1 - residual) * mean_h W.",
             "没有计入残差连接：应把单位矩阵混进来，residual * I + (1 - residual) * mean_h W。"),
     Mistake("heads' maximum instead of their mean", _rollout_max_heads,
             "the heads are combined by their maximum; rollout averages them, which keeps each "
             "row a probability distribution.",
             "各头取了最大值；rollout 取的是平均，这样每一行仍是一个概率分布。"),
     Mistake("I + W without the weights", _rollout_unnormalised,
             "the identity is added as I + W, so each row sums to 2 and the product grows "
             "2^L-fold; weigh the two: residual * I + (1 - residual) * W.",
             "单位矩阵按 I + W 加了进去，每行的和变成 2，乘积随层数按 2^L 增长；应给两者加权："
             "residual * I + (1 - residual) * W。")))

TASKS = [SOFTMAX_STATISTICS, TILED_ATTENTION, SLIDING_WINDOW, PATCHIFY, ROLLOUT]
