"""The shapes world and the Vision Transformer (issue 25's groundwork for chapter 10)."""
import pytest
import torch
from torch import nn

from attention_core.transformer import keep_attention_weights
from attention_core.vision import PatchEmbedding, VisionTransformer, patchify
from attention_core.worlds.shapes import (COLOURS, RELATIONS, SHAPES, cell_shares, left_of,
                                          make_scenes, render)


# ---- the shapes world ------------------------------------------------------------------
def test_scenes_are_the_same_for_the_same_seed_and_differ_for_another():
    a, b = (make_scenes(20, torch.Generator().manual_seed(0)) for _ in range(2))
    c = make_scenes(20, torch.Generator().manual_seed(1))
    assert torch.equal(a.images, b.images) and a.captions == b.captions
    assert not torch.equal(a.images, c.images)


def test_every_caption_says_what_the_scene_holds():
    scenes = make_scenes(200, torch.Generator().manual_seed(0))
    names = list(COLOURS)
    assert scenes.images.shape == (200, 3, 48, 48) and scenes.masks.shape == (200, 2, 48, 48)
    for i, words in enumerate(scenes.captions):
        (r0, c0), (r1, c1) = scenes.centres[i].tolist()
        relation = " ".join(words[3:-3])
        assert words[:3] == ["a", names[scenes.colours[i, 0]], SHAPES[scenes.shapes[i, 0]]]
        assert words[-3:] == ["a", names[scenes.colours[i, 1]], SHAPES[scenes.shapes[i, 1]]]
        assert scenes.colours[i, 0] < scenes.colours[i, 1]   # the subject: the first colour
        # the relation is along the axis on which the objects are further apart, by far
        far_rows = abs(r0 - r1) > abs(c0 - c1)
        expected = (("above" if r0 < r1 else "below") if far_rows
                    else ("left of" if c0 < c1 else "right of"))
        assert relation == expected
        assert max(abs(r0 - r1), abs(c0 - c1)) >= 1.5 * min(abs(r0 - r1), abs(c0 - c1))
    assert {" ".join(w[3:-3]) for w in scenes.captions} == set(RELATIONS)


def test_objects_do_not_touch_and_each_pixel_has_its_objects_colour():
    scenes = make_scenes(100, torch.Generator().manual_seed(2))
    assert not (scenes.masks[:, 0] & scenes.masks[:, 1]).any()
    palette = torch.tensor(list(COLOURS.values()))
    for k in range(2):
        for i in range(len(scenes)):
            pixels = scenes.images[i].permute(1, 2, 0)[scenes.masks[i, k]]     # (m, 3)
            assert len(pixels) > 0 and torch.equal(pixels, palette[scenes.colours[i, k]].expand_as(pixels))
    background = ~(scenes.masks.any(1))                                        # (N, H, W)
    assert torch.all(scenes.images.permute(0, 2, 3, 1)[background] == 0.96)


def test_shapes_have_the_areas_of_their_definitions():
    centres = torch.tensor([[[20, 20]], [[20, 20]], [[20, 20]]])
    _, masks = render(torch.zeros(3, 1, dtype=torch.long), torch.arange(3)[:, None], centres,
                      size=48, radius=6)
    circle, square, triangle = masks[:, 0].sum((-1, -2)).tolist()
    # an object centred on a pixel covers the pixels at integer offsets (dy, dx) inside it
    offsets = range(-6, 7)
    assert square == 13 * 13
    assert circle == sum(dy * dy + dx * dx <= 36 for dy in offsets for dx in offsets) == 113
    assert triangle == sum(2 * abs(dx) <= dy + 6 for dy in offsets for dx in offsets) == 85


def test_fixed_colours_and_horizontal_relations_give_the_left_of_question():
    scenes = make_scenes(300, torch.Generator().manual_seed(3), colours=("red", "blue"),
                         relations=("left of", "right of"))
    names = list(COLOURS)
    assert all(w[1] == "red" and w[-2] == "blue" for w in scenes.captions)
    assert torch.equal(left_of(scenes), torch.tensor([w[3] == "left" for w in scenes.captions]))
    assert 0.35 < left_of(scenes).float().mean() < 0.65            # both answers are common
    assert scenes.colours[:, 0].eq(names.index("red")).all()


