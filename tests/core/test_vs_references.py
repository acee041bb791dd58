"""Cross-checks: with the same weights, attention_core agrees with d2l and with torch to 1e-5
in float32. d2l is the book readers know; torch is the implementation users trust."""
import warnings

import pytest
import torch
from torch.nn import functional as F

import attention_core as ac

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from d2l import torch as d2l

TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("lens", [None, torch.tensor([2, 3]), torch.tensor([[1, 3], [2, 4]])])
def test_masked_softmax_vs_d2l(lens):
    scores = torch.randn(2, 2, 4)
    torch.testing.assert_close(ac.masked_softmax(scores, lens),
                               d2l.masked_softmax(scores.clone(), lens), **TOL)


def test_masked_softmax_differs_from_d2l_only_where_d2l_is_wrong():
    scores = torch.randn(2, 2, 4)
    ours = ac.masked_softmax(scores, torch.tensor([0, 3]))
    theirs = d2l.masked_softmax(scores.clone(), torch.tensor([0, 3]))
    torch.testing.assert_close(theirs[0], torch.full((2, 4), 0.25))  # d2l: uniform over padding
    assert torch.all(ours[0] == 0)
    torch.testing.assert_close(ours[1], theirs[1], **TOL)


def test_dot_product_attention_vs_d2l():
    q, k, v = torch.randn(2, 3, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 5)
    lens = torch.tensor([4, 6])
    ours, theirs = ac.DotProductAttention(), d2l.DotProductAttention(dropout=0.0)
    torch.testing.assert_close(ours(q, k, v, lens), theirs(q, k, v, lens), **TOL)
    torch.testing.assert_close(ours.attention_weights, theirs.attention_weights, **TOL)


def test_additive_attention_vs_d2l():
    q, k, v = torch.randn(2, 3, 7), torch.randn(2, 6, 5), torch.randn(2, 6, 4)
    lens = torch.tensor([2, 6])
    theirs = d2l.AdditiveAttention(num_hiddens=9, dropout=0.0)
    theirs(q, k, v, lens)  # materialise the lazy layers
    ours = ac.AdditiveAttention(9, query_size=7, key_size=5)
    ours.load_state_dict(theirs.state_dict())  # same names: W_q, W_k, w_v
    torch.testing.assert_close(ours(q, k, v, lens), theirs(q, k, v, lens), **TOL)
    torch.testing.assert_close(ours.attention_weights, theirs.attention_weights, **TOL)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("lens", [None, torch.tensor([3, 7])])
def test_multihead_attention_vs_d2l(bias, lens):
    q, kv = torch.randn(2, 4, 12), torch.randn(2, 7, 12)
    theirs = d2l.MultiHeadAttention(24, 3, dropout=0.0, bias=bias).eval()
    theirs(q, kv, kv, lens)
    ours = ac.MultiHeadAttention(24, 3, bias=bias, query_size=12, key_size=12, value_size=12).eval()
    ours.load_state_dict(theirs.state_dict(), strict=False)  # d2l also stores its inner attention
    expected = theirs(q, kv, kv, lens)
    torch.testing.assert_close(ours(q, kv, kv, lens), expected, **TOL)           # fused path
    torch.testing.assert_close(ours(q, kv, kv, lens, need_weights=True), expected, **TOL)
    # (batch*heads, ...) in d2l
    d2l_weights = theirs.attention.attention_weights.reshape(2, 3, 4, 7)
    torch.testing.assert_close(ours.attention_weights, d2l_weights, **TOL)


def test_positional_encoding_vs_d2l():
    ours, theirs = (ac.PositionalEncoding(32, max_len=200),
                    d2l.PositionalEncoding(32, 0.0, max_len=200))
    torch.testing.assert_close(ours.P, theirs.P, atol=0, rtol=0)  # the same table, bit for bit
    X = torch.randn(2, 50, 32)
    torch.testing.assert_close(ours(X), theirs.eval()(X), atol=0, rtol=0)


def _torch_mha(E, H, bias):
    ref = torch.nn.MultiheadAttention(E, H, bias=bias, batch_first=True).eval()
    ours = ac.MultiHeadAttention(E, H, bias=bias, query_size=E, key_size=E, value_size=E).eval()
    W_q, W_k, W_v = ref.in_proj_weight.chunk(3)
    with torch.no_grad():
        for layer, w in ((ours.W_q, W_q), (ours.W_k, W_k), (ours.W_v, W_v)):
            layer.weight.copy_(w)
        ours.W_o.weight.copy_(ref.out_proj.weight)
        if bias:
            b_q, b_k, b_v = ref.in_proj_bias.chunk(3)
            for layer, b in ((ours.W_q, b_q), (ours.W_k, b_k), (ours.W_v, b_v)):
                layer.bias.copy_(b)
            ours.W_o.bias.copy_(ref.out_proj.bias)
    return ours, ref


@pytest.mark.parametrize("bias", [False, True])
def test_multihead_attention_vs_torch(bias):
    ours, ref = _torch_mha(16, 4, bias)
    q, kv = torch.randn(3, 5, 16), torch.randn(3, 9, 16)
    lens = torch.tensor([9, 4, 1])
    padding = ~ac.valid_lens_to_mask(lens, 5, 9)[:, 0]  # torch: True means "ignore"
    with torch.no_grad():
        expected, w = ref(q, kv, kv, key_padding_mask=padding, need_weights=True,
                          average_attn_weights=False)
        torch.testing.assert_close(ours(q, kv, kv, lens), expected, **TOL)
        torch.testing.assert_close(ours(q, kv, kv, lens, need_weights=True), expected, **TOL)
    torch.testing.assert_close(ours.attention_weights, w, **TOL)


