"""The decoding module: the shifted decoder input, decoder states that reorder their rows,
greedy and beam search (checked against exhaustive search), and the log-probability of a
sequence."""
import dataclasses
import itertools
import math

import pytest
import torch
from torch import nn

from attention_core.decoding import (
    DecoderState,
    beam_search,
    decoder_input,
    greedy_decode,
    sequence_log_prob,
)
from attention_core.seq2seq import AttentionState


def test_decoder_input_is_bos_then_the_target_shifted_right():
    tgt = torch.tensor([[5, 6, 2, 0], [7, 2, 0, 0]])  # ... <eos>=2, <pad>=0
    assert decoder_input(tgt, bos=1).tolist() == [[1, 5, 6, 2], [1, 7, 2, 0]]


def test_state_reorders_rows_on_the_right_axis():
    state = AttentionState(hidden=torch.arange(12.0).reshape(2, 3, 2),          # (layers, B, d)
                           enc_outputs=torch.arange(3.0)[:, None, None].expand(3, 4, 2),
                           projected_keys=torch.zeros(3, 4, 5), valid_lens=torch.tensor([4, 2, 3]))
    picked = state.reorder(torch.tensor([2, 2, 0]))
    assert picked.hidden.shape == (2, 3, 2) and picked.hidden[0, :, 0].tolist() == [4.0, 4.0, 0.0]
    assert picked.enc_outputs[:, 0, 0].tolist() == [2.0, 2.0, 0.0]
    assert picked.valid_lens.tolist() == [3, 3, 4]

    @dataclasses.dataclass
    class Cached(DecoderState):
        cache: list
        step: int
    c = Cached(cache=[(torch.arange(3), torch.arange(3) * 10)], step=7).reorder(torch.tensor([1]))
    assert c.cache[0][0].tolist() == [1] and c.cache[0][1].tolist() == [10] and c.step == 7


@pytest.mark.slow
def test_decoding_restores_the_mode_and_records_no_gradient(tiny, trained):
    train, data = tiny
    src, src_lens, _, _ = data.tensors(train[:2])
    trained.train()
    tokens, weights = greedy_decode(trained, src, src_lens, data.tgt_vocab.bos,
                                    data.tgt_vocab.eos, 12)
    assert trained.training and not weights.requires_grad
    trained.eval()
    beam_search(trained, src[:1], src_lens[:1], data.tgt_vocab.bos, data.tgt_vocab.eos, max_len=12)
    assert not trained.training


@pytest.mark.slow
def test_greedy_and_beam_decoding(tiny, trained):
    train, data = tiny
    vocab = data.tgt_vocab
    src, src_lens, _, _ = data.tensors(train[:8])
    tokens, weights = greedy_decode(trained, src, src_lens, vocab.bos, vocab.eos, 12)
    assert tokens.shape[0] == 8 and weights.shape[:2] == tokens.shape
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:2]))
    for i in range(8):
        one, lp = beam_search(trained, src[i:i + 1], src_lens[i:i + 1], vocab.bos, vocab.eos,
                              beam_size=1, max_len=12)
        greedy = vocab.decode(tokens[i].tolist())
        assert vocab.decode(one) == greedy  # a beam of one is greedy decoding
        check = sequence_log_prob(trained, src[i:i + 1], src_lens[i:i + 1],
                                  torch.tensor([one]), vocab.bos, vocab.eos).item()
        assert lp == pytest.approx(check, abs=1e-4)  # the reported log-probability is the model's
    best, lp = beam_search(trained, src[:1], src_lens[:1], vocab.bos, vocab.eos, beam_size=3,
                           max_len=12)
    assert lp <= 0 and vocab.eos not in best
    with pytest.raises(ValueError, match="beam_size must be a positive int"):
        beam_search(trained, src[:1], src_lens[:1], 1, 2, beam_size=0)
    with pytest.raises(ValueError, match=r"src must be \(1, n_src\)"):
        beam_search(trained, src, src_lens, 1, 2)
    with pytest.raises(ValueError, match=r"src_valid_lens of shape \(3,\) must be \(8,\)"):
        greedy_decode(trained, src, src_lens[:3], 1, 2)


@dataclasses.dataclass
class Nothing(DecoderState):
    pass


class MarkovDecoder(nn.Module):
    """A decoder whose next-token distribution depends only on the last token: P[last]."""

    def __init__(self, log_probs):
        super().__init__()
        self.log_probs = log_probs

    def init_state(self, enc_outputs, src_valid_lens):
        return Nothing()

    def forward(self, tokens, state):
        return self.log_probs[tokens], state


class MarkovModel(nn.Module):
    def __init__(self, log_probs):
        super().__init__()
        self.encoder = lambda src, lens: None
        self.decoder = MarkovDecoder(log_probs)


def best_by_search(log_probs, bos, eos, max_len, alpha):
    """Exhaustive search: the best finished sequence by log P / (len + 1)^alpha."""
    others = [t for t in range(log_probs.shape[0]) if t != eos]
    best = None
    for n in range(max_len):
        for seq in itertools.product(others, repeat=n):
            path = [bos, *seq]
            lp = sum(log_probs[a, b].item() for a, b in zip(path, [*seq, eos]))
            score = lp / (n + 1) ** alpha
            if best is None or score > best[0]:
                best = (score, list(seq))
    return best[1]


@pytest.mark.parametrize("alpha", [0.0, 0.7, 1.0])
@pytest.mark.parametrize("seed", range(6))
def test_beam_search_with_a_wide_beam_is_exhaustive_search(alpha, seed):
    """With room for every hypothesis, beam search must return the best sequence under its
    own ranking: so its stopping rule never cuts off a better, longer output."""
    gen = torch.Generator().manual_seed(seed)
    log_probs = torch.log_softmax(torch.randn(5, 5, generator=gen) * 2, -1)  # 0 pad 1 bos 2 eos
    model = MarkovModel(log_probs)
    src = torch.zeros(1, 1, dtype=torch.long)
    tokens, _ = beam_search(model, src, [1], bos=1, eos=2, beam_size=500, max_len=5,
                            length_penalty=alpha)
    assert tokens == best_by_search(log_probs, 1, 2, 5, alpha)


def test_beam_search_can_beat_greedy():
    """Greedy takes the likelier first token and is trapped; a beam of two is not."""
    P = torch.full((5, 5), 1e-9)
    P[1, 3], P[1, 4] = 0.6, 0.4                  # after <bos>: 3 is likelier ...
    P[3, 2], P[3, 4], P[3, 0] = 0.30, 0.36, 0.34  # ... but no way on from 3 keeps more than 0.36
    P[4, 2] = 1.0                                # after 4 it ends surely: 0.4 > 0.6 * 0.36
    P[0, 2] = 0.5
    model = MarkovModel(P.log())
    src = torch.zeros(1, 1, dtype=torch.long)
    greedy, _ = greedy_decode(model, src, [1], bos=1, eos=2, max_len=2)
    beam, lp = beam_search(model, src, [1], bos=1, eos=2, beam_size=2, max_len=4)
    assert greedy[0, 0].item() == 3 and beam == [4] and lp == pytest.approx(math.log(0.4))
