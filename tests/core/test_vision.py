"""The Vision Transformer, the captioner's layers and sampled attention (chapter 10's
mechanisms); the scenes they learn from are tested in tests/worlds/test_shapes.py."""
import pytest
import torch
from torch import nn

from attention_core.transformer import keep_attention_weights
from attention_core.vision import PatchEmbedding, VisionTransformer, patchify


# ---- patches as tokens -----------------------------------------------------------------
def test_patch_embedding_is_a_strided_convolution():
    torch.manual_seed(0)
    embed = PatchEmbedding(16, 8).double()
    images = torch.rand(3, 3, 48, 48, dtype=torch.float64)
    tokens = embed(images)
    conv = embed.as_conv2d()
    assert isinstance(conv, nn.Conv2d) and conv.stride == (8, 8) and conv.kernel_size == (8, 8)
    torch.testing.assert_close(conv(images).flatten(2).transpose(1, 2), tokens, rtol=0, atol=1e-12)
    assert tokens.shape == (3, 36, 16)


def test_patchify_orders_patches_row_by_row():
    images = torch.arange(2 * 4 * 4, dtype=torch.float32).reshape(1, 2, 4, 4)
    patches = patchify(images, 2)                                    # (1, 4, 2 * 2 * 2)
    assert torch.equal(patches[0, 1], images[0, :, 0:2, 2:4].flatten())   # row 0, column 1
    assert torch.equal(patches[0, 2], images[0, :, 2:4, 0:2].flatten())   # row 1, column 0


def _vit(**kw):
    torch.manual_seed(0)
    return VisionTransformer(48, 8, 32, 64, 4, 2, 2, **kw).eval()


def test_vit_shapes_and_its_attention_rows_sum_to_one():
    model = _vit()
    keep_attention_weights(model)
    with torch.no_grad():
        logits = model(torch.rand(5, 3, 48, 48))
    assert logits.shape == (5, 2)
    for w in model.attention_weights:
        assert w.shape == (5, 4, 37, 37)
        torch.testing.assert_close(w.sum(-1), torch.ones(5, 4, 37))


def test_without_positions_the_vit_cannot_tell_where_a_patch_was():
    """Self-attention is blind to order (chapter 5): with no positions, shuffling the patches
    leaves the class token's output unchanged; with learned positions it changes."""
    images = torch.rand(4, 3, 48, 48, generator=torch.Generator().manual_seed(1))
    blocks = images.reshape(4, 3, 6, 8, 6, 8)
    shuffled = blocks.flip(2, 4).reshape(4, 3, 48, 48)   # patch (r, c) -> (5 - r, 5 - c), intact
    with torch.no_grad():
        blind, seeing = _vit(positions=False), _vit()
        seeing.pos_encoding.embedding.weight.normal_(std=1.0)
        torch.testing.assert_close(blind(shuffled), blind(images), rtol=0, atol=1e-5)
        assert (seeing(shuffled) - seeing(images)).abs().max() > 1e-3
    assert torch.equal(patchify(shuffled, 8)[:, 0], patchify(images, 8)[:, 35])   # moved intact


def test_a_head_mask_equals_zeroing_those_heads_columns_of_w_o():
    import copy
    torch.manual_seed(0)
    vit = VisionTransformer(16, 4, 32, 64, 4, 2, 5).double().eval()
    images = torch.rand(3, 3, 16, 16, dtype=torch.float64)
    mask = torch.ones(2, 4, dtype=torch.float64)
    mask[0, 2] = 0                      # one head of block 1
    mask[1] = 0                         # all of block 2's attention (its W_o bias stays)
    edited = copy.deepcopy(vit)
    with torch.no_grad():
        edited.blks[0].attention.W_o.weight[:, 16:24] = 0
        edited.blks[1].attention.W_o.weight.zero_()
    torch.testing.assert_close(vit(images, head_mask=mask), edited(images), rtol=0, atol=1e-12)
    torch.testing.assert_close(vit(images, head_mask=torch.ones(2, 4, dtype=torch.float64)),
                               vit(images), rtol=0, atol=0)
    assert not torch.allclose(vit(images, head_mask=mask), vit(images))
    with pytest.raises(ValueError, match="head_mask"):
        vit(images, head_mask=torch.ones(3, 4, dtype=torch.float64))


