"""Practice tasks of chapters 1–4: cue weights, Nadaraya–Watson pooling, the masked softmax,
the additive score, scaled dot-product attention and the Bahdanau decoder."""
from __future__ import annotations

import math

import torch

from ..attention import DotProductAttention
from ..masking import masked_softmax, padding_mask
from ..pooling import nadaraya_watson
from ..scoring import additive_scores
from ..seq2seq import AttentionDecoder, AttentionState
from ..worlds.cues import APPEARANCE, make_scene, query_vector, saliency
from ..worlds.cues import cue_weights as _cue_weights
from .checking import Case, Mistake, Task
from .inputs import not_contiguous, randn, seeded

# ---- chapter 1: cue weights ---------------------------------------------------------------


def cue_weights(keys, query=None, sharpness=5.0, saliency_weight=0.1):
    """The chapter's function, by its own name (the task's signature)."""
    return _cue_weights(keys, query, sharpness, saliency_weight)


def _cue_cases(gen):
    _, desk = make_scene()
    return [
        Case("the desk, no goal", "书桌，没有目标", (desk,)),
        Case("the desk, 'I want to read'", "书桌，“我想读书”", (desk, query_vector("read"))),
        Case("the desk, 'I want to drink', sharpness 2", "书桌，“我想喝东西”，锐度 2",
             (desk, query_vector("drink"), 2.0)),
        Case("7 random objects, saliency weight 0.5", "7 个随机物体，显著性权重 0.5",
             (randn(gen, 7, 5), randn(gen, 5), 3.0, 0.5)),
        Case("sharpness 0", "锐度 0", (desk, query_vector("write"), 0.0)),
        Case("one object", "只有一个物体", (randn(gen, 1, 5), randn(gen, 5))),
        Case("float64", "float64", (randn(gen, 4, 5, dtype=torch.float64),
                                    randn(gen, 5, dtype=torch.float64), 1.5, 0.3)),
    ]


def _cue_no_sharpness(keys, query=None, sharpness=5.0, saliency_weight=0.1):
    s = saliency(keys)
    scores = s if query is None else keys @ query + saliency_weight * s
    return torch.softmax(scores, dim=-1)


def _cue_sharpness_on_match_only(keys, query=None, sharpness=5.0, saliency_weight=0.1):
    s = saliency(keys)
    if query is None:
        return torch.softmax(sharpness * s, dim=-1)
    return torch.softmax(sharpness * (keys @ query) + saliency_weight * s, dim=-1)


def _cue_saliency_unweighted(keys, query=None, sharpness=5.0, saliency_weight=0.1):
    s = saliency(keys)
    scores = s if query is None else keys @ query + s
    return torch.softmax(sharpness * scores, dim=-1)


def _cue_saliency_dropped(keys, query=None, sharpness=5.0, saliency_weight=0.1):
    scores = saliency(keys) if query is None else keys @ query
    return torch.softmax(sharpness * scores, dim=-1)


def _cue_saliency_all_features(keys, query=None, sharpness=5.0, saliency_weight=0.1):
    s = (keys - keys.mean(0)).norm(dim=-1)
    scores = s if query is None else keys @ query + saliency_weight * s
    return torch.softmax(sharpness * scores, dim=-1)


def _cue_divided_by_sum(keys, query=None, sharpness=5.0, saliency_weight=0.1):
    s = saliency(keys)
    scores = sharpness * (s if query is None else keys @ query + saliency_weight * s)
    return scores / scores.sum()


