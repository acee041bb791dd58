import time
import warnings

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

import attention_core as ac  # noqa: E402
from attention_core.book.plot import show_heatmaps, use_house_style  # noqa: E402
from attention_core.runtime import get_device  # noqa: E402
from attention_core.book.source import show_source  # noqa: E402
from attention_core.book.timing import best_times  # noqa: E402
from attention_core.book.widgets import SLIDER_JS, Slider, slider_figure  # noqa: E402


def test_chinese_text_renders_without_missing_glyphs(tmp_path):
    use_house_style()
    fig, ax = plt.subplots()
    ax.set_title("注意力汇聚 · attention pooling：键、查询、值")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s)" is a UserWarning
        fig.savefig(tmp_path / "zh.png")
    plt.close(fig)


@pytest.mark.parametrize("shape, panels", [((3, 4), 1), ((2, 3, 4), 2), ((2, 3, 3, 4), 6)])
def test_show_heatmaps_grid(shape, panels):
    fig = show_heatmaps(torch.rand(shape), "keys", "queries", colorbar=False)
    assert sum(bool(ax.images) for ax in fig.axes) == panels
    plt.close(fig)


def test_show_heatmaps_bad_input():
    with pytest.raises(ValueError, match=r"got shape \(5,\)"):
        show_heatmaps(torch.rand(5), "k", "q")
    with pytest.raises(ValueError, match="titles has 1 entries but matrices has 2 columns"):
        show_heatmaps(torch.rand(2, 3, 4), "k", "q", titles=["a"])


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
    fig = slider_figure(draw, Slider([1, 2, 3], "a", "甲", start=2), Slider([0, 5], "b", "乙", start=1),
                        name="two")
    html = fig._repr_mimebundle_()["text/html"]
    import json, re
    data = json.loads(re.search(r'-data">(.*?)</script>', html).group(1))
    assert data["sizes"] == [3, 2] and len(data["frames"]) == 6
    # the first <img> is the frame for (a=3, b=5): index 2 * 2 + 1 = 5
    assert f'src="data:image/png;base64,{data["frames"][5]}"' in html
    assert len(fig.widget.children) == 3  # two sliders and the image


def test_show_source_shows_the_real_code():
    md = show_source(ac.masked_softmax, ac.DotProductAttention)
    assert "def masked_softmax(scores" in md.data and "class DotProductAttention" in md.data
    assert "`attention_core.masking.masked_softmax`, line" in md.data
    method = show_source(ac.MultiHeadAttention.forward).data
    assert method.startswith("`attention_core.multihead.MultiHeadAttention.forward`, line")
    with pytest.raises(TypeError, match="show_source needs"):
        show_source(3)


def test_slider_script_ships_as_a_file_and_is_inlined():
    """The JavaScript lives in attention_core/book/slider.js and each figure inlines it (a
    notebook viewer has no site to load it from)."""
    assert "function acSliderFigure(uid)" in SLIDER_JS
    html = slider_figure(lambda fig, a: fig.subplots().plot([0, a]), Slider([1, 2], "a", "甲"),
                         name="js")._repr_mimebundle_()["text/html"]
    assert SLIDER_JS in html and 'acSliderFigure("acfig-' in html


def test_best_times_interleaves_rounds_and_keeps_each_functions_best():
    order = []
    best = best_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                      rounds=3, min_run_time=0.001)
    assert set(best) == {"a", "b"} and all(0 < t < float("inf") for t in best.values())
    # each round times a, then b: the calls alternate in blocks, three blocks of each
    blocks = [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k]
    assert blocks == ["a", "b"] * 4  # one warm-up call each, then three rounds


def test_best_times_calls_a_long_function_once_per_round():
    # a call longer than min_run_time is timed alone: one warm-up call, then one per round
    # (blocked_autorange would call it twice a round, once only to size its block)
    calls = []
    best = best_times({"slow": lambda: (calls.append(1), time.sleep(0.02))}, rounds=3,
                      min_run_time=0.01)
    assert len(calls) == 4 and 0.02 <= best["slow"] < 1.0


def test_best_times_rounds_of_a_quick_function_stay_near_min_run_time():
    # blocks of about min_run_time / 10 (here one call: a sleep lasts at least 1 ms) until 20 ms
    # are filled, at most 20 calls a round (blocked_autorange grew its blocks to 100 calls, then
    # timed another 100)
    calls = []
    best = best_times({"quick": lambda: (calls.append(1), time.sleep(0.001))}, rounds=2,
                      min_run_time=0.02)
    assert len(calls) <= 1 + 2 * 30 and best["quick"] >= 0.001