def test_vit_runs_on_meta_and_compiles_without_graph_breaks():
    model = _vit().to("meta")
    assert model(torch.empty(2, 3, 48, 48, device="meta")).shape == (2, 2)
    cpu = _vit()
    images = torch.rand(2, 3, 48, 48)
    compiled = torch.compile(cpu, fullgraph=True, backend="eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(images), cpu(images))


@pytest.mark.parametrize("images, message", [
    (torch.rand(2, 3, 48), "images must be .batch, channels, image_size, image_size."),
    (torch.rand(2, 1, 48, 48), "this layer's channels is 3"),
    (torch.rand(2, 3, 40, 40), "this layer's image_size is 48"),
    (torch.randint(2, (2, 3, 48, 48)), "images must have a floating dtype"),
])
def test_bad_images_name_the_argument_and_shape(images, message):
    with pytest.raises((ValueError, TypeError), match=message):
        _vit()(images)


def test_the_patch_embedding_needs_whole_patches():
    with pytest.raises(ValueError, match=r"images of shape \(2, 3, 44, 44\): height and width "
                       r"must be multiples of patch_size=8"):
        PatchEmbedding(32, 8)(torch.rand(2, 3, 44, 44))


def test_bad_vit_sizes_are_refused():
    with pytest.raises(ValueError, match="patch_size=7 must divide image_size=48"):
        VisionTransformer(48, 7, 32, 64, 4, 2, 2)
    with pytest.raises(ValueError, match="num_classes must be a positive int"):
        VisionTransformer(48, 8, 32, 64, 4, 2, 0)


# ---- show, attend and tell -------------------------------------------------------------
from attention_core.captioning import Captioner, GridEncoder, doubly_stochastic_penalty  # noqa: E402
from attention_core.decoding import greedy_decode  # noqa: E402


def _captioner():
    torch.manual_seed(0)
    return Captioner(12, embed_size=8, num_hiddens=16).eval()


def test_the_grid_encoder_gives_one_feature_per_cell_and_a_first_state():
    features, state = GridEncoder(16)(torch.rand(3, 3, 48, 48))
    assert features.shape == (3, 36, 16) and state.shape == (1, 3, 16)
    assert state.abs().max() < 1                                     # tanh


def test_each_words_attention_over_the_grid_sums_to_one():
    model = _captioner()
    with torch.no_grad():
        logits = model(torch.rand(2, 3, 48, 48), torch.randint(12, (2, 7)))
    weights = model.decoder.attention_weights
    assert logits.shape == (2, 7, 12) and weights.shape == (2, 7, 36)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 7))


def test_the_doubly_stochastic_penalty_counts_each_cells_total_over_the_caption():
    one_cell_each = torch.eye(4)[None]                       # 4 words, each on its own cell
    assert doubly_stochastic_penalty(one_cell_each) == 0
    uniform = torch.full((1, 2, 4), 0.25)                   # 2 words spread over 4 cells
    torch.testing.assert_close(doubly_stochastic_penalty(uniform), torch.tensor(4 * 0.5 ** 2))
    # padding steps count for nothing: only the first word is real
    torch.testing.assert_close(doubly_stochastic_penalty(uniform, torch.tensor([1])),
                               torch.tensor(4 * 0.75 ** 2))


def test_greedy_captions_stop_at_eos_and_keep_every_steps_attention():
    model = _captioner()
    tokens, weights = greedy_decode(model, torch.rand(4, 3, 48, 48), None, bos=1, eos=2, max_len=9)
    assert tokens.shape[0] == 4 and tokens.shape[1] <= 9
    assert weights.shape == (4, tokens.shape[1], 36)
    for row in tokens.tolist():
        if 2 in row:
            assert set(row[row.index(2):]) == {2}
    with pytest.raises(TypeError, match="src must be a torch.Tensor"):
        greedy_decode(model, [[0.0]], None, bos=1, eos=2)


@pytest.mark.parametrize("images, message", [
    (torch.rand(2, 3, 40, 40), r"images has size 40 in dimension 2 .* image_size is 48"),
    (torch.rand(3, 48, 48), r"images must be \(batch, channels, image_size, image_size\)"),
])
def test_bad_images_for_the_captioner_name_the_shape(images, message):
    with pytest.raises(ValueError, match=message):
        _captioner()(images, torch.zeros(images.shape[0], 3, dtype=torch.long))


def test_the_grid_encoder_runs_on_meta():
    features, state = GridEncoder(16).to("meta")(torch.empty(2, 3, 48, 48, device="meta"))
    assert features.shape == (2, 36, 16) and state.device.type == "meta"


