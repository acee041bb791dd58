"""The GRU encoder and the plain and Bahdanau decoders: shapes, padding, decoder states and
step-by-step decoding against teacher forcing."""

import pytest
import torch

from attention_core.decoding import (
    decoder_input,
)
from attention_core.seq2seq import AttentionDecoder, PlainDecoder, make_model


@pytest.mark.parametrize("kind, decoder", [("plain", PlainDecoder),
                                           ("attention", AttentionDecoder)])
def test_decoder_shapes_and_padding_invariance(tiny, kind, decoder):
    train, data = tiny
    torch.manual_seed(0)
    model = make_model(kind, len(data.src_vocab), len(data.tgt_vocab), num_hiddens=16, embed_size=8)
    assert isinstance(model.decoder, decoder)
    src, src_lens, tgt, _ = data.tensors(train[:3])
    logits = model(src, tgt, src_lens)
    weights = model.decoder.attention_weights
    assert logits.shape == (3, tgt.shape[1], len(data.tgt_vocab))
    if kind == "attention":
        assert weights.shape == (3, tgt.shape[1], src.shape[1])
        for b, n in enumerate(src_lens.tolist()):
            assert torch.all(weights[b, :, n:] == 0)  # padding is never attended to
    else:
        assert weights is None
    # extra padding changes nothing: the encoder state is taken at the last valid token
    padded = torch.cat([src, torch.full((3, 4), data.src_vocab.pad)], 1)
    torch.testing.assert_close(model(padded, tgt, src_lens), logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("decoder", [PlainDecoder, AttentionDecoder])
def test_a_strided_initial_state_is_made_contiguous(decoder, device):
    """CUDA's GRU refuses a state that is a strided view (here the last encoder output,
    sliced), where the CPU's accepts it: init_state hands the GRU a contiguous copy, so the
    same call works on both and gives the same logits as a contiguous state."""
    torch.manual_seed(0)
    dec = decoder(9, 4, 8).to(device)
    outputs = torch.randn(2, 5, 8, device=device)
    strided = outputs[:, -1][None]                                   # (1, B, d), not contiguous
    assert not strided.is_contiguous()
    state = dec.init_state((outputs, strided), torch.tensor([5, 3], device=device))
    assert state.hidden.is_contiguous()
    tokens = torch.tensor([[1, 2, 3], [3, 2, 1]], device=device)
    contiguous = dec.init_state((outputs, strided.contiguous()),
                                torch.tensor([5, 3], device=device))
    torch.testing.assert_close(dec(tokens, state)[0], dec(tokens, contiguous)[0], rtol=0, atol=0)


def test_step_by_step_decoding_equals_teacher_forcing(tiny):
    """Feeding the target one token at a time through the state gives the same logits."""
    train, data = tiny
    torch.manual_seed(0)
    model = make_model("attention", len(data.src_vocab), len(data.tgt_vocab), num_hiddens=16,
                       embed_size=8).eval()
    src, src_lens, tgt, _ = data.tensors(train[:4])
    tokens = decoder_input(tgt, data.tgt_vocab.bos)
    full = model(src, tokens, src_lens)
    state = model.decoder.init_state(model.encoder(src, src_lens), src_lens)
    steps = []
    for t in range(tokens.shape[1]):
        logits, state = model.decoder(tokens[:, t:t + 1], state)
        steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
