import pytest
import torch

from attention_core.decoding import beam_search, greedy_decode, sequence_log_prob
from attention_core.transformer import (
    AddNorm,
    PositionWiseFFN,
    TransformerDecoder,
    TransformerEncoder,
    TransformerEncoderBlock,
    TransformerState,
    keep_attention_weights,
    make_transformer,
)

V_SRC, V_TGT, BOS, EOS = 11, 13, 1, 2


def model(**kw):
    torch.manual_seed(0)
    return make_transformer(V_SRC, V_TGT, num_hiddens=16, ffn_num_hiddens=32, num_heads=4,
                            num_blks=2, **kw).eval()


def batch():
    g = torch.Generator().manual_seed(0)
    src = torch.randint(3, V_SRC, (3, 7), generator=g)
    tgt = torch.randint(3, V_TGT, (3, 6), generator=g)
    return src, torch.tensor([7, 4, 1]), tgt


@pytest.mark.parametrize("kw", [{}, {"norm_first": True}, {"num_kv_heads": 2}, {"num_kv_heads": 1}])
def test_incremental_decoding_equals_full_recomputation_at_every_step(kw, device):
    m = model(**kw).to(device)
    src, lens, tgt = (t.to(device) for t in batch())
    with torch.no_grad():
        enc = m.encoder(src, lens)
        full, _ = m.decoder(tgt, m.decoder.init_state(enc, lens))       # all positions at once
        state = m.decoder.init_state(enc, lens)
        steps = []
        for t in range(tgt.shape[1]):                                    # one position per call
            logits, state = m.decoder(tgt[:, t:t + 1], state)
            steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    assert state.offset == 6 and state.self_kv[0][0].shape == (3, kw.get("num_kv_heads", 4), 6, 4)
    # two calls of 3 positions each: the bottom-right aligned causal mask over the cache
    state = m.decoder.init_state(enc, lens)
    with torch.no_grad():
        a, state = m.decoder(tgt[:, :3], state)
        b, state = m.decoder(tgt[:, 3:], state)
    torch.testing.assert_close(torch.cat([a, b], 1), full, atol=1e-5, rtol=1e-5)


def test_greedy_translations_with_the_cache_equal_recomputing_the_prefix():
    m = model()
    src, lens, _ = batch()
    cached, _ = greedy_decode(m, src, lens, BOS, EOS, max_len=8)
    with torch.no_grad():
        enc = m.encoder(src, lens)
        prefix = torch.full((3, 1), BOS)
        for _ in range(cached.shape[1]):  # no cache: the whole prefix every step
            logits, _ = m.decoder(prefix, m.decoder.init_state(enc, lens))
            prefix = torch.cat([prefix, logits[:, -1:].argmax(-1)], 1)
    out = prefix[:, 1:]
    done = (out == EOS).cumsum(1) > 0  # greedy_decode pads with <eos> after the end
    out = torch.where(done, torch.full_like(out, EOS), out)
    assert torch.equal(cached, out)


def test_beam_search_reorders_the_cache():
    """With a wide beam, beam search over the cached decoder finds the most probable output
    among all sequences of length <= 2 (checked by enumeration)."""
    m = model()
    src, lens, _ = batch()
    tokens, log_prob = beam_search(m, src[:1], lens[:1], BOS, EOS, beam_size=V_TGT * V_TGT,
                                   max_len=2)
    best = max(((a, b) for a in range(V_TGT) for b in range(V_TGT) if EOS not in (a, b)),
               key=lambda ab: sequence_log_prob(m, src[:1], lens[:1], torch.tensor([ab]), BOS,
                                                EOS).item())
    candidates = {(): sequence_log_prob(m, src[:1], lens[:1], torch.zeros(1, 0, dtype=torch.long),
                                        BOS, EOS).item()}
    candidates.update({(a,): sequence_log_prob(m, src[:1], lens[:1], torch.tensor([[a]]), BOS,
                                               EOS).item()
                       for a in range(V_TGT) if a != EOS})
    candidates[best] = sequence_log_prob(m, src[:1], lens[:1], torch.tensor([best]), BOS,
                                         EOS).item()
    winner = max(candidates, key=candidates.get)
    assert tuple(tokens) == winner
    assert log_prob == pytest.approx(candidates[winner], abs=1e-4)


