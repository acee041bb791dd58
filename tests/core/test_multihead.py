import pytest
import torch

from attention_core import MultiHeadAttention
from attention_core.multihead import pool_kv_heads


def make(num_hiddens=16, heads=4, **kw):
    torch.manual_seed(0)
    return MultiHeadAttention(num_hiddens, heads, query_size=num_hiddens, key_size=num_hiddens,
                              value_size=num_hiddens, **kw)


@pytest.mark.parametrize("lens", [None, torch.tensor([3, 0]), torch.tensor([[1, 2, 5], [0, 4, 5]])])
def test_fused_path_equals_step_by_step_path(lens, device):
    mha = make().to(device).eval()
    q, kv = torch.randn(2, 3, 16, device=device), torch.randn(2, 5, 16, device=device)
    lens = None if lens is None else lens.to(device)
    fused = mha(q, kv, kv, lens)
    assert mha.attention_weights is None
    math_out = mha(q, kv, kv, lens, need_weights=True)
    torch.testing.assert_close(fused, math_out, atol=1e-5, rtol=1e-5)
    w = mha.attention_weights
    assert w.shape == (2, 4, 3, 5)
    if lens is not None and lens.dim() == 1:
        assert torch.all(w[0, :, :, 3:] == 0) and torch.all(w[1] == 0)


def test_all_masked_query_output_is_w_o_of_zero_and_gradients_are_finite():
    mha = make(bias=True)
    q = torch.randn(2, 3, 16, requires_grad=True)
    kv = torch.randn(2, 5, 16, requires_grad=True)
    out = mha(q, kv, kv, torch.tensor([0, 2]))
    torch.testing.assert_close(out[0], mha.W_o.bias.expand(3, 16))  # zero attention, then W_o
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(kv.grad).all()
    assert torch.all(kv.grad[0] == 0)  # masked keys receive no gradient


def test_need_weights_attribute_and_lazy_sizes():
    mha = MultiHeadAttention(8, 2, need_weights=True)  # lazy: sizes found on first call
    out = mha(torch.randn(1, 2, 3), torch.randn(1, 4, 5), torch.randn(1, 4, 7))
    assert out.shape == (1, 2, 8) and mha.attention_weights.shape == (1, 2, 2, 4)
    assert mha.W_v.weight.shape == (8, 7)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_close_to_float64(dtype, device):
    mha = make().to(device)
    x = torch.randn(2, 6, 16, device=device)
    ref = mha.double()(x.double(), x.double(), x.double(), torch.tensor([6, 2], device=device))
    out = mha.to(dtype)(x.to(dtype), x.to(dtype), x.to(dtype), torch.tensor([6, 2], device=device))
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), ref, atol=5e-2, rtol=5e-2)


def test_dropout_applies_in_training_on_both_paths():
    mha = make(dropout=0.5).train()
    x = torch.randn(2, 6, 16)
    for need in (False, True):
        assert not torch.equal(mha(x, x, x, need_weights=need), mha(x, x, x, need_weights=need))


def test_bad_input():
    mha = make()
    with pytest.raises(ValueError, match="queries must be"):
        mha(torch.randn(3, 16), torch.randn(2, 3, 16), torch.randn(2, 3, 16))
    with pytest.raises(ValueError, match=r"valid_lens of shape \(3,\)"):
        mha(torch.randn(2, 3, 16), torch.randn(2, 3, 16), torch.randn(2, 3, 16),
            torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        MultiHeadAttention(8, 0)


# --- grouped-query and multi-query attention -------------------------------------------

@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("lens", [None, torch.tensor([5, 2])])
def test_grouped_heads_equal_torch_enable_gqa_from_the_module_weights(kv_heads, lens, device):
    from torch.nn import functional as F
    mha = make(num_kv_heads=kv_heads, bias=True).to(device).eval()
    assert mha.W_k.weight.shape == (4 * kv_heads, 16)  # d_head = 4, kv_heads of them
    q, kv = torch.randn(2, 3, 16, device=device), torch.randn(2, 5, 16, device=device)
    lens = None if lens is None else lens.to(device)
    Q = mha.W_q(q).view(2, 3, 4, 4).transpose(1, 2)
    K = mha.W_k(kv).view(2, 5, kv_heads, 4).transpose(1, 2)
    V = mha.W_v(kv).view(2, 5, kv_heads, 4).transpose(1, 2)
    mask = None if lens is None else (torch.arange(5, device=device) < lens[:, None])[:, None, None]
    ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, enable_gqa=True)
    ref = mha.W_o(ref.transpose(1, 2).reshape(2, 3, 16))
    torch.testing.assert_close(mha(q, kv, kv, lens), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mha(q, kv, kv, lens, need_weights=True), ref, atol=1e-5, rtol=1e-5)
    # query heads of one group read the same key head: equal weights when their queries agree
    assert mha.attention_weights.shape == (2, 4, 3, 5)


