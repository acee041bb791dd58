import math

import pytest
import torch

from attention_core import DotProductAttention, contracts
from attention_core.attention import AdditiveAttention, ScoredAttention
from attention_core.scoring import (
    SCORE_FUNCTIONS,
    AdditiveScore,
    ConcatScore,
    CosineScore,
    DotScore,
    GeneralScore,
    ScaledDotScore,
)

Q = torch.tensor([[[1.0, 2.0], [0.0, 1.0]]])           # (1, 2, 2)
K = torch.tensor([[[3.0, 4.0], [1.0, 0.0], [0.0, -2.0]]])  # (1, 3, 2)


def test_dot_scaled_and_cosine_by_hand():
    dot = torch.tensor([[[11.0, 1.0, -4.0], [4.0, 0.0, -2.0]]])
    torch.testing.assert_close(DotScore()(Q, K), dot)
    torch.testing.assert_close(ScaledDotScore()(Q, K), dot / math.sqrt(2))
    norms_q = torch.tensor([math.sqrt(5), 1.0])[:, None]
    norms_k = torch.tensor([5.0, 1.0, 2.0])[None, :]
    torch.testing.assert_close(CosineScore()(Q, K), dot / (norms_q * norms_k))
    torch.testing.assert_close(CosineScore(scale=3.0)(Q, K), 3 * dot / (norms_q * norms_k))


def test_general_is_the_bilinear_form():
    score = GeneralScore(query_size=2, key_size=3)
    W = torch.tensor([[1.0, 0.0, 2.0], [0.0, -1.0, 1.0]])  # (d_q, d_k)
    with torch.no_grad():
        score.W.weight.copy_(W)
    q, k = torch.randn(2, 4, 2), torch.randn(2, 5, 3)
    expected = torch.einsum("bqi,ij,bkj->bqk", q, W, k)
    torch.testing.assert_close(score(q, k), expected)


def test_concat_is_linear_in_the_concatenation_and_ignores_the_query_after_softmax():
    score = ConcatScore(query_size=2, key_size=3)
    q, k = torch.randn(1, 4, 2), torch.randn(1, 5, 3)
    s = score(q, k)
    w = score.w.weight[0]
    for i in range(4):
        for j in range(5):
            torch.testing.assert_close(s[0, i, j], w @ torch.cat([q[0, i], k[0, j]]))
    weights = torch.softmax(s, -1)
    torch.testing.assert_close(weights[0, 0].expand(4, 5), weights[0])  # every query alike


def test_additive_score_matches_additive_attention():
    attn = AdditiveAttention(6, query_size=2, key_size=2)
    score = AdditiveScore(6, query_size=2, key_size=2)
    score.load_state_dict(attn.state_dict())
    v = torch.randn(1, 3, 4)
    attn(Q, K, v)
    torch.testing.assert_close(torch.softmax(score(Q, K), -1), attn.attention_weights)


def test_scored_attention_with_scaled_dot_equals_dot_product_attention():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    lens = torch.tensor([2, 5])
    ours = ScoredAttention(ScaledDotScore())
    torch.testing.assert_close(ours(q, k, v, lens), DotProductAttention()(q, k, v, lens))
    assert torch.all(ours.attention_weights[0, :, 2:] == 0)


@pytest.mark.parametrize("name", sorted(SCORE_FUNCTIONS))
def test_every_score_shape_parameters_and_size_rule(name):
    cls = SCORE_FUNCTIONS[name]
    kwargs = {"general": dict(query_size=3, key_size=5), "concat": dict(query_size=3, key_size=5),
              "additive": dict(num_hiddens=4, query_size=3, key_size=5)}.get(name, {})
    score = cls(**kwargs)
    q, k = torch.randn(2, 4, 3), torch.randn(2, 6, 5)
    shapes = contracts.shapes(cls.forward)  # the contract says whether d_q must equal d_k
    if shapes["queries"].split()[-1] == shapes["keys"].split()[-1]:
        with pytest.raises(ValueError, match="but the feature size of queries is 3"):
            score(q, k)
        k = torch.randn(2, 6, 3)
        assert not list(score.parameters())
    else:
        assert list(score.parameters())
    assert score(q, k).shape == (2, 4, 6)


def test_score_bad_input():
    with pytest.raises(ValueError, match="this layer's key_size is 5"):
        GeneralScore(3, 5)(torch.randn(1, 2, 3), torch.randn(1, 2, 4))
    with pytest.raises(ValueError, match="this layer's query_size"):
        ConcatScore(3, 5)(torch.randn(1, 2, 4), torch.randn(1, 2, 5))
    with pytest.raises(ValueError, match=r"queries must be \(batch, n_queries, d\)"):
        DotScore()(torch.randn(2, 3), torch.randn(1, 2, 3))
    with pytest.raises(ValueError, match="scale must be positive"):
        CosineScore(scale=0)
    with pytest.raises(TypeError, match="score must be a ScoreFunction"):
        ScoredAttention("dot")