def test_causality_and_padding_by_perturbation():
    m = model()
    src, lens, tgt = batch()
    with torch.no_grad():
        logits = m(src, tgt, lens)
        later = tgt.clone()
        later[:, 3:] = (later[:, 3:] + 1) % V_TGT                 # change positions > 2
        assert torch.equal(m(src, later, lens)[:, :3], logits[:, :3])
        assert not torch.allclose(m(src, later, lens)[:, 3:], logits[:, 3:])
        padded = src.clone()
        padded[1, 4:] = 3                                          # beyond sentence 2's length
        padded[2, 1:] = 4
        assert torch.equal(m(padded, tgt, lens), logits)


def test_every_decoder_block_reads_the_last_encoder_output():
    m = model()
    src, lens, tgt = batch()
    with torch.no_grad():
        enc = m.encoder(src, lens)
        state = m.decoder.init_state(enc, lens)
    for blk, (k, v) in zip(m.decoder.blks, state.cross_kv):
        expected_k, expected_v = blk.attention2.project_kv(enc, enc)
        assert torch.equal(k, expected_k) and torch.equal(v, expected_v)


def test_attention_weights_kept_on_request():
    m = model()
    keep_attention_weights(m)
    src, lens, tgt = batch()
    with torch.no_grad():
        m(src, tgt, lens)
    cross = m.decoder.cross_attention_weights
    assert len(cross) == 2 and cross[0].shape == (3, 4, 6, 7)
    assert torch.all(cross[0][1, :, :, 4:] == 0)                 # padding gets no weight
    assert torch.all(m.decoder.self_attention_weights[1].triu(1) == 0)
    assert m.encoder.attention_weights[0].shape == (3, 4, 7, 7)


def test_pre_and_post_norm_blocks():
    x = torch.randn(2, 5, 16)
    post = AddNorm(16, 0.0)
    pre = AddNorm(16, 0.0, norm_first=True)
    f = PositionWiseFFN(8, 16)
    torch.testing.assert_close(post.residual(x, f), post.ln(x + f(x)))
    torch.testing.assert_close(pre.residual(x, f), x + f(pre.ln(x)))
    assert isinstance(model(norm_first=True).encoder.final_ln, torch.nn.LayerNorm)


def test_bad_input():
    m = model(max_len=8)
    src, lens, tgt = batch()
    state = m.decoder.init_state(m.encoder(src, lens), lens)
    _, state = m.decoder(tgt[:, :6], state)
    with pytest.raises(ValueError, match="from offset 6, beyond max_len=8"):
        m.decoder(tgt[:, :3], state)
    wrong = TransformerState(valid_lens=lens, cross_kv=state.cross_kv, self_kv=state.self_kv,
                             offset=2)
    with pytest.raises(ValueError, match=r"the cache holds \[6, 6\] positions per block "
                                         r"but the state says 2"):
        m.decoder(tgt[:, :1], wrong)
    with pytest.raises(TypeError, match="state must be a TransformerState"):
        m.decoder(tgt, None)
    with pytest.raises(ValueError, match=r"tokens must be \(batch, n\) token indices"):
        m.decoder(tgt[0], m.decoder.init_state(m.encoder(src, lens), lens))
    with pytest.raises(ValueError, match=r"valid_lens of shape \(2,\)"):
        m(src, tgt, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"num_kv_heads \(3\) must divide num_heads \(4\)"):
        TransformerEncoderBlock(16, 32, 4, num_kv_heads=3)
    with pytest.raises(ValueError, match="ffn_num_hiddens must be a positive int"):
        TransformerEncoder(10, 16, 0, 4, 2)
    with pytest.raises(ValueError, match="num_blks must be a positive int"):
        TransformerDecoder(10, 16, 32, 4, 0)


def test_meta_device_shapes():
    m = model(num_kv_heads=2).to("meta")
    src = torch.zeros(3, 7, dtype=torch.long, device="meta")
    tgt = torch.zeros(3, 5, dtype=torch.long, device="meta")
    assert m(src, tgt, torch.tensor([7, 4, 1], device="meta")).shape == (3, 5, V_TGT)


def test_encoder_block_with_a_causal_mask_is_a_decoder_only_block():
    torch.manual_seed(0)
    blk = TransformerEncoderBlock(16, 32, 4).eval()
    X = torch.randn(2, 6, 16)
    with torch.no_grad():
        out = blk(X, is_causal=True)
        Y = X.clone()
        Y[:, 4:] = torch.randn(2, 2, 16)
        assert torch.equal(blk(Y, is_causal=True)[:, :4], out[:, :4])
        assert not torch.allclose(blk(X)[:, :4], out[:, :4])  # without the mask, it looks ahead