CUE_WEIGHTS = Task(
    "cue_weights", 1, cue_weights,
    "Attention weights over the objects from the nonvolitional cue (saliency(keys), how far "
    "each object's appearance lies from the average) and, when there is a goal, the volitional "
    "one: softmax(sharpness * (keys @ query + saliency_weight * s)).",
    "由非自主性提示（saliency(keys)，每个物体的外观离平均外观多远）以及有目标时的自主性提示"
    "算出各物体上的注意力权重：softmax(sharpness * (keys @ query + saliency_weight * s))。",
    _cue_cases,
    (Mistake("no sharpness", _cue_no_sharpness,
             "the scores reach the softmax without being multiplied by sharpness; the weights "
             "are softmax(sharpness * scores), which is uniform at sharpness 0 and an argmax as "
             "it grows.",
             "分数没有乘以 sharpness 就进入了 softmax；权重应是 softmax(sharpness * scores)："
             "锐度为 0 时均匀，锐度越大越接近 argmax。"),
     Mistake("sharpness on the match only", _cue_sharpness_on_match_only,
             "sharpness multiplies only q · k; it multiplies the whole score, the saliency term "
             "included: softmax(sharpness * (q · k + saliency_weight * s)).",
             "sharpness 只乘在了 q · k 上；它应乘整个分数，连同显著性项："
             "softmax(sharpness * (q · k + saliency_weight * s))。"),
     Mistake("saliency not weighted", _cue_saliency_unweighted,
             "with a goal, the saliency enters without its weight: the score is "
             "q · k + saliency_weight * s, not q · k + s.",
             "有目标时，显著性没有乘以它的权重：分数应是 q · k + saliency_weight * s，"
             "而不是 q · k + s。"),
     Mistake("saliency dropped", _cue_saliency_dropped,
             "with a goal, the nonvolitional cue disappears; both cues act, so the score is "
             "q · k + saliency_weight * s.",
             "有目标时，非自主性提示不见了；两种提示同时起作用，分数应是 "
             "q · k + saliency_weight * s。"),
     Mistake("saliency from every feature", _cue_saliency_all_features,
             f"the saliency is measured over all features; it uses the appearance only "
             f"(columns {APPEARANCE.start}–{APPEARANCE.stop - 1}, red and contrast): call "
             f"saliency(keys).",
             f"显著性是在全部特征上量的；它只看外观（第 {APPEARANCE.start}–{APPEARANCE.stop - 1} "
             f"列：红色和对比度）：请调用 saliency(keys)。"),
     Mistake("divided by the sum", _cue_divided_by_sum,
             "the scores are divided by their sum instead of passed through a softmax; a score "
             "may be negative or zero, so the 'weights' may be negative or infinite. Use "
             "torch.softmax(..., dim=-1).",
             "分数被除以它们的和，而不是经过 softmax；分数可能为负或为零，这样得到的“权重”可能为负"
             "或无穷大。请用 torch.softmax(..., dim=-1)。")))


# ---- chapter 2: Nadaraya–Watson pooling ---------------------------------------------------


def _nw_cases(gen):
    x = torch.sort(randn(gen, 20, dtype=torch.float64) * 2).values.float()
    y = 2 * torch.sin(x) + randn(gen, 20, scale=0.3)
    q = torch.linspace(-3, 3, 7)
    return [
        Case("20 keys, 7 queries, bandwidth 1", "20 个键、7 个查询，带宽 1", (x, y, q)),
        Case("bandwidth 0.3", "带宽 0.3", (x, y, q), {"bandwidth": 0.3}),
        Case("bandwidth 2.5", "带宽 2.5", (x, y, q), {"bandwidth": 2.5}),
        Case("leave-one-out (exclude_self)", "留一法（exclude_self）", (x, y, x),
             {"exclude_self": True, "bandwidth": 0.5}),
        Case("a query far from every key", "一个离所有键都很远的查询",
             (x, y, torch.tensor([0.0, 60.0])), {"bandwidth": 0.5}),
        Case("one key", "只有一个键", (x[:1], y[:1], q)),
        Case("float64", "float64", (x.double(), y.double(), q.double()), {"bandwidth": 0.7}),
    ]


def _nw(x_train, y_train, x_query, bandwidth, exclude_self, log_kernel, dim=-1):
    scores = log_kernel((x_query[:, None] - x_train[None, :]), bandwidth)
    if exclude_self:
        own = torch.eye(len(x_train), dtype=torch.bool, device=x_train.device)
        scores = scores.masked_fill(own, float("-inf"))
    weights = torch.softmax(scores, dim=dim)
    return weights @ y_train, weights


def _nw_over_queries(x_train, y_train, x_query, kernel="gaussian", bandwidth=1.0,
                     exclude_self=False):
    return _nw(x_train, y_train, x_query, bandwidth, exclude_self,
               lambda d, s: -(d / s) ** 2 / 2, dim=0)


def _nw_no_half(x_train, y_train, x_query, kernel="gaussian", bandwidth=1.0, exclude_self=False):
    return _nw(x_train, y_train, x_query, bandwidth, exclude_self, lambda d, s: -(d / s) ** 2)


def _nw_bandwidth_not_squared(x_train, y_train, x_query, kernel="gaussian", bandwidth=1.0,
                              exclude_self=False):
    return _nw(x_train, y_train, x_query, bandwidth, exclude_self, lambda d, s: -d ** 2 / (2 * s))


def _nw_exclude_ignored(x_train, y_train, x_query, kernel="gaussian", bandwidth=1.0,
                        exclude_self=False):
    return _nw(x_train, y_train, x_query, bandwidth, False, lambda d, s: -(d / s) ** 2 / 2)


