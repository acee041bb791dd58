"""The attention playground: PyTorch's numbers, and the page's JavaScript against them.

The browser tests load the playground's kernel-free HTML (the very markup a notebook output
holds) in Chromium, with every outside request refused, and compare what the page computes and
shows with ``playground_attention`` on the same inputs. They need no built site; the site's own
copy in chapter 3 is checked in test_site.py.
"""
import random

import pytest
import torch
from browser import CHROMIUM, FLAGS, browser_test

from attention_core.attention import ScoredAttention
from attention_core.book.playground import (
    BETAS,
    EXTENT,
    SCORES,
    additive_score,
    attention_playground,
    playground_attention,
    static_playground_html,
)
from attention_core.book.plot import use_house_style
from attention_core.scoring import CosineScore, DotScore, ScaledDotScore

KEYS = [[-2.0, 1.0], [-0.5, 2.0], [1.0, 1.5], [2.0, -1.0], [0.0, -2.0]]
VALUES = [1.0, 2.0, 3.0, 4.0, 5.0]
QUERY = [1.0, 0.5]


@pytest.mark.parametrize("score", sorted(SCORES))
def test_beta_one_is_the_chapters_scored_attention(score):
    q, k, v = torch.randn(2, dtype=torch.float64), torch.randn(6, 2, dtype=torch.float64), \
        torch.randn(6, dtype=torch.float64)
    module = {"dot": DotScore(), "scaled_dot": ScaledDotScore(), "cosine": CosineScore(),
              "additive": additive_score(3)}[score]
    scores, weights, output = playground_attention(q, k, v, score=score, valid_len=4,
                                                   additive=module if score == "additive" else None)
    attention = ScoredAttention(module)
    expected = attention(q[None, None], k[None], v[None, :, None], torch.tensor([4]))
    torch.testing.assert_close(output, expected[0, 0, 0], rtol=0, atol=1e-15)
    torch.testing.assert_close(weights, attention.attention_weights[0, 0], rtol=0, atol=1e-15)
    assert scores.shape == (6,) and (weights[4:] == 0).all()


def test_beta_scales_the_scores_before_the_softmax():
    q, k, v = torch.tensor(QUERY), torch.tensor(KEYS), torch.tensor(VALUES)
    scores, uniform, _ = playground_attention(q, k, v, beta=0.0, valid_len=3)
    torch.testing.assert_close(uniform, torch.tensor([1 / 3] * 3 + [0, 0], dtype=torch.float64))
    _, sharp, _ = playground_attention(q, k, v, beta=200.0)
    assert sharp.argmax() == scores.argmax() and sharp.max() > 0.99
    _, weights, _ = playground_attention(q, k, v, beta=2.0)
    torch.testing.assert_close(weights, torch.softmax(2 * scores, 0))


def test_the_additive_score_is_fixed_and_leaves_the_global_generator_alone():
    torch.manual_seed(5)
    before = torch.random.get_rng_state()
    a, b = additive_score(0), additive_score(0)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.W_q.weight, additive_score(1).W_q.weight)


@pytest.mark.parametrize("kwargs, message", [
    ({"query": [1.0, 2.0, 3.0]}, r"query must be one point of the plane, shape \(2,\), got \(3,\)"),
    ({"keys": [[1.0, 2.0, 3.0]]}, r"keys must be \(n, 2\) with n >= 1, got \(1, 3\)"),
    ({"values": [1.0, 2.0]}, r"values must be \(n,\) = \(5,\), one per key, got \(2,\)"),
    ({"score": "general"}, r"score must be one of .*got 'general'"),
    ({"beta": -1.0}, r"beta must be >= 0, got -1.0"),
    ({"valid_len": 0}, r"valid_len must be in 1..5 \(the number of keys\), got 0"),
    ({"valid_len": 6}, r"valid_len must be in 1..5 \(the number of keys\), got 6"),
])
def test_bad_input_names_the_argument(kwargs, message):
    args = {"query": QUERY, "keys": KEYS, "values": VALUES, **kwargs}
    with pytest.raises(ValueError, match=message):
        playground_attention(args.pop("query"), args.pop("keys"), args.pop("values"), **args)


def test_the_figure_checks_where_its_controls_start():
    with pytest.raises(ValueError, match=r"beta must start at one of the slider's stops"):
        attention_playground(KEYS, VALUES, QUERY, name="t", beta=3.0)
    with pytest.raises(ValueError, match=r"keys and query must lie in \[-3, 3\]\^2"):
        attention_playground(KEYS, VALUES, [4.0, 0.0], name="t")


def test_jupyter_face_and_page_face_in_one_output():
    use_house_style()  # as every chapter does: the figure's labels are bilingual
    bundle = attention_playground(KEYS, VALUES, QUERY, name="t")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert 'class="ac-playground"' in bundle["text/html"] and "acPlayground(" in bundle["text/html"]
    assert bundle["text/plain"].startswith("Attention playground 't': 5 keys")


# --- in Chromium -----------------------------------------------------------------------------



