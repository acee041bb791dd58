"""book.widgets: one figure with a live face (ipywidgets) and a kernel-free face (precomputed
frames, plain HTML sliders) that shows the reader's language."""
import base64
import io
import json
import re

import matplotlib
import numpy as np
import pytest
from PIL import Image

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from attention_core.book.bilingual import spans  # noqa: E402
from attention_core.book.widgets import (  # noqa: E402
    PIXEL_RATIO,
    SLIDER_JS,
    Slider,
    palette_png,
    png_size,
    render_png,
    slider_figure,
)


def _data(html):
    """The JSON a kernel-free figure carries: frames, sizes, outputs, alt texts."""
    return json.loads(re.search(r'-data">(.*?)</script>', html, re.S).group(1)
                      .replace("<\\/", "</"))


def test_slider_figure_has_live_and_kernel_free_faces():
    def draw(fig, a):
        fig.subplots().plot([0, 1], [0, a])
    fig = slider_figure(draw, Slider([0.5, 1.0, 2.0], "slope", "斜率", start=1), name="t")
    bundle = fig._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    html = bundle["text/html"]
    assert html.count("iVBORw0KGgo") == 4  # the first frame in <img>, all three in the data
    assert 'max="2"' in html and 'value="1"' in html and "斜率" in html
    assert "http" not in html  # nothing loaded from elsewhere
    assert bundle["text/plain"].startswith("Interactive figure 't'")
    slider, image = fig.widget.children
    first = image.value
    slider.value = 2.0  # the live face redraws
    assert image.value != first
    with pytest.raises(ValueError, match="start must index the values"):
        Slider([1.0], "a", "甲", start=3)
    with pytest.raises(ValueError, match="at least one value"):
        Slider([], "a", "甲")
    with pytest.raises(TypeError, match="needs one or more Slider"):
        slider_figure(draw, [1.0, 2.0], name="t")


def test_two_sliders_precompute_the_grid_in_row_major_order():
    def draw(fig, a, b):
        fig.subplots().plot([0, 1], [a, b])
    fig = slider_figure(draw, Slider([1, 2, 3], "a", "甲", start=2),
                        Slider([0, 5], "b", "乙", start=1), name="two")
    html = fig._repr_mimebundle_()["text/html"]
    data = _data(html)
    assert data["sizes"] == [3, 2] and len(data["frames"]) == 6
    # the first <img> is the frame for (a=3, b=5): index 2 * 2 + 1 = 5
    assert f'src="data:image/png;base64,{data["frames"][5]}"' in html
    assert len(fig.widget.children) == 3  # two sliders and the image


def test_slider_script_ships_as_a_file_and_is_inlined():
    """The JavaScript lives in attention_core/book/slider.js and each figure inlines it (a
    notebook viewer has no site to load it from)."""
    assert "function acSliderFigure(uid)" in SLIDER_JS
    html = slider_figure(lambda fig, a: fig.subplots().plot([0, a]), Slider([1, 2], "a", "甲"),
                         name="js")._repr_mimebundle_()["text/html"]
    assert SLIDER_JS in html and 'acSliderFigure("acfig-' in html


def test_slider_values_named_in_both_languages_and_frames_at_twice_the_pixels():
    goal = Slider(["none", "read"], "goal", "目标", fmt="{}", labels_zh=["无", "阅读"])
    fig = slider_figure(lambda f, g: f.add_subplot().set_title(g), goal, name="goals",
                        figsize=(2.0, 1.5))
    data = _data(fig.static_html)
    assert data["outputs"][0][1].count('lang="zh-Hans">阅读<') == 1
    assert data["alts"]["1"] == "goal = read · 目标 = 阅读"
    assert 'alt="goal = none · 目标 = 无"' in fig.static_html
    assert "none · 无" in fig.summary and "read · 阅读" in fig.summary
    width, height = png_size(base64.b64decode(data["frames"][0]))
    shown = re.search(r'<img [^>]*width="(\d+)" height="(\d+)"', fig.static_html)
    assert (width // PIXEL_RATIO, height // PIXEL_RATIO) == tuple(map(int, shown.groups()))
    with pytest.raises(ValueError, match="labels_zh of slider 'goal' needs one name per value"):
        Slider(["none", "read"], "goal", "目标", fmt="{}", labels_zh=["无"])


def test_labels_and_note_carry_the_separator_the_page_shows():
    """In the both-languages mode the page shows "bandwidth σ · 带宽 σ": the markup holds the
    separator, which the site shows only in that mode."""
    html = slider_figure(lambda fig, a: fig.subplots().plot([0, a]),
                         Slider([1, 2], "bandwidth σ", "带宽 σ"), name="sep").static_html
    uid = re.search(r'id="(acfig-[0-9a-f]+)"', html).group(1)
    assert f'<label for="{uid}-in0">{spans("bandwidth σ", "带宽 σ")}</label>' in html
    note = re.search(r'<p class="ac-slider-note">(.*?)</p>', html).group(1)
    assert note.count('class="lang-sep"') == 1
    assert html.count('class="lang-sep"') == 2  # the label and the note; values are numbers


def test_frames_are_palette_pngs_a_fraction_of_the_size_with_the_same_picture():
    def draw(fig):
        ax = fig.subplots()
        ax.plot([0, 1, 2], [0, 1, 0], label="line")
        ax.imshow(np.linspace(0, 1, 64).reshape(8, 8), extent=(0, 2, 0, 1), alpha=0.5)
        ax.legend()

    frame = render_png(draw, [], (4, 3))
    image = Image.open(io.BytesIO(frame))
    assert image.mode == "P"                                         # a palette, not RGBA
    fig = plt.figure(figsize=(4, 3))
    draw(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=160, bbox_inches="tight")
    plt.close(fig)
    rgba = buf.getvalue()
    assert len(palette_png(rgba)) < len(rgba) / 2
    original = np.asarray(Image.open(io.BytesIO(rgba)).convert("RGB"), dtype=float)
    quantized = np.asarray(image.convert("RGB"), dtype=float)
    assert original.shape == quantized.shape
    assert np.abs(original - quantized).mean() < 2                   # on a 0-255 scale
    assert (quantized[0, 0] == 255).all()                            # the background stays white