def _nw_exp_then_divide(x_train, y_train, x_query, kernel="gaussian", bandwidth=1.0,
                        exclude_self=False):
    K = torch.exp(-((x_query[:, None] - x_train[None, :]) / bandwidth) ** 2 / 2)
    if exclude_self:
        K = K * (1 - torch.eye(len(x_train), dtype=K.dtype, device=K.device))
    weights = K / K.sum(-1, keepdim=True)
    return weights @ y_train, weights


def _nw_zeroed_after_softmax(x_train, y_train, x_query, kernel="gaussian", bandwidth=1.0,
                             exclude_self=False):
    weights = torch.softmax(-((x_query[:, None] - x_train[None, :]) / bandwidth) ** 2 / 2, -1)
    if exclude_self:
        own = torch.eye(len(x_train), dtype=weights.dtype, device=weights.device)
        weights = weights * (1 - own)
    return weights @ y_train, weights


NADARAYA_WATSON = Task(
    "nadaraya_watson", 2, nadaraya_watson,
    "The Nadaraya–Watson estimate with the Gaussian kernel (the only kernel the check calls): "
    "weights softmax over the keys of -((x_query - x_train) / bandwidth)^2 / 2, predictions "
    "weights @ y_train; exclude_self leaves each query's own key out. Returns (predictions, "
    "weights).",
    "高斯核的 Nadaraya–Watson 估计（检查只用这一种核）：权重是 -((x_query - x_train) / "
    "bandwidth)^2 / 2 在键上的 softmax，预测是 weights @ y_train；exclude_self 让每个查询不看"
    "它自己的键。返回 (predictions, weights)。",
    _nw_cases,
    (Mistake("softmax over the queries", _nw_over_queries,
             "the weights are normalised over the queries (dim=0); each query's weights must sum "
             "to one over the keys: softmax over dim=-1.",
             "权重是在查询上归一化的（dim=0）；每个查询的权重应在键上和为一：softmax 取 dim=-1。"),
     Mistake("no 1/2 in the Gaussian", _nw_no_half,
             "the log-kernel is -u^2; the Gaussian kernel is exp(-u^2 / 2), so its log is "
             "-u^2 / 2 (without the 1/2 the kernel is narrower by √2).",
             "对数核写成了 -u^2；高斯核是 exp(-u^2 / 2)，它的对数是 -u^2 / 2"
             "（少了 1/2，核就窄了 √2 倍）。"),
     Mistake("bandwidth not squared", _nw_bandwidth_not_squared,
             "the distance is divided by the bandwidth once, outside the square: u = (x - x_i) / "
             "sigma, and the log-kernel is -u^2 / 2 = -(x - x_i)^2 / (2 sigma^2).",
             "距离只在平方外除了一次带宽：应是 u = (x - x_i) / sigma，对数核 -u^2 / 2 = "
             "-(x - x_i)^2 / (2 sigma^2)。"),
     Mistake("exclude_self ignored", _nw_exclude_ignored,
             "exclude_self=True changes nothing; with it, query i must give key i no weight "
             "(mask the diagonal before the softmax).",
             "exclude_self=True 没有起作用；此时查询 i 不应给键 i 任何权重（在 softmax 之前"
             "掩蔽对角线）。"),
     Mistake("kernel values divided by their sum", _nw_exp_then_divide,
             "the weights are computed as K / sum K; for a query far from every key every K "
             "underflows to 0 and 0 / 0 = NaN. Take the softmax of the log-kernel -u^2 / 2 "
             "instead: the same weights, computed without underflow.",
             "权重按 K / sum K 计算；对离所有键都很远的查询，每个 K 都下溢为 0，0 / 0 = NaN。"
             "请改为对对数核 -u^2 / 2 取 softmax：权重相同，而且不会下溢。"),
     Mistake("own key zeroed after the softmax", _nw_zeroed_after_softmax,
             "the own key's weight is set to 0 after the softmax, so the rows no longer sum to "
             "one; mask it before the softmax (a score of -inf), which renormalises the rest.",
             "自己那个键的权重是在 softmax 之后才置 0 的，于是每行的和不再是一；应在 softmax 之前"
             "掩蔽它（分数取 -inf），其余权重会重新归一化。")),
    outputs=("predictions", "weights"))


# ---- chapter 3: the masked softmax --------------------------------------------------------


def _usable(scores, valid_lens, mask):
    usable = scores != float("-inf")
    if valid_lens is not None:
        usable = usable & padding_mask(valid_lens, scores, scores.shape[-1])
    if mask is not None:
        usable = usable & mask
    return usable