def test_grouped_heads_equal_full_heads_with_repeated_key_value_weights():
    """GQA is MHA whose key/value projections repeat each head for its group."""
    gqa = make(num_kv_heads=2)
    full = make()
    full.load_state_dict({**gqa.state_dict(),
                          "W_k.weight": gqa.W_k.weight.view(2, 4, 16).repeat_interleave(2, 0)
                                                      .reshape(16, 16),
                          "W_v.weight": gqa.W_v.weight.view(2, 4, 16).repeat_interleave(2, 0)
                                                      .reshape(16, 16)})
    x = torch.randn(2, 6, 16)
    torch.testing.assert_close(gqa(x, x, x), full(x, x, x), atol=1e-6, rtol=1e-6)


def test_grouped_heads_on_meta_shapes_only():
    mha = make(num_kv_heads=2).to("meta")
    x = torch.empty(2, 7, 16, device="meta")
    assert mha(x, x, x, torch.tensor([7, 3], device="meta")).shape == (2, 7, 16)
    k, v = mha.project_kv(x, x)
    assert k.shape == v.shape == (2, 2, 7, 4)


def test_parameter_count_is_4d2_whatever_the_number_of_heads():
    for h in (1, 2, 4, 8, 16):
        assert sum(p.numel() for p in make(heads=h).parameters()) == 4 * 16 * 16
    # fewer key/value heads: W_k and W_v shrink to d x (h_kv d_head)
    assert sum(p.numel() for p in make(heads=8, num_kv_heads=2).parameters()) \
        == 2 * 256 + 2 * 16 * 4


def test_kv_heads_must_divide_heads():
    with pytest.raises(ValueError, match=r"num_kv_heads \(3\) must divide num_heads \(4\)"):
        make(num_kv_heads=3)
    with pytest.raises(ValueError, match="num_kv_heads must be a positive int"):
        make(num_kv_heads=0)


def test_attend_rejects_key_heads_that_do_not_divide_query_heads():
    from attention_core import attend
    q, k = torch.randn(1, 4, 2, 8), torch.randn(1, 3, 5, 8)
    with pytest.raises(ValueError, match=r"keys \(1, 3, 5, 8\) .* do not broadcast"):
        attend(q, k, k)
    with pytest.raises(ValueError, match=r"values \(1, 1, 5, 8\).* do not broadcast"):
        attend(q, torch.randn(1, 2, 5, 8), torch.randn(1, 1, 5, 8))


# --- head masks and causal masking ------------------------------------------------------

def test_head_mask_removes_exactly_the_masked_heads():
    mha = make(need_weights=True)
    x = torch.randn(2, 5, 16)
    mha(x, x, x)
    per_head = torch.einsum("bhqk,bhkd->bhqd", mha.attention_weights,
                            mha.W_v(x).view(2, 5, 4, 4).transpose(1, 2))
    keep = torch.tensor([1.0, 0.0, 1.0, 0.0])
    expected = mha.W_o((per_head * keep[:, None, None]).transpose(1, 2).reshape(2, 5, 16))
    torch.testing.assert_close(mha(x, x, x, head_mask=keep), expected, atol=1e-6, rtol=1e-6)
    none = mha(x, x, x, head_mask=torch.zeros(2, 4))  # per example, all heads removed
    torch.testing.assert_close(none, torch.zeros_like(none))  # no bias: nothing is left


def test_head_mask_gradient_is_the_head_importance():
    mha = make()
    x = torch.randn(2, 5, 16)
    xi = torch.ones(4, requires_grad=True)
    mha(x, x, x, head_mask=xi).sum().backward()
    # d/dxi_h of the sum equals the sum of head h's contribution through W_o
    for h in range(4):
        keep = torch.ones(4)
        keep[h] = 0
        contribution = (mha(x, x, x) - mha(x, x, x, head_mask=keep)).sum()
        torch.testing.assert_close(xi.grad[h], contribution, atol=1e-5, rtol=1e-5)


def test_head_mask_bad_shape():
    mha = make()
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"head_mask of shape \(3,\) must be \(4,\) or \(2, 4\)"):
        mha(x, x, x, head_mask=torch.ones(3))