def test_indexing_keeps_the_scenes_together():
    scenes = make_scenes(10, torch.Generator().manual_seed(0))
    part = scenes[[7, 2]]
    assert part.captions == [scenes.captions[7], scenes.captions[2]]
    assert torch.equal(part.images[1], scenes.images[2]) and len(scenes[3:6]) == 3


def test_cell_shares_sum_to_the_objects_area():
    scenes = make_scenes(50, torch.Generator().manual_seed(4))
    shares = cell_shares(scenes.masks, 6)                           # cells of 8 x 8 pixels
    assert shares.shape == (50, 2, 36)
    torch.testing.assert_close(shares.sum(-1) * 64, scenes.masks.sum((-1, -2)).float())
    assert shares.max() <= 1
    with pytest.raises(ValueError, match="grid=5 must divide the image size 48"):
        cell_shares(scenes.masks, 5)


@pytest.mark.parametrize("kwargs, message", [
    ({"n": 0}, "n must be a positive int"),
    ({"n": 2, "size": 30, "radius": 6}, "size=30 leaves no room"),
    ({"n": 2, "colours": ("red", "red")}, "colours must be two different names"),
    ({"n": 2, "colours": ("red", "purple")}, "colours must be two different names"),
    ({"n": 2, "relations": ("beside",)}, "relations must be a non-empty subset"),
])
def test_bad_scene_requests_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_scenes(**kwargs)


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
from attention_core.captioning import (Captioner, GridEncoder,  # noqa: E402
                                       doubly_stochastic_penalty)
from attention_core.decoding import greedy_decode  # noqa: E402
from attention_core.worlds.shapes import caption_loss  # noqa: E402


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


def test_caption_loss_adds_the_penalty_and_trains_every_part():
    model = _captioner().train()
    captions, lens = torch.randint(4, 12, (3, 6)), torch.tensor([6, 4, 5])
    images = torch.rand(3, 3, 48, 48)
    loss, ce = caption_loss(model, images, captions, lens, bos=1, penalty=0.5)
    reg = doubly_stochastic_penalty(model.decoder.attention_weights, lens)
    torch.testing.assert_close(loss, ce + 0.5 * reg)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


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


# ---- the world's training and measuring helpers ----------------------------------------
from attention_core.worlds.shapes import (attention_on_objects, caption_tensors,  # noqa: E402
                                          describe, train_captioner, train_captioners,
                                          train_classifier)
from attention_core.worlds.translation import Vocab  # noqa: E402


def test_caption_tensors_end_each_caption_with_eos_at_its_length():
    scenes = make_scenes(20, torch.Generator().manual_seed(0), size=32, radius=4)
    vocab = Vocab(scenes.captions)
    tokens, lens = caption_tensors(scenes, vocab)
    assert lens.tolist() == [len(c) + 1 for c in scenes.captions]
    assert all(tokens[i, n - 1] == vocab.eos for i, n in enumerate(lens.tolist()))
    assert [vocab.decode(row) for row in tokens.tolist()] == scenes.captions


def test_attention_on_objects_is_one_when_every_naming_word_looks_at_its_object():
    scenes = make_scenes(30, torch.Generator().manual_seed(1), size=32, radius=4)
    touched = cell_shares(scenes.masks, 4) > 0                          # (N, 2, 16)
    weights = torch.full((30, 9, 16), 1 / 16)                          # evenly spread
    on, chance = attention_on_objects(weights, scenes, 4)
    assert abs(on - chance) < 1e-6 and 0 < chance < 1
    for b, words in enumerate(scenes.captions):                        # all on the named object
        for k, steps in ((0, (1, 2)), (1, (len(words) - 2, len(words) - 1))):
            for t in steps:
                weights[b, t] = touched[b, k] / touched[b, k].sum()
    assert abs(attention_on_objects(weights, scenes, 4)[0] - 1) < 1e-6


def test_train_captioner_is_repeatable_and_lowers_the_loss():
    scenes = make_scenes(96, torch.Generator().manual_seed(2), size=32, radius=4)
    vocab = Vocab(scenes.captions)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = Captioner(len(vocab), 8, 16, image_size=32)
        history = train_captioner(model, scenes, vocab, epochs=3, batch_size=32, lr=0.01,
                                  penalty=0.5, generator=torch.Generator().manual_seed(0),
                                  progress=False)
        runs.append((history, model.state_dict()))
    (h1, s1), (h2, s2) = runs
    assert h1 == h2 and all(torch.equal(s1[k], s2[k]) for k in s1)
    assert len(h1) == 3 and h1[-1] < h1[0]
    captions, weights = describe(model, scenes[:5], vocab)
    assert len(captions) == 5 and weights.shape[0] == 5 and weights.shape[2] == 16
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:2]))


