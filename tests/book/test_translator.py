"""Translate your own sentence: PyTorch's greedy decoding of one typed sentence, and the page's
JavaScript run of the same shipped weights against it.

The browser test loads the translator's kernel-free HTML (the markup a notebook output holds)
in Chromium beside the model's script file as the site build writes it, with every outside
request refused, and compares what the page decodes with ``translate_sentence``.
"""
import base64
import gzip

import numpy as np
import pytest
import torch
from browser import CHROMIUM, FLAGS, browser_test

from attention_core.book.plot import use_house_style
from attention_core.book.translator import (
    EXAMPLES,
    MAX_SOURCE,
    POSITIONS,
    live_translator,
    script_file,
    static_translator_html,
    tokenize,
    translate_sentence,
    translator_summary,
    weights_payload,
    weights_script,
)
from attention_core.worlds.pretrained import chapter4_corpus, load_model, shipped_record
from attention_core.worlds.translation import translate

# sentences of the corpus' grammar written by hand, not drawn: rare shapes among them
HANDWRITTEN = [
    "the 3rd of may , 1999", "four hundred and twelve thousand", "nine hundred thousand and one",
    "march 14th , 2021 ; seven hundred and five", "one", "ten", "one hundred", "eleven thousand",
    "twenty thousand and one", "the 31st of december , 2029", "january 1st , 1990",
    "nine hundred and ninety nine thousand , nine hundred and ninety nine",
    "the 29th of february , 2024", "sixty ; seventy ; eighty ; ninety",
    "five thousand and fifty ; the 2nd of june , 2005", "august 22nd , 2012 ; july 4th , 1996",
    "one hundred thousand", "three hundred and three thousand and three",
    "seventeen ; the 17th of october , 2017 ; seventeen thousand",
    "forty two thousand , one hundred and twelve",
]


@pytest.fixture(scope="module")
def shipped():
    data, _, _, test = chapter4_corpus()
    model, _, _ = load_model("bahdanau", data)
    return model, data, test