@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    path = tmp_path_factory.mktemp("playground") / "index.html"
    path.write_text("<!doctype html><meta charset=utf-8><body>"
                    + static_playground_html(KEYS, VALUES, QUERY, "test", seed=0)
                    + "</body>", encoding="utf-8")
    outside, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                      else (outside.append(r.request.url), r.abort()))
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.uid = page.locator(".ac-playground").get_attribute("id")
        yield page
        assert outside == [] and errors == [], (outside, errors)
        browser.close()


def _js(page, expression):
    return page.evaluate(
        f"() => {{ const pg = window.acPlaygrounds['{page.uid}']; return {expression}; }}")


def _torch(state):
    """What PyTorch computes for a page's state (the page's valid is a count of keys)."""
    scores, weights, output = playground_attention(
        state["query"], state["keys"], state["values"], score=state["score"], beta=state["beta"],
        valid_len=state["valid"], additive=additive_score(0))
    return scores, weights, output


def _gap(shown, state):
    scores, weights, output = _torch(state)
    return max((torch.tensor(shown["scores"], dtype=torch.float64) - scores).abs().max().item(),
               (torch.tensor(shown["weights"], dtype=torch.float64) - weights).abs().max().item(),
               abs(shown["output"] - output.item()))


@browser_test
def test_the_page_computes_what_pytorch_computes_on_random_configurations(page):
    rng = random.Random(0)
    worst = 0.0
    for _ in range(300):
        n = rng.randint(1, 8)
        state = {"keys": [[rng.uniform(-EXTENT, EXTENT) for _ in range(2)] for _ in range(n)],
                 "values": [rng.uniform(-5, 5) for _ in range(n)],
                 "query": [rng.uniform(-EXTENT, EXTENT) for _ in range(2)],
                 "score": rng.choice(sorted(SCORES)), "beta": rng.choice(BETAS + (100.0,)),
                 "valid": rng.randint(1, n)}
        shown = page.evaluate(f"(c) => window.acPlaygrounds['{page.uid}'].compute(c)", state)
        worst = max(worst, _gap(shown, state))
    print(f"largest difference between the page and PyTorch over 300 configurations: {worst:.1e}")
    assert worst < 1e-12


@browser_test
def test_dragging_the_query_recomputes_and_the_table_shows_it(page):
    before = _js(page, "pg.state()")
    box = page.locator("[data-point=q]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 80, y + 40, steps=5)
    page.mouse.up()
    state, shown = _js(page, "pg.state()"), _js(page, "pg.shown()")
    assert state["query"][0] < before["query"][0] - 1
    assert state["query"][1] < before["query"][1] - 0.5
    assert _gap(shown, state) < 1e-12
    rows = page.locator(".ac-playground tbody tr")
    for i in range(len(KEYS)):
        cells = rows.nth(i).locator("td")
        assert cells.nth(2).inner_text() == f"{shown['scores'][i]:.3f}"
        assert cells.nth(3).inner_text().strip() == f"{shown['weights'][i]:.3f}"
    assert page.locator("[data-show=output]").inner_text() == f"{shown['output']:.3f}"


@browser_test
def test_controls_and_arrow_keys_recompute(page):
    page.select_option("[data-control=score]", "cosine")
    page.locator("[data-control=beta]").evaluate(
        f"(el) => {{ el.value = {BETAS.index(8.0)}; el.dispatchEvent(new Event('input')); }}")
    page.locator("[data-control=valid]").evaluate(
        "(el) => { el.value = 3; el.dispatchEvent(new Event('input')); }")
    page.locator("[data-point=k1]").focus()
    before = _js(page, "pg.state()")
    page.keyboard.press("ArrowRight")
    state, shown = _js(page, "pg.state()"), _js(page, "pg.shown()")
    assert (state["score"], state["beta"], state["valid"]) == ("cosine", 8.0, 3)
    assert state["keys"][1][0] == pytest.approx(before["keys"][1][0] + 0.1)
    assert shown["weights"][3:] == [0, 0] and _gap(shown, state) < 1e-12
    assert page.locator("[data-show=beta]").inner_text() == "8"


@browser_test
def test_fits_a_phone(page):
    page.set_viewport_size({"width": 390, "height": 800})
    overflow = page.evaluate("""() => [...document.querySelectorAll('.ac-playground *')]
        .filter(el => el.getBoundingClientRect().right > 390).length""")
    page.set_viewport_size({"width": 1366, "height": 900})
    assert overflow == 0


@browser_test
def test_reset_brings_back_the_first_state(page):
    page.locator("[data-point=q]").focus()
    page.keyboard.press("ArrowUp")
    page.select_option("[data-control=score]", "additive")
    page.click("[data-control=reset]")
    state = _js(page, "pg.state()")
    assert state == {"keys": KEYS, "values": VALUES, "query": QUERY, "score": "dot", "beta": 1,
                     "valid": len(KEYS)}
    assert page.locator("[data-control=score]").input_value() == "dot"
    assert page.locator("[data-show=query]").inner_text() == "(1.00, 0.50)"
    assert _gap(_js(page, "pg.shown()"), state) < 1e-12
