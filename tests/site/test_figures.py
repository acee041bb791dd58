"""The interactive figures on the site, without a kernel: precomputed sliders, the attention
playground and the translators, each in the reader's language and equal to PyTorch."""
import json
import re

import pytest
from browser import needs_chromium
from built_site import CHAPTER, HTML, Visit, needs_site

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    needs_chromium,
    needs_site,
]


def _english(markup):
    """The text an English reader sees of a slider's value: its English span, or the number."""
    markup = re.sub(r'<span class="lang-(zh|sep)"[^>]*>.*?</span>', "", markup)
    return re.sub(r"<[^>]+>", "", markup)


def test_kernel_free_sliders_work_and_no_dead_widget(browser):
    v = Visit(browser, CHAPTER)
    assert v.page.locator(".jupyter-widgets, .widget-view, [data-jupyter-widgets-cdn]").count() == 0
    figures = v.page.locator(".ac-slider-figure")
    assert figures.count() >= 1
    for n in range(figures.count()):
        fig = figures.nth(n)
        fig.scroll_into_view_if_needed()
        assert fig.is_visible()
        data = json.loads(fig.locator("script[id$='-data']").inner_text())
        img = fig.locator("img")
        # move the first slider to each end: the frame and the readout follow
        slider, readout = fig.locator("input[type=range]").first, fig.locator("output").first
        for end in (0, data["sizes"][0] - 1):
            before = img.get_attribute("src")
            slider.evaluate(
                f"(el) => {{ el.value = {end}; el.dispatchEvent(new Event('input')); }}")
            assert readout.inner_text() == _english(data["outputs"][0][end])
            assert img.get_attribute("src").removeprefix("data:image/png;base64,") in data["frames"]
            if before != img.get_attribute("src"):
                break
        else:
            pytest.fail("moving the slider never changed the frame")
    v.context.close()


def test_slider_values_and_image_descriptions_in_both_languages(browser):
    """Chapter 1's goal slider names its values (none / read / ...): in 中文 mode they are
    Chinese, and every slider frame's alt text describes it in Chinese only, after a move too
    (the page holds both languages: lang-switch.js shows the reader's)."""
    v = Visit(browser, "chapters/01_attention_cues.html", locale="zh-CN")
    figures = v.page.locator(".ac-slider-figure")
    words = 0
    for n in range(figures.count()):
        fig = figures.nth(n)
        fig.scroll_into_view_if_needed()
        fig.locator("input[type=range]").first.focus()
        for moved in (False, True):
            alt = fig.locator("img").get_attribute("alt")
            assert re.search(r"[\u4e00-\u9fff]", alt) and " · " not in alt, (moved, alt)
            v.page.keyboard.press("ArrowRight")
        for readout in fig.locator("output").all():
            text = readout.inner_text()
            if re.search(r"[A-Za-z]{2,}", text) or re.search(r"[\u4e00-\u9fff]", text):
                words += 1
                assert re.fullmatch(r"[\u4e00-\u9fff]+", text), \
                    f"slider value {text!r} in 中文 mode"
    assert words >= 1, "chapter 1's goal slider shows no named value"
    v.context.close()