def test_captioners_side_by_side_compute_what_each_computes_alone_on_one_thread():
    """A soft and a hard captioner (whose draws come from the global generator) in two worker
    threads: the same histories and weights, bit for bit, as one after another on one thread."""
    scenes = make_scenes(96, torch.Generator().manual_seed(2), size=32, radius=4)
    vocab = Vocab(scenes.captions)

    def pair():
        torch.manual_seed(0)
        soft = Captioner(len(vocab), 8, 16, image_size=32)
        hard = Captioner(len(vocab), 8, 16, image_size=32, hard=True)
        hard.load_state_dict(soft.state_dict())
        return soft, hard

    alone, together = pair(), pair()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(1)
        histories = [train_captioner(m, scenes, vocab, epochs=2, batch_size=32,
                                     generator=torch.Generator().manual_seed(0), progress=False)
                     for m in alone]
    finally:
        torch.set_num_threads(threads)
    torch.manual_seed(1)
    assert train_captioners(together, scenes, vocab, seed=0, epochs=2, batch_size=32,
                            workers=2, progress=False) == histories
    for a, b in zip(alone, together):
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
            assert torch.equal(x, y), name
    assert histories[0] != histories[1]
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        train_captioners(together, scenes, vocab, epochs=0)


def test_train_classifier_is_repeatable_lowers_the_loss_and_checks_its_input():
    scenes = make_scenes(128, torch.Generator().manual_seed(3), size=32, radius=3,
                         colours=("red", "blue"), relations=("left of", "right of"))
    labels = left_of(scenes).long()
    histories = []
    for _ in range(2):
        torch.manual_seed(0)
        model = VisionTransformer(32, 8, 16, 32, 2, 1, 2)
        histories.append(train_classifier(model, scenes.images, labels, epochs=3, batch_size=32,
                                          warmup=2, generator=torch.Generator().manual_seed(0),
                                          progress=False))
    assert histories[0] == histories[1] and histories[0][-1] < histories[0][0]
    with pytest.raises(ValueError, match=r"images \(128, 3, 32, 32\) and labels \(5,\)"):
        train_classifier(model, scenes.images, labels[:5], progress=False)


# ---- hard attention ----------------------------------------------------------------------
from attention_core.attention import AdditiveAttention  # noqa: E402
from attention_core.captioning import SampledAttention  # noqa: E402
from attention_core.decoding import decoder_input  # noqa: E402
from attention_core.worlds.translation import masked_cross_entropy  # noqa: E402


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


def test_only_the_reinforce_term_teaches_a_hard_captioner_where_to_look():
    torch.manual_seed(0)
    model = Captioner(12, embed_size=8, num_hiddens=16, hard=True).train()
    captions, lens = torch.randint(4, 12, (3, 6)), torch.tensor([6, 4, 5])
    images = torch.rand(3, 3, 48, 48)
    w_v = model.decoder.attention.w_v.weight
    ce = masked_cross_entropy(model(images, decoder_input(captions, 1)), captions, lens)
    assert torch.autograd.grad(ce, [w_v], allow_unused=True) == (None,)     # a draw: no gradient
    loss, _ = caption_loss(model, images, captions, lens, bos=1, penalty=0.0)
    assert model.decoder.log_probs.shape == (3, 6)
    loss.backward()
    assert torch.count_nonzero(w_v.grad) > 0                                # REINFORCE: a gradient


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


def test_every_drawn_scene_fits_the_placement_rule_and_the_rule_refuses_close_objects():
    from attention_core.worlds.shapes import placement_fits
    scenes = make_scenes(200, torch.Generator().manual_seed(5), size=32, radius=4)
    for (c0, c1), words in zip(scenes.centres.tolist(), scenes.captions):
        relation = " ".join(words[3:-3])
        assert placement_fits(c0, c1, 4, (relation,))
        assert not placement_fits(c0, c1, 4, tuple(r for r in RELATIONS if r != relation))
    assert not placement_fits((10, 10), (10, 21), 4)      # 11 apart: under 2 radius + 4 = 12
    assert placement_fits((10, 10), (10, 22), 4, ("left of",))
    assert not placement_fits((10, 10), (19, 22), 4)      # 12 against 9: not 1.5 times as far