def _masked_cases(gen):
    s = randn(gen, 2, 3, 5, scale=2)
    half = randn(gen, 2, 3, 5, scale=2, dtype=torch.float16)
    return [
        Case("one length per sequence", "每个序列一个长度", (s, torch.tensor([3, 5]))),
        Case("one length per query", "每个查询一个长度", (s, torch.tensor([[1, 2, 3], [5, 4, 2]]))),
        Case("a sequence with no valid key", "有一个序列没有任何有效键", (s, torch.tensor([0, 2]))),
        Case("heads (B, h, n_q, n_k)", "多头 (B, h, n_q, n_k)",
             (randn(gen, 2, 2, 3, 4), torch.tensor([2, 4]))),
        Case("heads, one length per query, B = h", "多头，每个查询一个长度，B = h",
             (randn(gen, 2, 2, 3, 4), torch.tensor([[1, 2, 3], [4, 0, 2]]))),
        Case("a boolean mask", "布尔掩码", (s,), {"mask": randn(gen, 3, 5) > 0}),
        Case("float16, with a row of no valid key", "float16，含一个没有有效键的行",
             (half, torch.tensor([4, 0]))),
        Case("scores not contiguous", "分数张量不连续",
             (not_contiguous(randn(gen, 2, 4, 4)), torch.tensor([1, 3]))),
        Case("no mask at all", "完全不掩蔽", (s,)),
    ]


def _masked_minus_1e6(scores, valid_lens=None, *, mask=None):
    return torch.softmax(scores.masked_fill(~_usable(scores, valid_lens, mask), -1e6), dim=-1)


def _masked_wrong_axis(scores, valid_lens=None, *, mask=None):
    usable = _usable(scores, valid_lens, mask)
    lowest = torch.finfo(scores.dtype).min
    weights = torch.softmax(scores.masked_fill(~usable, lowest), dim=-2)
    return weights.masked_fill(~usable, 0.0)


def _masked_on_queries(scores, valid_lens=None, *, mask=None):
    usable = _usable(scores, None, mask)
    if valid_lens is not None:
        rows = padding_mask(valid_lens, scores, scores.shape[-2])  # lengths over the queries
        usable = usable & rows.transpose(-1, -2)
    lowest = torch.finfo(scores.dtype).min
    weights = torch.softmax(scores.masked_fill(~usable, lowest), dim=-1)
    return weights.masked_fill(~usable, 0.0)


def _masked_off_by_one(scores, valid_lens=None, *, mask=None):
    longer = None if valid_lens is None else torch.as_tensor(valid_lens) + 1
    usable = _usable(scores, None, mask)
    if longer is not None:
        n = scores.shape[-1]
        usable = usable & padding_mask(longer.clamp(max=n), scores, n)
    lowest = torch.finfo(scores.dtype).min
    weights = torch.softmax(scores.masked_fill(~usable, lowest), dim=-1)
    return weights.masked_fill(~usable, 0.0)


def _masked_minus_inf(scores, valid_lens=None, *, mask=None):
    usable = _usable(scores, valid_lens, mask)
    return torch.softmax(scores.masked_fill(~usable, float("-inf")), dim=-1)


def _masked_mask_ignored(scores, valid_lens=None, *, mask=None):
    usable = _usable(scores, valid_lens, None)
    lowest = torch.finfo(scores.dtype).min
    weights = torch.softmax(scores.masked_fill(~usable, lowest), dim=-1)
    return weights.masked_fill(~usable, 0.0)