def test_is_causal_equals_an_explicit_causal_mask():
    mha = make(need_weights=True)
    x = torch.randn(2, 5, 16)
    out = mha(x, x, x, is_causal=True)
    assert torch.all(mha.attention_weights.triu(1) == 0)
    torch.testing.assert_close(mha(x, x, x, is_causal=True, need_weights=False), out,
                               atol=1e-6, rtol=1e-6)
    # position i never depends on a later position
    y = x.clone()
    y[:, 3:] = torch.randn(2, 2, 16)
    torch.testing.assert_close(mha(y, y, y, is_causal=True)[:, :3], out[:, :3])


def test_kv_cache_bytes_counts_what_project_kv_returns():
    from attention_core.multihead import kv_cache_bytes
    mha = make(heads=4, num_kv_heads=2).to(torch.float16)
    k, v = mha.project_kv(*(2 * [torch.randn(1, 10, 16, dtype=torch.float16)]))
    per_token = (k.numel() + v.numel()) * k.element_size() // 10
    assert kv_cache_bytes(1, 2, 4, torch.float16) == per_token == 32
    assert kv_cache_bytes(32, 32, 128) == 512 * 1024  # a 7B-class model without grouping
    with pytest.raises(ValueError, match="num_layers must be a positive int"):
        kv_cache_bytes(0, 1, 1)


# --- converting a trained layer to grouped-query attention -------------------------------

@pytest.mark.parametrize("bias", [False, True])
def test_pool_kv_heads_is_the_layer_itself_when_each_group_already_shares_its_heads(bias):
    """A group of equal key/value heads pools to that head: GQA built from the MHA with
    repeated heads, then pooled back, computes what the MHA computes."""
    gqa = make(num_kv_heads=2, bias=bias)
    full = make(bias=bias)
    state = gqa.state_dict()
    for name in ("W_k", "W_v"):
        state[f"{name}.weight"] = gqa.state_dict()[f"{name}.weight"].view(2, 4, 16) \
            .repeat_interleave(2, 0).reshape(16, 16)
        if bias:
            state[f"{name}.bias"] = gqa.state_dict()[f"{name}.bias"].view(2, 4) \
                .repeat_interleave(2, 0).reshape(16)
    full.load_state_dict(state)
    pooled = pool_kv_heads(full, 2)
    assert pooled.num_kv_heads == 2 and full.num_kv_heads == 4  # a copy: the layer is unchanged
    x = torch.randn(2, 6, 16)
    torch.testing.assert_close(pooled(x, x, x), full(x, x, x), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(pooled.W_k.weight, gqa.W_k.weight)


def test_pool_kv_heads_averages_each_group_in_the_order_query_heads_read_them():
    full = make(heads=8)
    pooled = pool_kv_heads(full, 2)                         # groups: heads 0-3 and 4-7
    rows = full.W_v.weight.view(8, 2, 16)                    # (head, d_head, in)
    torch.testing.assert_close(pooled.W_v.weight.view(2, 2, 16),
                               torch.stack([rows[:4].mean(0), rows[4:].mean(0)]))
    assert pool_kv_heads(full, 8).W_k.weight.equal(full.W_k.weight)  # groups of one: a copy
    mqa = pool_kv_heads(pooled, 1)                           # an already grouped layer
    torch.testing.assert_close(mqa.W_k.weight, full.W_k.weight.view(8, 2, 16).mean(0))
    x = torch.randn(3, 5, 16)
    assert mqa(x, x, x).shape == (3, 5, 16)


def test_pool_kv_heads_bad_input():
    with pytest.raises(ValueError, match=r"num_kv_heads \(3\) must divide the layer's "
                                         r"num_kv_heads \(4\)"):
        pool_kv_heads(make(), 3)
    with pytest.raises(TypeError, match="layer must be a MultiHeadAttention, got Linear"):
        pool_kv_heads(torch.nn.Linear(2, 2), 1)
    with pytest.raises(ValueError, match="lazy and not built yet"):
        pool_kv_heads(MultiHeadAttention(16, 4), 2)


def test_pool_kv_heads_first_keeps_the_first_head_of_each_group():
    full = make(heads=8)
    first = pool_kv_heads(full, 2, how="first")
    rows = full.W_k.weight.view(8, 2, 16)
    torch.testing.assert_close(first.W_k.weight.view(2, 2, 16), torch.stack([rows[0], rows[4]]))
    with pytest.raises(ValueError, match="how must be one of"):
        pool_kv_heads(full, 2, how="max")
