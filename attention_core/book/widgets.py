"""Interactive figures that work both in Jupyter and on the static site.

``slider_figure(draw, Slider(...), ...)`` returns one object with two faces:

* in Jupyter (a kernel and a widget manager) live ipywidgets sliders redraw the figure with
  ``draw``;
* everywhere else (the static book, a notebook viewer) its HTML fallback shows the same
  figure precomputed for every combination of slider values, with plain HTML sliders and a
  few lines of JavaScript: no kernel, no widget library, no network.

Both faces sit in one MIME bundle, and each front end picks the richest one it can show.
The book's configuration drops the widget view, so the site never shows a dead control.
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources

from matplotlib import pyplot as plt

from ..contracts import contract, require
from . import bilingual

NOTE_EN = ("Precomputed frames: this figure works without Python. Running the notebook in "
           "Jupyter gives live sliders instead.")
NOTE_ZH = "预先计算的帧：此图无需 Python 即可交互。在 Jupyter 中运行本笔记本会得到实时滑块。"
SLIDER_JS = resources.files(__package__).joinpath("slider.js").read_text(encoding="utf-8")


@dataclass
class Slider:
    """One parameter of an interactive figure: its positions and its name in both languages."""

    values: Sequence
    label_en: str
    label_zh: str
    start: int = 0
    fmt: str = "{:.3g}"
    labels_zh: Sequence[str] | None = None  # value names in Chinese, where values are words
    labels: list = field(init=False)

    @contract(where=[
        require(lambda self: len(self.values) > 0,
                lambda self: f"slider {self.label_en!r} needs at least one value, got none"),
        require(lambda self: 0 <= self.start < len(self.values),
                lambda self: f"start must index the values of slider {self.label_en!r} "
                             f"(0..{len(self.values) - 1}), got {self.start}"),
        require(lambda self: self.labels_zh is None or len(self.labels_zh) == len(self.values),
                lambda self: f"labels_zh of slider {self.label_en!r} needs one name per value "
                             f"({len(self.values)}), got {len(self.labels_zh)}")])
    def __post_init__(self):
        self.values = list(self.values)
        self.labels = [self.fmt.format(v) for v in self.values]
        if self.labels_zh is not None:
            self.labels_zh = list(self.labels_zh)

    def label(self, i: int) -> str:
        """Value i's name in both languages ("read · 阅读"), or its number."""
        if self.labels_zh is None:
            return self.labels[i]
        return bilingual.join(self.labels[i], self.labels_zh[i])

    def output_html(self, i: int) -> str:
        """Value i's name as the page shows it: one span per language where they differ."""
        if self.labels_zh is None:
            return html.escape(self.labels[i])
        return bilingual.spans(self.labels[i], self.labels_zh[i])


FRAME_DPI = 80  # the size a frame is shown at: 80 pixels per inch of figsize
PIXEL_RATIO = 2  # frames hold twice those pixels, so they stay sharp on high-DPI screens


def render_png(draw: Callable, values: Sequence, figsize) -> bytes:
    """Draw one figure for one combination of slider values and return its PNG bytes."""
    fig = plt.figure(figsize=figsize)
    try:
        draw(fig, *values)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=FRAME_DPI * PIXEL_RATIO, bbox_inches="tight")
    finally:
        plt.close(fig)
    return palette_png(buf.getvalue())