MASKED_SOFTMAX = Task(
    "masked_softmax", 3, masked_softmax,
    "A softmax over the last axis of scores (B, [h, …,] n_q, n_k) that gives exactly zero "
    "weight to the keys a query may not see: key j is usable when j < valid_lens (B,) or "
    "(B, n_q) (one length per sequence, or per query, whatever head axes lie between) and where "
    "mask (boolean, broadcastable to scores) is True; a row with no usable key gets all zeros, "
    "never NaN. The weights have the shape and dtype of scores.",
    "对 scores (B, [h, …,] n_q, n_k) 的最后一维做 softmax，并让查询不能看的键权重恰好为零："
    "当 j < valid_lens（形状 (B,) 或 (B, n_q)：每个序列一个长度，或每个查询一个，中间无论有几个"
    "头的维度）且 mask（布尔型，可广播到 scores）为 True 时键 j 可用；没有可用键的行全为零，"
    "绝不是 NaN。权重的形状和数据类型与 scores 相同。",
    _masked_cases,
    (Mistake("-1e6 for the masked scores", _masked_minus_1e6,
             "the masked scores are filled with -1e6 and never zeroed: a row with no valid key "
             "then gets uniform weights over the padding instead of zeros, and in float16 -1e6 "
             "does not fit (the largest float16 is 65,504). Fill with "
             "torch.finfo(scores.dtype).min, then set the masked weights to 0.",
             "被掩蔽的分数填成了 -1e6，之后也没有置零：没有有效键的行会在填充位置上得到均匀权重，"
             "而不是零；而且 float16 装不下 -1e6（float16 最大只有 65504）。请填入 "
             "torch.finfo(scores.dtype).min，再把被掩蔽的权重设为 0。"),
     Mistake("softmax over the queries", _masked_wrong_axis,
             "your weights sum to one over the queries, not the keys: take the softmax over "
             "dim=-1.",
             "你的权重在查询上和为一，而不是在键上：softmax 应取 dim=-1。"),
     Mistake("padding masked on the queries", _masked_on_queries,
             "the valid lengths mask the queries (rows) instead of the keys (columns): key j is "
             "usable when j < length, whichever query asks.",
             "有效长度掩蔽的是查询（行）而不是键（列）：无论哪个查询来问，只要 j < 长度，键 j "
             "就可用。"),
     Mistake("one key too many", _masked_off_by_one,
             "one key too many is kept: with valid length L the usable keys are 0 … L - 1 "
             "(j < L), not 0 … L.",
             "多保留了一个键：有效长度为 L 时，可用的键是 0 … L - 1（j < L），而不是 0 … L。"),
     Mistake("-inf without zeroing", _masked_minus_inf,
             "masking with -inf is right for a row with some valid key, but a row with none "
             "becomes softmax(-inf, …, -inf) = NaN; such a row must be all zeros.",
             "用 -inf 掩蔽，对至少有一个有效键的行是对的；但一个有效键都没有的行会变成 "
             "softmax(-inf, …, -inf) = NaN；这样的行应全为零。"),
     Mistake("mask argument ignored", _masked_mask_ignored,
             "the mask argument is ignored; combine it with the valid lengths (a key must pass "
             "both) before the softmax.",
             "mask 参数被忽略了；应在 softmax 之前把它和有效长度合起来（键要同时满足两者）。")))


# ---- chapter 3: the additive score --------------------------------------------------------


def _additive_cases(gen):
    def layers(query_size=6, key_size=4, d_a=8):
        return tuple(seeded(torch.nn.Linear(i, o, bias=False), gen)
                     for i, o in ((query_size, d_a), (key_size, d_a), (d_a, 1)))
    W_q, W_k, w_v = layers()
    q, k = randn(gen, 2, 3, 6), randn(gen, 2, 5, 4)
    W_q64, W_k64, w_v64 = (m.double() for m in layers())
    return [
        Case("3 queries, 5 keys", "3 个查询、5 个键", (W_q, W_k, w_v, q, k)),
        Case("one query", "一个查询", (W_q, W_k, w_v, q[:, :1], k)),
        Case("one key", "一个键", (W_q, W_k, w_v, q, k[:, :1])),
        Case("keys projected once (projected_keys)", "键只投影一次（projected_keys）",
             (W_q, W_k, w_v, q, k, W_k(k).detach())),
        Case("float64", "float64", (W_q64, W_k64, w_v64, q.double(), k.double())),
        Case("keys not contiguous", "键张量不连续", (W_q, W_k, w_v, q, not_contiguous(k))),
    ]


def _additive_no_tanh(W_q, W_k, w_v, queries, keys, projected_keys=None):
    keys = W_k(keys) if projected_keys is None else projected_keys
    return w_v(W_q(queries).unsqueeze(2) + keys.unsqueeze(1)).squeeze(-1)


def _additive_relu(W_q, W_k, w_v, queries, keys, projected_keys=None):
    keys = W_k(keys) if projected_keys is None else projected_keys
    return w_v(torch.relu(W_q(queries).unsqueeze(2) + keys.unsqueeze(1))).squeeze(-1)


def _additive_pairs_swapped(W_q, W_k, w_v, queries, keys, projected_keys=None):
    keys = W_k(keys) if projected_keys is None else projected_keys
    return w_v(torch.tanh(W_q(queries).unsqueeze(1) + keys.unsqueeze(2))).squeeze(-1)


def _additive_summed(W_q, W_k, w_v, queries, keys, projected_keys=None):
    keys = W_k(keys) if projected_keys is None else projected_keys
    return torch.tanh(W_q(queries).unsqueeze(2) + keys.unsqueeze(1)).sum(-1)


def _additive_tanh_outside(W_q, W_k, w_v, queries, keys, projected_keys=None):
    keys = W_k(keys) if projected_keys is None else projected_keys
    return torch.tanh(w_v(W_q(queries).unsqueeze(2) + keys.unsqueeze(1)).squeeze(-1))


