"""The shapes task of chapter 10: scenes and their captions, where the objects lie, and the
training of captioners and classifiers on them."""
import pytest
import torch

from attention_core.captioning import Captioner, doubly_stochastic_penalty
from attention_core.decoding import decoder_input
from attention_core.vision import VisionTransformer
from attention_core.worlds.shapes import (
    COLOURS,
    RELATIONS,
    SHAPES,
    attention_on_objects,
    caption_loss,
    caption_tensors,
    cell_shares,
    describe,
    left_of,
    make_scenes,
    placement_fits,
    render,
    train_captioner,
    train_captioners,
    train_classifier,
)
from attention_core.worlds.translation import masked_cross_entropy
from attention_core.worlds.vocab import Vocab


def _captioner():
    torch.manual_seed(0)
    return Captioner(12, embed_size=8, num_hiddens=16).eval()


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
            colour = palette[scenes.colours[i, k]].expand_as(pixels)
            assert len(pixels) > 0 and torch.equal(pixels, colour)
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


def test_caption_loss_adds_the_penalty_and_trains_every_part():
    model = _captioner().train()
    captions, lens = torch.randint(4, 12, (3, 6)), torch.tensor([6, 4, 5])
    images = torch.rand(3, 3, 48, 48)
    loss, ce = caption_loss(model, images, captions, lens, bos=1, penalty=0.5)
    reg = doubly_stochastic_penalty(model.decoder.attention_weights, lens)
    torch.testing.assert_close(loss, ce + 0.5 * reg)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


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


@pytest.mark.slow
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
    for a, b in zip(alone, together, strict=True):
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
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


def test_every_drawn_scene_fits_the_placement_rule_and_the_rule_refuses_close_objects():
    scenes = make_scenes(200, torch.Generator().manual_seed(5), size=32, radius=4)
    for (c0, c1), words in zip(scenes.centres.tolist(), scenes.captions, strict=True):
        relation = " ".join(words[3:-3])
        assert placement_fits(c0, c1, 4, (relation,))
        assert not placement_fits(c0, c1, 4, tuple(r for r in RELATIONS if r != relation))
    assert not placement_fits((10, 10), (10, 21), 4)      # 11 apart: under 2 radius + 4 = 12
    assert placement_fits((10, 10), (10, 22), 4, ("left of",))
    assert not placement_fits((10, 10), (19, 22), 4)      # 12 against 9: not 1.5 times as far