def test_chapter_3_playground_computes_on_the_page(browser):
    """The attention playground runs from the page itself: dragging the query changes what it
    shows, to PyTorch's numbers for the new position, and in 中文 mode it speaks Chinese."""
    from attention_core.book.playground import additive_score, playground_attention

    v = Visit(browser, "chapters/03_attention_scoring.html", locale="zh-CN")
    figure = v.page.locator(".ac-playground")
    assert figure.count() == 1
    figure.scroll_into_view_if_needed()
    pg = f"window.acPlaygrounds['{figure.get_attribute('id')}']"
    before = v.page.evaluate(f"() => {pg}.shown()")
    box = figure.locator("[data-point=q]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    v.page.mouse.move(x, y)
    v.page.mouse.down()
    v.page.mouse.move(x + 60, y - 30, steps=4)
    v.page.mouse.up()
    state, shown = v.page.evaluate(f"() => [{pg}.state(), {pg}.shown()]")
    assert shown["weights"] != before["weights"]
    _, weights, output = playground_attention(
        state["query"], state["keys"], state["values"], score=state["score"], beta=state["beta"],
        valid_len=state["valid"], additive=additive_score(0))
    assert max(abs(a - b) for a, b in zip(shown["weights"], weights.tolist(), strict=True)) < 1e-12
    assert abs(shown["output"] - output.item()) < 1e-12
    assert figure.locator("select option").first.text_content() == "点积"
    assert figure.locator("th .lang-zh").first.is_visible()
    assert not figure.locator("th .lang-en").first.is_visible()
    assert v.outside == [] and v.errors == []
    v.context.close()


@pytest.mark.parametrize("chapter, model", [("04_seq2seq_attention", "bahdanau"),
                                           ("08_transformer", "transformer")])
def test_the_translators_run_the_shipped_models_on_the_page(browser, chapter, model):
    """Chapters 4 and 8 load their shipped weights from the site's _static only when asked,
    then decode a typed sentence to PyTorch's tokens; in 中文 mode they speak Chinese."""
    from attention_core.book.translator import translate_sentence
    from attention_core.worlds.pretrained import chapter4_corpus, load_model

    v = Visit(browser, f"chapters/{chapter}.html", locale="zh-CN")
    requested = []
    v.page.on("request", lambda r: requested.append(r.url))
    figure = v.page.locator(".ac-translator")
    assert figure.count() == 1
    assert (HTML / "_static" / "ac-models" / f"{model}.js").exists()
    figure.scroll_into_view_if_needed()
    assert not any("ac-models" in url for url in requested)  # not before the reader asks
    figure.locator('[data-control="load"]').click()
    box = figure.locator('[data-control="source"]')
    v.page.wait_for_function("() => document.querySelector('.ac-translator-output').textContent")
    box.fill("august 22nd , 2012 ; three hundred and three thousand and three")
    data, _, _, _ = chapter4_corpus()
    shipped, _, _ = load_model(model, data)
    expected = translate_sentence(shipped, data, box.input_value())
    assert figure.locator(".ac-translator-output").inner_text() == "".join(expected.output)
    drawn = figure.locator(".ac-translator-heatmap tr" if model == "bahdanau"
                           else ".ac-translator-heatmap svg line")
    assert drawn.count() >= len(expected.weights)
    assert figure.locator(".ac-translator-status .lang-zh").is_visible()
    assert not figure.locator(".ac-translator-status .lang-en").is_visible()
    assert sum(f"ac-models/{model}.js" in url for url in requested) == 1
    assert v.outside == [] and v.errors == []
    v.context.close()


def test_the_widgets_keep_the_keyboards_focus(browser):
    """Chapter 8's head-view menus (redrawn on every change), a slider and a playground point
    keep the focus while the keyboard changes them; chapter 1's frames stay described."""
    v = Visit(browser, "chapters/08_transformer.html")
    figure = v.page.locator(".ac-translator")
    figure.scroll_into_view_if_needed()
    figure.locator('[data-control="load"]').click()
    v.page.wait_for_function("() => document.querySelector('.ac-translator-output').textContent")
    for key, arrow in (("layer", "ArrowUp"), ("head", "ArrowDown")):  # layer opens on the last
        menu = figure.locator(f'select[data-control="{key}"]')
        before = menu.input_value()
        menu.focus()
        v.page.keyboard.press(arrow)
        assert figure.locator(f'select[data-control="{key}"]').input_value() != before
        assert v.page.evaluate("document.activeElement.dataset.control") == key
        v.page.keyboard.press(arrow)  # and again: the redrawn menu answers the next key too
    assert v.errors == []
    v.context.close()

    v = Visit(browser, "chapters/01_attention_cues.html")
    slider = v.page.locator(".ac-slider-figure input[type=range]").first
    slider.focus()
    before = slider.input_value()
    v.page.keyboard.press("ArrowRight")
    assert slider.input_value() != before
    assert v.page.evaluate("document.activeElement.type") == "range"
    v.context.close()

    v = Visit(browser, "chapters/03_attention_scoring.html")
    point = v.page.locator(".ac-playground-plane [data-point=k0]")
    point.focus()
    before = point.locator("circle").get_attribute("cx")
    v.page.keyboard.press("ArrowRight")
    assert point.locator("circle").get_attribute("cx") != before
    assert v.page.evaluate("document.activeElement.dataset.point") == "k0"
    v.context.close()