ADDITIVE_SCORES = Task(
    "additive_scores", 3, additive_scores,
    "The additive score w_v^T tanh(W_q q + W_k k) of every query against every key: queries "
    "(B, n_q, query_size), keys (B, n_k, key_size) -> scores (B, n_q, n_k); projected_keys, "
    "when given, is W_k(keys) computed once.",
    "每个查询对每个键的加性分数 w_v^T tanh(W_q q + W_k k)：queries (B, n_q, query_size)、"
    "keys (B, n_k, key_size) -> 分数 (B, n_q, n_k)；给出 projected_keys 时，它就是算好的 "
    "W_k(keys)。",
    _additive_cases,
    (Mistake("no tanh", _additive_no_tanh,
             "the tanh is missing: without it w_v^T (W_q q + W_k k) = w_v^T W_q q + w_v^T W_k k, "
             "a query term plus a key term, which cannot score how well a pair matches.",
             "少了 tanh：没有它，w_v^T (W_q q + W_k k) = w_v^T W_q q + w_v^T W_k k，只是一个查询项"
             "加一个键项，无法给一对查询和键的匹配程度打分。"),
     Mistake("ReLU instead of tanh", _additive_relu,
             "the hidden layer uses ReLU; the additive score of Bahdanau et al. uses tanh.",
             "隐藏层用了 ReLU；Bahdanau 等人的加性分数用的是 tanh。"),
     Mistake("pairs broadcast the wrong way", _additive_pairs_swapped,
             "the pairs are broadcast as (B, 1, n_q, d_a) + (B, n_k, 1, d_a), which gives "
             "(B, n_k, n_q): unsqueeze the queries at dim 2 and the keys at dim 1.",
             "成对广播的方向反了：(B, 1, n_q, d_a) + (B, n_k, 1, d_a) 得到 (B, n_k, n_q)；"
             "应在 dim 2 给查询加轴、在 dim 1 给键加轴。"),
     Mistake("features summed instead of w_v", _additive_summed,
             "the hidden features are summed; the score is their weighted sum w_v^T tanh(…), "
             "with the learned vector w_v.",
             "隐藏特征被直接求和了；分数是它们的加权和 w_v^T tanh(…)，权重是学到的向量 w_v。"),
     Mistake("tanh after w_v", _additive_tanh_outside,
             "tanh is applied after w_v; it belongs inside: w_v^T tanh(W_q q + W_k k).",
             "tanh 用在了 w_v 之后；它应在里面：w_v^T tanh(W_q q + W_k k)。")))


# ---- chapter 3: scaled dot-product attention ----------------------------------------------


def _dot_cases(gen):
    layer = DotProductAttention().eval()
    q, k, v = randn(gen, 2, 3, 8), randn(gen, 2, 5, 8), randn(gen, 2, 5, 6)
    return [
        Case("3 queries, 5 keys, d 8, d_v 6", "3 个查询、5 个键，d 8，d_v 6", (layer, q, k, v)),
        Case("valid lengths (B,)", "有效长度 (B,)", (layer, q, k, v, torch.tensor([2, 5]))),
        Case("valid lengths (B, n_q)", "有效长度 (B, n_q)",
             (layer, q, k, v, torch.tensor([[1, 2, 3], [5, 4, 1]]))),
        Case("a sequence with no valid key", "有一个序列没有任何有效键",
             (layer, q, k, v, torch.tensor([0, 3]))),
        Case("heads (B, h, n, d)", "多头 (B, h, n, d)",
             (layer, randn(gen, 2, 2, 4, 16), randn(gen, 2, 2, 4, 16), randn(gen, 2, 2, 4, 3))),
        Case("float16", "float16",
             (layer, q.half(), k.half(), v.half(), torch.tensor([4, 0]))),
        Case("keys not contiguous", "键张量不连续", (layer, q, not_contiguous(k), v)),
    ]


def _dot(queries, keys, values, valid_lens, scale, *, axis=-1, fill=None, on_queries=False):
    scores = queries @ keys.transpose(-2, -1) * scale
    if on_queries and valid_lens is not None:
        rows = padding_mask(valid_lens, queries, queries.shape[-2]).transpose(-1, -2)
        weights = masked_softmax(scores, mask=rows)
    elif fill is not None:
        usable = _usable(scores, valid_lens, None)
        weights = torch.softmax(scores.masked_fill(~usable, fill), dim=-1)
    else:
        usable = _usable(scores, valid_lens, None)
        lowest = torch.finfo(scores.dtype).min
        weights = torch.softmax(scores.masked_fill(~usable, lowest), dim=axis)
        weights = weights.masked_fill(~usable, 0.0)
    return weights @ values