def palette_png(png: bytes, colors: int = 256) -> bytes:
    """The same picture with a palette of at most ``colors`` colours: a figure of lines, text
    and a colormap needs no more, and every precomputed frame then weighs about a quarter."""
    from PIL import Image  # matplotlib's own image library

    image = Image.open(io.BytesIO(png)).convert("RGB")  # matplotlib's frames are opaque
    quantized = image.quantize(colors=colors, method=Image.Quantize.FASTOCTREE)
    palette = quantized.getpalette()[:3 * colors]
    # the octree averages each bin; put the background's entry back to the exact white
    white = min(range(len(palette) // 3),
                key=lambda i: sum(255 - c for c in palette[3 * i:3 * i + 3]))
    palette[3 * white:3 * white + 3] = [255, 255, 255]
    quantized.putpalette(palette)
    out = io.BytesIO()
    quantized.save(out, format="PNG", optimize=True)
    return out.getvalue()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels, read from a PNG's header."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def alt_text(sliders: Sequence[Slider], positions: Sequence[int]) -> str:
    """The frame's description in both languages: "bandwidth = 0.2 · 带宽 = 0.2"."""
    en = ", ".join(f"{s.label_en} = {s.labels[i]}" for s, i in zip(sliders, positions, strict=True))
    zh = "，".join(f"{s.label_zh} = {(s.labels_zh or s.labels)[i]}"
                  for s, i in zip(sliders, positions, strict=True))
    return bilingual.join(en, zh)


def static_slider_html(frames: Sequence[str], sliders: Sequence[Slider], name: str) -> str:
    """A self-contained HTML figure: one range input per slider swaps precomputed PNG frames.

    Frames are in row-major order over the sliders (the last slider varies fastest). Each
    frame has PIXEL_RATIO times the pixels it is shown with.
    """
    uid = "acfig-" + hashlib.sha1(name.encode()).hexdigest()[:10]  # stable across runs
    e = html.escape
    starts = [s.start for s in sliders]
    first = 0
    for s in sliders:
        first = first * len(s.values) + s.start
    controls = "\n".join(
        f'<div class="ac-slider-controls">'
        f'<label for="{uid}-in{i}">{bilingual.spans(s.label_en, s.label_zh)}</label>'
        f'<input id="{uid}-in{i}" type="range" min="0" max="{len(s.values) - 1}" step="1" '
        f'value="{s.start}" style="width:60%">'
        f'<output for="{uid}-in{i}">{s.output_html(s.start)}</output></div>'
        for i, s in enumerate(sliders))
    width, height = png_size(base64.b64decode(frames[first]))
    data = json.dumps({"frames": list(frames), "sizes": [len(s.values) for s in sliders],
                       "starts": starts,
                       "outputs": [[s.output_html(i) for i in range(len(s.values))]
                                   for s in sliders],
                       "alts": {",".join(map(str, combo)): alt_text(sliders, combo)
                                for combo in itertools.product(
                                    *(range(len(s.values)) for s in sliders))}},
                      ensure_ascii=False).replace("</", "<\\/")  # no "</script>" inside
    return f"""<div class="ac-slider-figure" id="{uid}">
<img alt="{e(alt_text(sliders, starts))}" src="data:image/png;base64,{frames[first]}" width="{width // PIXEL_RATIO}" height="{height // PIXEL_RATIO}" style="max-width:100%;height:auto">
{controls}
<p class="ac-slider-note">{bilingual.spans(NOTE_EN, NOTE_ZH)}</p>
<script type="application/json" id="{uid}-data">{data}</script>
<script>{SLIDER_JS}acSliderFigure("{uid}");</script>
</div>"""  # noqa: E501 (the markup of one figure, a line per element)


class SliderFigure:
    """Live ipywidgets sliders with a kernel-free HTML fallback in the same output."""

    def __init__(self, widget, static_html: str, summary: str):
        self.widget, self.static_html, self.summary = widget, static_html, summary

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/html"] = self.static_html
        bundle["text/plain"] = self.summary  # what nbval compares, and what a terminal shows
        return bundle


def slider_figure(draw: Callable, *sliders: Slider, name: str, figsize=(6.0, 3.0)) -> SliderFigure:
    """An interactive figure over one or more parameters.

    draw(fig, value_1, ..., value_k) fills an empty figure for one value of each slider.
    Every combination is precomputed for the static version, so keep the grid small.
    name: a unique, stable id for the page.
    """
    import ipywidgets as widgets

    if not sliders or not all(isinstance(s, Slider) for s in sliders):
        raise TypeError("slider_figure needs one or more Slider(values, label_en, label_zh)")
    combos = itertools.product(*(range(len(s.values)) for s in sliders))
    pngs = {combo: render_png(draw, [s.values[i] for s, i in zip(sliders, combo, strict=True)],
                              figsize) for combo in combos}
    frames = [base64.b64encode(png).decode("ascii") for png in pngs.values()]
    static = static_slider_html(frames, sliders, name)

    # The live view calls ``draw`` on every move, so a reader may edit ``draw`` and rerun.
    controls = [widgets.SelectionSlider(options=[(s.label(i), v) for i, v in enumerate(s.values)],
                                        value=s.values[s.start], description=s.label_en,
                                        continuous_update=False,
                                        style={"description_width": "initial"},
                                        layout=widgets.Layout(width="60%"))
                for s in sliders]
    image = widgets.Image(value=pngs[tuple(s.start for s in sliders)], format="png")

    def redraw(change):
        image.value = render_png(draw, [c.value for c in controls], figsize)

    for c in controls:
        c.observe(redraw, names="value")
    described = "; ".join(f"{s.label_en} / {s.label_zh} over {len(s.values)} values from "
                          f"{s.label(0)} to {s.label(-1)}" for s in sliders)
    summary = f"Interactive figure '{name}': {described}"
    return SliderFigure(widgets.VBox([*controls, image]), static, summary)
