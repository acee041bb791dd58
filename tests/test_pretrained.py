"""The trained weights the book ships (attention_core.worlds.pretrained): chapter 8 loads them
in place of retraining chapter 4's model, so they must be that model, for that corpus."""
import pytest
import torch

from attention_core.worlds import pretrained
from attention_core.worlds.translation import TranslationData, exact_match, make_splits, translate


@pytest.fixture(scope="module")
def corpus():
    return pretrained.chapter4_corpus()


# each shipped model against its chapter's bands: Bahdanau test exact match >= 94% and a final
# loss far below the plain model's (0.04 against ~0.7 when measured); the Transformer >= 95%
# (98.3-98.7% measured)
@pytest.mark.parametrize("name, band, epochs, final_loss", [("bahdanau", 0.94, 4, 0.1),
                                                             ("transformer", 0.95, 10, 0.01)])
def test_the_shipped_models_translate_as_their_chapters_say(corpus, name, band, epochs, final_loss):
    data, _, _, test = corpus
    model, losses, seconds = pretrained.load_model(name, data)
    predictions = translate(model, data, test)
    assert exact_match(predictions, [p.target for p in test]) >= band
    assert len(losses) == epochs and losses[-1] < final_loss and losses[0] > losses[-1]
    assert seconds > 0


def test_the_recipe_is_chapter_4s_call():
    _, model_args, train_args = pretrained.RECIPES["bahdanau"]
    assert model_args == dict(kind="attention", embed_size=32, num_hiddens=128)
    assert train_args == dict(epochs=4, batch_size=128, lr=0.01)
    chapter = (pretrained.Path(__file__).parents[1] / "chapters" / "04_seq2seq_attention.ipynb")
    text = chapter.read_text(encoding="utf-8")
    assert "embed_size=32" in text and "num_hiddens=128" in text
    assert "epochs=4, batch_size=128, lr=0.01" in text


def test_weights_for_another_vocabulary_are_refused():
    train, _, _ = make_splits(n_train=300, n_valid=10, n_test=10,
                              generator=torch.Generator().manual_seed(5))
    with pytest.raises(ValueError, match="another (src|tgt) vocabulary"):
        pretrained.load_model("bahdanau", TranslationData(train))


def test_an_unknown_name_is_refused(corpus):
    with pytest.raises(ValueError, match="name must be one of"):
        pretrained.load_model("gpt", corpus[0])


def test_write_then_load_gives_the_same_model(tmp_path, monkeypatch, corpus):
    """write() saves what load_model() reads back, bit for bit (trained briefly here)."""
    data, train, _, _ = corpus
    monkeypatch.setitem(pretrained.RECIPES, "tiny", ("tiny.pt", dict(kind="attention", embed_size=8,
                                                                    num_hiddens=16),
                                                     dict(epochs=1, batch_size=256, lr=0.01)))
    monkeypatch.setattr(pretrained, "chapter4_corpus", lambda: (data, train[:512], None, None))
    path = pretrained.write("tiny", directory=tmp_path)
    assert path == tmp_path / "tiny.pt"
    model, losses, _ = pretrained.load_model("tiny", data, directory=tmp_path)
    again, _, _ = pretrained.train_model("tiny", data, train[:512], progress=False)
    for name, tensor in again.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name
    assert len(losses) == 1


def test_the_transformer_recipe_is_chapter_8s_call():
    _, model_args, train_args = pretrained.RECIPES["transformer"]
    assert model_args == dict(kind="transformer", num_hiddens=64, ffn_num_hiddens=128,
                              num_heads=4, num_blks=2)
    assert train_args == dict(epochs=10, batch_size=128, lr=0.005, warmup=150)
    chapter = pretrained.Path(__file__).parents[1] / "chapters" / "08_transformer.ipynb"
    text = chapter.read_text(encoding="utf-8")
    assert "num_hiddens=64" in text and "ffn_num_hiddens=128, num_heads=4, num_blks=2" in text
    assert "EPOCHS, BATCH, WARMUP = 10, 128, 150" in text
    assert "lr=0.005, schedule=warmup_linear_decay(WARMUP)" in text