def _dot_no_scale(self, queries, keys, values, valid_lens=None):
    return _dot(queries, keys, values, valid_lens, 1.0)


def _dot_scale_twice(self, queries, keys, values, valid_lens=None):
    return _dot(queries, keys, values, valid_lens, 1 / queries.shape[-1])


def _dot_scale_d_v(self, queries, keys, values, valid_lens=None):
    return _dot(queries, keys, values, valid_lens, 1 / math.sqrt(values.shape[-1]))


def _dot_over_queries(self, queries, keys, values, valid_lens=None):
    return _dot(queries, keys, values, valid_lens, 1 / math.sqrt(queries.shape[-1]), axis=-2)


def _dot_on_queries(self, queries, keys, values, valid_lens=None):
    return _dot(queries, keys, values, valid_lens, 1 / math.sqrt(queries.shape[-1]),
                on_queries=True)


def _dot_minus_1e6(self, queries, keys, values, valid_lens=None):
    return _dot(queries, keys, values, valid_lens, 1 / math.sqrt(queries.shape[-1]), fill=-1e6)


DOT_PRODUCT_ATTENTION = Task(
    "dot_product_attention", 3, DotProductAttention.forward,
    "DotProductAttention.forward: softmax(Q K^T / sqrt(d)) V over the valid keys, for queries "
    "(B, [h,] n_q, d), keys (B, [h,] n_k, d), values (B, [h,] n_k, d_v) and valid_lens None, "
    "(B,) or (B, n_q); a query with no valid key gets a zero output. Use masked_softmax.",
    "DotProductAttention.forward：在有效键上计算 softmax(Q K^T / sqrt(d)) V，queries "
    "(B, [h,] n_q, d)、keys (B, [h,] n_k, d)、values (B, [h,] n_k, d_v)，valid_lens 为 None、"
    "(B,) 或 (B, n_q)；没有有效键的查询输出为零。请使用 masked_softmax。",
    _dot_cases,
    (Mistake("no scaling", _dot_no_scale,
             "the scores are not scaled: divide q · k by sqrt(d), d the size of queries and keys, "
             "so that their variance stays near one whatever d is.",
             "分数没有缩放：q · k 应除以 sqrt(d)（d 是查询和键的维数），使分数的方差不随 d 增大。"),
     Mistake("scaled by d", _dot_scale_twice,
             "the scores are divided by d; the scale is 1 / sqrt(d) (dividing by sqrt(d) twice "
             "gives 1 / d).",
             "分数被除以了 d；缩放因子应是 1 / sqrt(d)（除两次 sqrt(d) 就成了 1 / d）。"),
     Mistake("scaled by the values' size", _dot_scale_d_v,
             "the scale uses the values' size d_v; it is the size d of queries and keys, "
             "queries.shape[-1].",
             "缩放用了值的维数 d_v；应是查询和键的维数 d，即 queries.shape[-1]。"),
     Mistake("softmax over the queries", _dot_over_queries,
             "your weights sum to one over the queries, not the keys: softmax over dim=-1.",
             "你的权重在查询上和为一，而不是在键上：softmax 应取 dim=-1。"),
     Mistake("padding masked on the queries", _dot_on_queries,
             "the valid lengths mask the queries instead of the keys: pass valid_lens to "
             "masked_softmax, which masks the keys j >= length.",
             "有效长度掩蔽的是查询而不是键：把 valid_lens 交给 masked_softmax，它掩蔽 "
             "j >= 长度的键。"),
     Mistake("-1e6 for the masked scores", _dot_minus_1e6,
             "masking with -1e6: a query with no valid key gets the plain average of the padding "
             "values instead of zeros, and in float16 -1e6 overflows. Use masked_softmax.",
             "用 -1e6 掩蔽：没有有效键的查询会得到填充位置上值的平均，而不是零；在 float16 里 -1e6 "
             "还会溢出。请用 masked_softmax。")))


# ---- chapter 4: the Bahdanau decoder ------------------------------------------------------


def _decoder_case(gen, num_layers, B=2, n_src=5, n=3, vocab=11, lens=(5, 3)):
    decoder = seeded(AttentionDecoder(vocab, 6, 8, num_layers), gen, scale=0.4)
    memory = randn(gen, B, n_src, 8)
    hidden = randn(gen, num_layers, B, 8)
    with torch.no_grad():
        state = decoder.init_state((memory, hidden), torch.tensor(lens[:B]))
    tokens = torch.randint(0, vocab, (B, n), generator=gen)
    return decoder, tokens, state


