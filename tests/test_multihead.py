import pytest
import torch

from attention_core import MultiHeadAttention


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
        mha(torch.randn(2, 3, 16), torch.randn(2, 3, 16), torch.randn(2, 3, 16), torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        MultiHeadAttention(8, 0)