def test_multihead_self_attention_vs_torch_fast_path():
    ours, ref = _torch_mha(32, 8, False)
    x = torch.randn(2, 11, 32)
    with torch.no_grad():  # eval + no_grad + self-attention: torch takes its fused fast path
        torch.testing.assert_close(ours(x, x, x), ref(x, x, x, need_weights=False)[0], **TOL)


def test_dot_product_attention_vs_sdpa(device):
    q, k, v = (torch.randn(2, 4, n, 8, device=device) for n in (5, 7, 7))
    lens = torch.tensor([3, 7], device=device)
    mask = ac.valid_lens_to_mask(lens, 5, 7, device=device)[:, None]  # (2, 1, 1, 7)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ours = ac.DotProductAttention()(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1),
                                    lens.repeat_interleave(4))
    torch.testing.assert_close(ours.view(2, 4, 5, 8), expected, **TOL)
    # with a heads axis, the layer takes (B, h, n, d) directly
    torch.testing.assert_close(ac.DotProductAttention()(q, k, v, lens), expected, **TOL)
    for backend in ac.BACKENDS:  # and every backend of the core agrees with torch
        out, _ = ac.attend(q, k, v, mask, backend=backend)
        torch.testing.assert_close(out, expected, **TOL)


# --- the Transformer ---------------------------------------------------------------------

from attention_core.transformer import TransformerDecoderBlock, TransformerEncoderBlock  # noqa: E402


def test_encoder_block_loads_d2l_state_dict_and_agrees_with_padding():
    theirs = d2l.TransformerEncoderBlock(24, 48, 4, 0.0).eval()
    X = torch.randn(2, 5, 24)
    lens = torch.tensor([5, 3])
    theirs(X, lens)  # materialise d2l's lazy layers
    ours = TransformerEncoderBlock(24, 48, 4, 0.0).eval()
    ours.load_state_dict(theirs.state_dict())  # same names, same shapes
    torch.testing.assert_close(ours(X, lens), theirs(X, lens), **TOL)


def _copy_mha(ours, theirs):
    """torch's in_proj (stacked W_q, W_k, W_v and biases) and out_proj into our MHA."""
    W, b = theirs.in_proj_weight.chunk(3), theirs.in_proj_bias.chunk(3)
    for name, w, bias in zip("qkv", W, b):
        getattr(ours, f"W_{name}").weight.copy_(w)
        getattr(ours, f"W_{name}").bias.copy_(bias)
    ours.W_o.load_state_dict(theirs.out_proj.state_dict())


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_block_equals_torch_transformer_decoder_layer(norm_first):
    ref = torch.nn.TransformerDecoderLayer(24, 4, 48, dropout=0.0, activation="relu",
                                           batch_first=True, norm_first=norm_first).eval()
    ours = TransformerDecoderBlock(24, 48, 4, 0.0, 0, use_bias=True, norm_first=norm_first).eval()
    with torch.no_grad():
        _copy_mha(ours.attention1, ref.self_attn)
        _copy_mha(ours.attention2, ref.multihead_attn)
        ours.ffn.dense1.load_state_dict(ref.linear1.state_dict())
        ours.ffn.dense2.load_state_dict(ref.linear2.state_dict())
        for i in (1, 2, 3):
            getattr(ours, f"addnorm{i}").ln.load_state_dict(getattr(ref, f"norm{i}").state_dict())
        enc, X, lens = torch.randn(2, 6, 24), torch.randn(2, 5, 24), torch.tensor([6, 2])
        causal = torch.nn.Transformer.generate_square_subsequent_mask(5)
        expected = ref(X, enc, tgt_mask=causal, tgt_is_causal=True,
                       memory_key_padding_mask=torch.arange(6) >= lens[:, None])
        got, _ = ours(X, ours.attention2.project_kv(enc, enc), lens)
        torch.testing.assert_close(got, expected, **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_equals_torch_transformer_encoder_layer(norm_first):
    torch.manual_seed(0)
    ref = torch.nn.TransformerEncoderLayer(24, 4, 48, dropout=0.0, activation="relu",
                                           batch_first=True, norm_first=norm_first).eval()
    ours = TransformerEncoderBlock(24, 48, 4, 0.0, use_bias=True, norm_first=norm_first).eval()
    with torch.no_grad():
        _copy_mha(ours.attention, ref.self_attn)
        ours.ffn.dense1.load_state_dict(ref.linear1.state_dict())
        ours.ffn.dense2.load_state_dict(ref.linear2.state_dict())
        ours.addnorm1.ln.load_state_dict(ref.norm1.state_dict())
        ours.addnorm2.ln.load_state_dict(ref.norm2.state_dict())
    X, lens = torch.randn(2, 5, 24), torch.tensor([5, 3])
    ignore = torch.arange(5) >= lens[:, None]
    with torch.no_grad():
        got, expected = ours(X, lens), ref(X, src_key_padding_mask=ignore)
        for b, n in enumerate(lens.tolist()):  # each sentence at its real positions, padded too
            torch.testing.assert_close(got[b, :n], expected[b, :n], **TOL)
        torch.testing.assert_close(ours(X), ref(X), **TOL)