def _decoder_cases(gen):
    return [
        Case("one GRU layer, 3 steps", "一层 GRU，3 步", _decoder_case(gen, 1)),
        Case("two GRU layers, 3 steps", "两层 GRU，3 步", _decoder_case(gen, 2)),
        Case("one step", "一步", _decoder_case(gen, 1, n=1)),
        Case("a source of length 1", "长度为 1 的源句", _decoder_case(gen, 2, lens=(1, 4))),
    ]


def _decode(self, tokens, state, *, layer=-1, context_first=False, lens=True, once=False,
            keep_state=False):
    hidden, memory = state.hidden, state.enc_outputs
    outputs = []
    valid = state.valid_lens if lens else None
    context = None
    for x in self.embedding(tokens).unbind(1):
        if context is None or not once:
            context = self.attention(hidden[layer][:, None], memory, memory, valid,
                                     projected_keys=state.projected_keys)
        pieces = [context, x[:, None]] if context_first else [x[:, None], context]
        out, hidden = self.rnn(torch.cat(pieces, dim=-1), hidden)
        outputs.append(out)
    new_state = state if keep_state else AttentionState(hidden, memory, state.projected_keys,
                                                        state.valid_lens)
    return self.dense(torch.cat(outputs, 1)), new_state


def _decoder_bottom_layer(self, tokens, state):
    return _decode(self, tokens, state, layer=0)


def _decoder_context_first(self, tokens, state):
    return _decode(self, tokens, state, context_first=True)


def _decoder_no_padding(self, tokens, state):
    return _decode(self, tokens, state, lens=False)


def _decoder_context_once(self, tokens, state):
    return _decode(self, tokens, state, once=True)


def _decoder_stale_state(self, tokens, state):
    return _decode(self, tokens, state, keep_state=True)


BAHDANAU_DECODER = Task(
    "bahdanau_decoder", 4, AttentionDecoder.forward,
    "AttentionDecoder.forward: for each input token, the query is the top layer of the "
    "previous decoder state s_{t-1}; additive attention over the encoder outputs (keys = "
    "values, padding excluded) gives the context c_t; the GRU reads [embedding; c_t]. Returns "
    "(logits (B, n, vocab), the state with the new hidden).",
    "AttentionDecoder.forward：对每个输入词元，查询是上一步解码器状态 s_{t-1} 的最上层；"
    "在编码器输出上做加性注意力（键 = 值，不看填充）得到上下文 c_t；GRU 读入 [嵌入; c_t]。"
    "返回 (logits (B, n, vocab), 带新隐状态的状态)。",
    _decoder_cases,
    (Mistake("query from the bottom layer", _decoder_bottom_layer,
             "with two GRU layers, the query is the bottom layer's state hidden[0]; it is the top "
             "layer's, hidden[-1], the one the output layer reads.",
             "有两层 GRU 时，查询用了最下层的状态 hidden[0]；应是最上层的 hidden[-1]，也就是输出层"
             "读的那一层。"),
     Mistake("context before the embedding", _decoder_context_first,
             "the GRU's input is [c_t; embedding]; the decoder was built to read "
             "[embedding; c_t] (the embedding's features first), so the order matters to its "
             "weights.",
             "GRU 的输入写成了 [c_t; 嵌入]；这个解码器按 [嵌入; c_t]（嵌入的特征在前）构建，顺序"
             "对它的权重是有意义的。"),
     Mistake("padding attended to", _decoder_no_padding,
             "the attention ignores the source lengths and gives weight to padding: pass "
             "state.valid_lens.",
             "注意力没有用源句长度，给填充位置分了权重：请传入 state.valid_lens。"),
     Mistake("one context for every step", _decoder_context_once,
             "the context is computed once and reused; it changes at every step, because the "
             "query s_{t-1} does: attend inside the loop.",
             "上下文只算了一次就被反复使用；它每一步都会变，因为查询 s_{t-1} 在变：请在循环里做"
             "注意力。"),
     Mistake("state not updated", _decoder_stale_state,
             "the returned state still holds the old hidden state; return one whose hidden is "
             "the GRU's last state, so the next call continues from it.",
             "返回的状态仍是旧的隐状态；应返回一个隐状态为 GRU 最新状态的状态，下一次调用才能"
             "接着算。")),
    outputs=("logits", "state.hidden", "state.enc_outputs", "state.projected_keys",
             "state.valid_lens"))

TASKS = [CUE_WEIGHTS, NADARAYA_WATSON, MASKED_SOFTMAX, ADDITIVE_SCORES, DOT_PRODUCT_ATTENTION,
         BAHDANAU_DECODER]