def test_device_can_be_chosen_by_environment(monkeypatch):
    monkeypatch.setenv("ATTENTION_CORE_DEVICE", "cpu")
    assert get_device() == torch.device("cpu")
    monkeypatch.setenv("ATTENTION_CORE_DEVICE", "tpu")
    with pytest.raises(ValueError, match="must be 'cpu' or 'cuda'"):
        get_device()
    monkeypatch.setenv("ATTENTION_CORE_DEVICE", "cuda")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            get_device()
    monkeypatch.delenv("ATTENTION_CORE_DEVICE")
    assert get_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_head_view_draws_one_line_per_visible_weight_and_checks_its_input():
    from attention_core.book.plot import draw_head_view
    w = torch.zeros(3, 2, 4)
    w[0, :, 0] = 1.0          # head 1: both queries on key 1
    w[1, 0, 1] = w[1, 1, 2] = 1.0
    w[2] = 0.25               # head 3: uniform
    fig, ax = plt.subplots()
    draw_head_view(ax, w, ["q1", "q2"], list("abcd"))
    drawn = [line for line in ax.get_lines() if len(line.get_xdata())]
    assert len(drawn) == 2 + 2 + 8
    assert len(ax.get_lines()) - len(drawn) == 3  # one swatch per head
    ax.clear()
    draw_head_view(ax, w, ["q1", "q2"], list("abcd"), heads=1)
    drawn = [line for line in ax.get_lines() if len(line.get_xdata())]
    assert [line.get_alpha() for line in ax.get_lines()[2:]] == [0.2, 1.0, 0.2]  # swatches
    ends = [y for line in drawn for y in line.get_ydata()]  # query 1 -> key 2, query 2 -> key 3
    assert ends == pytest.approx([1.0, 2 / 3, 0.0, 1 / 3])
    with pytest.raises(ValueError, match="need 2 query labels and 4 key labels"):
        draw_head_view(ax, w, ["q1"], list("abcd"))
    with pytest.raises(ValueError, match=r"heads must be 'all' or a head index in 0..2"):
        draw_head_view(ax, w, ["q1", "q2"], list("abcd"), heads=3)
    with pytest.raises(ValueError, match=r"weights must be \(heads, n_queries, n_keys\)"):
        draw_head_view(ax, w[0], ["q1", "q2"], list("abcd"))
    plt.close(fig)


def test_transformer_diagram_names_every_part_and_every_shape():
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    from attention_core.book.plot import draw_transformer_diagram
    fig, ax = plt.subplots(figsize=(8, 7.5))
    draw_transformer_diagram(ax, B="2", n_src="7", n_tgt="5", d="64", vocab="100")
    text = " ".join(t.get_text() for t in ax.texts)
    for part in ("source tokens", "源词元", "target so far", "embedding ×√d + positions",
                 "encoder block × L", "编码器块 × L", "decoder block × L", "解码器块 × L",
                 "multi-head self-attention", "causal (masked) self-attention", "因果（掩码）自注意力",
                 "cross-attention", "交叉注意力", "K, V: encoder", "position-wise FFN",
                 "add & norm · 相加 + 层规范化", "linear → vocabulary", "residual path", "残差连接",
                 "(2, 7)", "(2, 5)", "(2, 7, 64)", "(2, 5, 64)", "(2, 5, 100)",
                 "last encoder block's output", "every decoder block", "编码器最后一块的输出"):
        assert part in text, part
    assert "加 & 规范化" not in text
    boxes = {gid: [p for p in ax.patches if isinstance(p, FancyBboxPatch) and p.get_gid() == gid]
             for gid in ("sublayer", "add-norm")}
    assert len(boxes["sublayer"]) == len(boxes["add-norm"]) == 5  # 2 encoder + 3 decoder
    residuals = [p.get_path().vertices for p in ax.patches
                 if isinstance(p, FancyArrowPatch) and p.get_gid() == "residual"]
    assert len(residuals) == 5
    # every sublayer has exactly one residual arrow that bypasses it: from below the box, out
    # beside it, to the add & norm just above it
    for sub in boxes["sublayer"]:
        x0, y0 = sub.get_x(), sub.get_y()
        x1, y1 = x0 + sub.get_width(), y0 + sub.get_height()
        norm = min((n for n in boxes["add-norm"] if n.get_y() > y1), key=lambda n: n.get_y())
        bypass = [v for v in residuals
                  if v[:, 1].min() < y0 < y1 < norm.get_y() < v[:, 1].max()
                  < norm.get_y() + norm.get_height()
                  and (v[:, 0].min() < x0 or v[:, 0].max() > x1) and x0 < v[0, 0] < x1]
        assert len(bypass) == 1, (sub.get_y(), len(bypass))
    # the encoder's output reaches the cross-attention box
    memory, = [p.get_path().vertices for p in ax.patches if p.get_gid() == "memory"]
    decoder = sorted(boxes["sublayer"], key=lambda b: (b.get_x(), b.get_y()))[2:]
    cross = decoder[1]  # the decoder's second sublayer from below
    tip = memory[memory[:, 0].argmax()]
    assert abs(tip[0] - cross.get_x()) < 0.05
    assert cross.get_y() < tip[1] < cross.get_y() + cross.get_height()
    plt.close(fig)


def test_slider_values_named_in_both_languages_and_frames_at_twice_the_pixels():
    import base64
    import json
    import re

    from attention_core.book.widgets import PIXEL_RATIO, png_size

    goal = Slider(["none", "read"], "goal", "目标", fmt="{}", labels_zh=["无", "阅读"])
    fig = slider_figure(lambda f, g: f.add_subplot().set_title(g), goal, name="goals",
                        figsize=(2.0, 1.5))
    data = json.loads(re.search(r'-data">(.*?)</script>', fig.static_html, re.S).group(1)
                      .replace("<\\/", "</"))
    assert data["outputs"][0][1].count('lang="zh-Hans">阅读<') == 1
    assert data["alts"]["1"] == "goal = read · 目标 = 阅读"
    assert 'alt="goal = none · 目标 = 无"' in fig.static_html
    assert "none · 无" in fig.summary and "read · 阅读" in fig.summary
    width, height = png_size(base64.b64decode(data["frames"][0]))
    shown = re.search(r'<img [^>]*width="(\d+)" height="(\d+)"', fig.static_html)
    assert (width // PIXEL_RATIO, height // PIXEL_RATIO) == tuple(map(int, shown.groups()))
    with pytest.raises(ValueError, match="labels_zh of slider 'goal' needs one name per value"):
        Slider(["none", "read"], "goal", "目标", fmt="{}", labels_zh=["无"])


def test_frames_are_palette_pngs_a_fraction_of_the_size_with_the_same_picture():
    import io

    import numpy as np
    from PIL import Image

    from attention_core.book.widgets import palette_png, render_png

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