def test_tokenize_reads_typed_text_as_the_corpus_splits_it():
    assert tokenize("The 3rd of May, 1999") == ["the", "3rd", "of", "may", ",", "1999"]
    assert tokenize("  seven;eight  ") == ["seven", ";", "eight"]
    with pytest.raises(TypeError, match="text must be a str, got int"):
        tokenize(5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bahdanau", "transformer"])
def test_one_sentence_decodes_as_the_chapters_batched_translate(shipped, models, name):
    _, data, test = shipped
    model, pairs = models[name], test[:40]
    batched = translate(model, data, pairs)
    for pair, expected in zip(pairs, batched, strict=True):
        t = translate_sentence(model, data, " ".join(pair.source))
        assert t.output == expected and t.unknown == []
        steps, n_src = len(t.output) + 1, len(pair.source) + 1  # <eos> row and column
        assert t.weights.shape == ((steps, n_src) if name == "bahdanau" else (steps, 2, 4, n_src))
        torch.testing.assert_close(t.weights.sum(-1), torch.ones(t.weights.shape[:-1]))


def test_unknown_words_are_named_and_nothing_is_decoded(shipped):
    model, data, _ = shipped
    t = translate_sentence(model, data, "the 3rd of mai , 1999 ; hello mai")
    assert t.unknown == ["mai", "hello"] and t.output == [] and t.weights.shape == (0, 10)


@pytest.mark.parametrize("text, message", [
    ("  ", "text must contain at least one word, got an empty sentence"),
    ("one " * (MAX_SOURCE + 1),
     f"text must have at most {MAX_SOURCE} tokens, got {MAX_SOURCE + 1}"),
])
def test_bad_input_names_the_argument(shipped, text, message):
    model, data, _ = shipped
    with pytest.raises(ValueError, match=message):
        translate_sentence(model, data, text)


@pytest.mark.parametrize("name", ["bahdanau", "transformer"])
def test_the_page_gets_every_parameter_as_float32_in_order(name):
    record = shipped_record(name)
    payload = weights_payload(name, record["state_dict"], record["src_itos"], record["tgt_itos"], 4)
    flat = np.frombuffer(base64.b64decode(payload["float32"]), dtype="<f4")
    expected = dict(record["state_dict"])
    if name == "transformer":  # the positions the page adds, as the model's own buffer holds them
        model, _, _ = load_model(name, chapter4_corpus()[0])
        expected["positions"] = model.decoder.pos_encoding.P[0, :POSITIONS]
    assert payload["order"] == list(expected) and payload["heads"] == 4
    at = 0
    for key, tensor in expected.items():
        assert payload["shapes"][key] == list(tensor.shape)
        got = torch.from_numpy(flat[at:at + tensor.numel()].copy()).reshape(tensor.shape)
        assert torch.equal(got, tensor), key
        at += tensor.numel()
    assert at == len(flat)


def test_a_payload_needs_a_known_name_and_an_encoder_decoder():
    with pytest.raises(ValueError, match="name must be one of"):
        weights_payload("gpt", {}, [], [])
    with pytest.raises(ValueError, match=r"state_dict must be an encoder-decoder's "
                                         r"\(with decoder.dense.weight\)"):
        weights_payload("bahdanau", {"w": torch.zeros(2)}, [], [])


@pytest.mark.parametrize("name", ["bahdanau", "transformer"])
def test_jupyter_face_and_page_face_in_one_output(shipped, models, name):
    _, data, _ = shipped
    use_house_style()  # as every chapter does: the figure's labels are bilingual
    bundle = live_translator(models[name], data, name="t", weights=name)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert 'class="ac-translator"' in bundle["text/html"] and "acTranslator(" in bundle["text/html"]
    assert f'"model": "{name}"' in bundle["text/html"]
    assert bundle["text/plain"] == translator_summary("t", name)
    with pytest.raises(ValueError, match="weights must be one of"):
        static_translator_html("t", weights="gpt")


# --- in Chromium -----------------------------------------------------------------------------



@pytest.fixture(scope="module", params=["bahdanau", "transformer"])
def page(request, tmp_path_factory):
    """One page per shipped model: the translator's markup, and the model's script where the
    site build puts it."""
    from playwright.sync_api import sync_playwright

    name = request.param
    site = tmp_path_factory.mktemp(name)
    script = site / "_static" / script_file(name)
    script.parent.mkdir(parents=True)
    script.write_text(weights_script(name), encoding="utf-8")
    (site / "index.html").write_text("<!doctype html><meta charset=utf-8><body>"
                                     + static_translator_html("test", weights=name)
                                     + "</body>", encoding="utf-8")
    outside, errors, loaded = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        context.route("**/*", lambda r: (loaded.append(r.request.url), r.continue_())
                      if r.request.url.startswith("file:")
                      else (outside.append(r.request.url), r.abort()))
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((site / "index.html").as_uri())
        page.uid = page.locator(".ac-translator").get_attribute("id")
        page.loaded, page.script, page.model = loaded, script, name
        yield page
        assert outside == [] and errors == [], (outside, errors)
        browser.close()


@pytest.fixture(scope="module")
def models(shipped):
    _, data, _ = shipped
    return {name: load_model(name, data)[0] for name in ("bahdanau", "transformer")}


def _ready(page):  # after the first test's click: the model is there
    page.evaluate(f"() => window.acTranslators['{page.uid}'].load()")


def _drawn(page):
    """What the figure draws: rows of the Bahdanau heatmap, or the head view's lines."""
    if page.model == "bahdanau":
        return page.locator(".ac-translator-heatmap tr").count()
    return page.locator(".ac-translator-heatmap svg line").count()


@browser_test
def test_the_model_loads_only_when_the_reader_asks(page):
    assert not any("ac-models" in url for url in page.loaded)  # the page alone: no model yet
    assert page.locator(".ac-translator-output").inner_text() == ""
    page.locator('[data-control="source"]').fill(EXAMPLES[0] + " ")  # typing alone loads nothing
    assert "Press the button above, or Enter" in page.locator(".ac-translator-status").inner_text()
    assert not any("ac-models" in url for url in page.loaded)
    page.locator('[data-control="load"]').click()
    page.wait_for_function("() => document.querySelector('.ac-translator-output').textContent")
    assert sum("ac-models" in url for url in page.loaded) == 1
    assert page.locator(".ac-translator-output").inner_text() == "1999年5月3日"
    if page.model == "bahdanau":
        assert _drawn(page) == 1 + 7  # header + 6 tokens + <eos>
    else:
        assert _drawn(page) >= 7      # at least one line per decoder step
    size = page.script.stat().st_size
    packed = len(gzip.compress(page.script.read_bytes(), 6))
    print(f"\n{page.model} model file: {size / 1e6:.2f} MB, {packed / 1e6:.2f} MB gzipped")
    assert packed <= 3e6


@browser_test
def test_the_page_decodes_as_pytorch(page, shipped, models):
    """50 test-set sentences and 20 hand-written ones: the same tokens, weights within 1e-4."""
    _, data, test = shipped
    model = models[page.model]
    _ready(page)
    sentences = [" ".join(p.source) for p in test[:50]] + HANDWRITTEN
    results = page.evaluate(f"""texts => {{ const tr = window.acTranslators['{page.uid}'];
        const start = performance.now();
        const out = texts.map(t => tr.translate(t));
        return {{out: out, ms: (performance.now() - start) / texts.length}}; }}""", sentences)
    worst, right = 0.0, 0
    for text, got in zip(sentences, results["out"], strict=True):
        expected = translate_sentence(model, data, text)
        assert got["unknown"] == [] and got["output"] == expected.output, text
        weights = torch.tensor(got["weights"], dtype=torch.float64)
        assert weights.shape == expected.weights.shape, text
        worst = max(worst, float((weights - expected.weights.double()).abs().max()))
    for p, got in zip(test[:50], results["out"], strict=False):
        right += got["output"] == p.target
    print(f"\n{page.model}: {len(sentences)} sentences, largest weight difference {worst:.1e}, "
          f"{results['ms']:.1f} ms per translation in the page; {right} of 50 test sentences right")
    assert worst < 1e-4 and right >= 45


@browser_test
def test_typing_translates_and_unknown_words_are_named(page):
    _ready(page)
    box = page.locator('[data-control="source"]')
    box.fill("twenty thousand and one")
    assert page.locator(".ac-translator-output").inner_text() == "二万零一"
    box.fill("the 3rd of mai , 1999 ; hello")
    assert page.locator(".ac-translator-output").inner_text() == ""
    status = page.locator(".ac-translator-status").inner_text()
    assert "Not in the model's vocabulary: mai, hello" in status
    assert "模型词表中没有：mai、hello" in status
    assert _drawn(page) == 0
    box.fill("")
    assert "Type an English number or date" in page.locator(".ac-translator-status").inner_text()
    box.fill("one " * (MAX_SOURCE + 1))
    assert f"At most {MAX_SOURCE} tokens" in page.locator(".ac-translator-status").inner_text()
    box.fill("one ; two ; three ; four ; five")  # five items: more than training ever had
    assert "trained on one to four items; with 5 it may drop or repeat some" in \
        page.locator(".ac-translator-status").inner_text()
    page.locator("[data-example='1']").click()
    assert box.input_value() == EXAMPLES[1]
    assert page.locator(".ac-translator-output").inner_text() == "四十一万二千"


@browser_test
def test_the_head_view_shows_the_chosen_layer_and_head(page):
    if page.model != "transformer":
        pytest.skip("the Bahdanau decoder has one attention, drawn as a heatmap")
    _ready(page)
    page.locator('[data-control="source"]').fill("may 3rd , 1999")
    every = _drawn(page)
    page.locator('select[data-control="head"]').select_option(value="3")  # head 3: green
    one = page.locator(".ac-translator-heatmap svg line")
    assert 0 < one.count() < every
    assert {one.nth(i).get_attribute("stroke") for i in range(one.count())} == {"#2ca02c"}
    assert page.locator('select[data-control="layer"]').input_value() == "2"  # opens on layer 2
    page.locator('select[data-control="layer"]').select_option(value="1")
    assert page.locator('select[data-control="head"]').input_value() == "3"  # kept across layers
    page.locator('select[data-control="layer"]').select_option(value="2")
    page.locator('select[data-control="head"]').select_option(value="all")
    for mode, text in (("en", "all"), ("zh", "全部"), ("both", "all · 全部")):  # the site's modes
        page.evaluate(f"document.documentElement.setAttribute('data-book-lang', '{mode}')")
        assert page.locator('option[value="all"]').text_content() == text


@browser_test
def test_a_phone_can_use_it(page):
    page.set_viewport_size({"width": 390, "height": 800})
    _ready(page)
    page.locator('[data-control="source"]').fill(" ; ".join(HANDWRITTEN[10:13]))
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    if page.model == "bahdanau":  # the heatmap scrolls inside its own box
        heatmap = page.locator(".ac-translator-heatmap")
        assert heatmap.evaluate("e => e.scrollWidth > e.clientWidth")
    else:  # the head view's drawing shrinks to the width
        width = page.locator(".ac-translator-heatmap svg").evaluate(
            "e => e.getBoundingClientRect().width")
        assert width <= 390
    page.set_viewport_size({"width": 1366, "height": 900})
