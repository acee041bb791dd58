"""Chapter 8's solutions helper: a decoder-only translator (solutions_support.ch08)."""
import torch

from attention_core.solutions_support.ch08 import (
    DecoderOnlyLM,
    chinese_to_english_weights,
    decoder_only_loss,
    joint_rows,
    joint_vocab_size,
    train_decoder_only,
    translate_decoder_only,
)
from attention_core.worlds.corpus import make_corpus
from attention_core.worlds.vocab import TranslationData

PAIRS = [(["one", "two", "three"], ["一", "二"]), (["four"], ["四", "五", "六"])]


def test_rows_are_english_separator_chinese_eos_and_only_the_chinese_is_scored():
    data = TranslationData(PAIRS)
    rows, loss_mask, english = joint_rows(data, *data.tensors(PAIRS))
    offset = len(data.src_vocab)
    itos = data.src_vocab.itos + data.tgt_vocab.itos
    assert joint_vocab_size(data) == len(itos)
    assert english.tolist() == [3, 1]
    assert [itos[i] for i in rows[0]] == ["one", "two", "three", "<bos>", "一", "二", "<eos>"]
    assert [itos[i] for i in rows[1][:6]] == ["four", "<bos>", "四", "五", "六", "<eos>"]
    assert rows[1, 6] == 0 and rows[0, 3] == offset + data.tgt_vocab.bos
    # position i predicts rows[:, i + 1]: scored exactly where that is Chinese or the final <eos>
    assert loss_mask.tolist() == [[False, False, False, True, True, True],
                                  [False, True, True, True, True, False]]


def test_the_model_is_causal_and_the_loss_reads_only_the_scored_predictions():
    torch.manual_seed(0)
    model = DecoderOnlyLM(30, 16, 32, 4, 2).eval()
    tokens = torch.randint(30, (2, 9))
    with torch.no_grad():
        logits = model(tokens)
        assert logits.shape == (2, 9, 30)
        changed = tokens.clone()
        changed[:, 5:] = (changed[:, 5:] + 1) % 30
        assert torch.equal(model(changed)[:, :5], logits[:, :5])
        mask = torch.zeros(2, 8, dtype=torch.bool)
        mask[0, 2:4] = True
        expected = torch.nn.functional.cross_entropy(logits[0, 2:4], tokens[0, 3:5])
        torch.testing.assert_close(decoder_only_loss(model, tokens, mask), expected)


def test_training_lowers_the_loss_and_translation_returns_chinese_tokens():
    pairs = make_corpus(96, generator=torch.Generator().manual_seed(0), max_items=1)
    data = TranslationData(pairs)
    torch.manual_seed(0)
    model = DecoderOnlyLM(joint_vocab_size(data), 32, 64, 4, 2)
    losses = train_decoder_only(model, data, pairs, epochs=3, batch_size=32, lr=0.005,
                                generator=torch.Generator().manual_seed(0))
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert model.training
    out = translate_decoder_only(model, data, pairs[:5], max_len=8)
    assert len(out) == 5 and all(len(p) <= 8 for p in out)
    assert all(t in data.tgt_vocab.stoi for p in out for t in p)
    assert model.training  # translation gives the model back in the mode it was in


def test_chinese_rows_on_english_columns_have_the_alignment_shape():
    pairs = make_corpus(6, generator=torch.Generator().manual_seed(1), max_items=2)
    data = TranslationData(pairs)
    torch.manual_seed(0)
    model = DecoderOnlyLM(joint_vocab_size(data), 16, 32, 4, 2)
    weights, share = chinese_to_english_weights(model, data, pairs)
    n_tgt, n_src = max(len(p.target) + 1 for p in pairs), max(len(p.source) for p in pairs)
    assert len(weights) == len(share) == 2
    assert all(w.shape == (6, 4, n_tgt, n_src) for w in weights)
    assert all(s.shape == (4,) and ((0 < s) & (s < 1)).all() for s in share)
    assert all((w.sum(-1) <= 1 + 1e-6).all() for w in weights)
    b = 0
    m, k = len(pairs[b].source), len(pairs[b].target) + 1
    assert (weights[0][b, :, k:] == 0).all() and (weights[0][b, :, :, m:] == 0).all()
    assert not any(blk.attention.need_weights for blk in model.blks)  # restored