def test_attention_rollout_composes_the_layers_and_keeps_rows_summing_to_one():
    from attention_core.vision import attention_rollout
    g = torch.Generator().manual_seed(0)
    layers = [torch.softmax(torch.randn(2, 4, 5, 5, generator=g), -1) for _ in range(3)]
    rollout = attention_rollout(layers)
    torch.testing.assert_close(rollout.sum(-1), torch.ones(2, 5))
    one = [0.5 * torch.eye(5) + 0.5 * w.mean(1) for w in layers]
    torch.testing.assert_close(rollout, one[2] @ one[1] @ one[0])
    # attention that only looks at itself passes nothing between tokens
    torch.testing.assert_close(attention_rollout([torch.eye(5).expand(2, 4, 5, 5)] * 2),
                               torch.eye(5).expand(2, 5, 5))
    # with the ViT: row 0 is the class token's reading of itself and the 36 patches
    model = _vit()
    keep_attention_weights(model)
    with torch.no_grad():
        model(torch.rand(3, 3, 48, 48))
    cls = attention_rollout(model.attention_weights)[:, 0]
    assert cls.shape == (3, 37) and torch.allclose(cls.sum(-1), torch.ones(3))
    with pytest.raises(ValueError, match="residual must be in"):
        attention_rollout(layers, residual=1.5)
    with pytest.raises(ValueError, match=r"weights\[0\] must be \(batch, heads, n, n\)"):
        attention_rollout([torch.rand(5, 5)])


# ---- hard attention ----------------------------------------------------------------------
from attention_core.attention import AdditiveAttention  # noqa: E402
from attention_core.captioning import SampledAttention  # noqa: E402


def _pair():
    torch.manual_seed(0)
    soft = AdditiveAttention(8, query_size=6, key_size=5)
    hard = SampledAttention(8, query_size=6, key_size=5)
    hard.load_state_dict(soft.state_dict())
    return soft, hard


def test_sampled_attention_reads_the_most_weighted_value_in_evaluation():
    soft, hard = _pair()
    q, k, v = torch.randn(3, 2, 6), torch.randn(3, 7, 5), torch.randn(3, 7, 4)
    soft(q, k, v)
    out = hard.eval()(q, k, v)
    torch.testing.assert_close(hard.attention_weights, soft.attention_weights)
    best = soft.attention_weights.argmax(-1)                                  # (3, 2)
    assert torch.equal(out, torch.stack([v[b, best[b]] for b in range(3)]))
    torch.testing.assert_close(hard.log_probs[-1],
                               soft.attention_weights.amax(-1).log())


def test_sampled_attention_draws_keys_as_often_as_their_weights_in_training():
    _, hard = _pair()
    q, k = torch.randn(1, 1, 6), torch.randn(1, 7, 5)
    v = torch.arange(7.0)[None, :, None]                                      # value = index
    torch.manual_seed(1)
    draws = torch.cat([hard.train()(q, k, v).flatten() for _ in range(4000)]).long()
    freq = torch.bincount(draws, minlength=7) / 4000
    alpha = hard.attention_weights[0, 0]
    assert (freq - alpha).abs().max() < 4 * (alpha * (1 - alpha) / 4000).sqrt().max()
    picked = torch.stack([lp for lp in hard.log_probs]).flatten()
    torch.testing.assert_close(picked, alpha.log()[draws])


def test_a_hard_captioner_decodes_greedily_one_cell_per_word():
    torch.manual_seed(0)
    model = Captioner(12, embed_size=8, num_hiddens=16, hard=True)
    tokens, weights = greedy_decode(model, torch.rand(2, 3, 48, 48), None, bos=1, eos=2, max_len=5)
    assert weights.shape == (2, tokens.shape[1], 36)
    assert model.decoder.log_probs.shape == (2, tokens.shape[1])


def test_sampled_attention_runs_on_meta_and_compiles_without_graph_breaks():
    _, hard = _pair()
    out = hard.eval().to("meta")(torch.empty(2, 3, 6, device="meta"),
                                 torch.empty(2, 7, 5, device="meta"),
                                 torch.empty(2, 7, 4, device="meta"))
    assert out.shape == (2, 3, 4) and hard.log_probs[-1].shape == (2, 3)
    _, hard = _pair()
    q, k, v = torch.randn(2, 3, 6), torch.randn(2, 7, 5), torch.randn(2, 7, 4)
    expected = hard.eval()(q, k, v)
    compiled = torch.compile(hard, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(q, k, v), expected)
