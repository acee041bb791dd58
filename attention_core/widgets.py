"""Interactive figures that work both in Jupyter and on the static site.

``slider_figure(draw, values, ...)`` returns one object with two faces:

* in Jupyter (a kernel and a widget manager) it is a live ipywidgets slider that redraws
  the figure with ``draw``;
* everywhere else (the static book, a notebook viewer) its HTML fallback shows the same
  figure precomputed for every slider value, with a plain HTML slider and a few lines of
  JavaScript: no kernel, no widget library, no network.

Both faces sit in one MIME bundle, and each front end picks the richest one it can show.
The book's configuration drops the widget view, so the site never shows a dead control.
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import json
from typing import Callable, Sequence

from matplotlib import pyplot as plt

NOTE_EN = ("Precomputed frames: this figure works without Python. Running the notebook in "
           "Jupyter gives a live slider instead.")
NOTE_ZH = "预先计算的帧：此图无需 Python 即可交互。在 Jupyter 中运行本笔记本会得到实时滑块。"


def render_png(draw: Callable, value, figsize) -> bytes:
    """Draw one figure for ``value`` and return its PNG bytes."""
    fig = plt.figure(figsize=figsize)
    try:
        draw(fig, value)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    finally:
        plt.close(fig)
    return buf.getvalue()


def static_slider_html(frames: Sequence[str], labels: Sequence[str], start: int, name: str,
                       label_en: str, label_zh: str) -> str:
    """A self-contained HTML slider that swaps precomputed PNG frames."""
    uid = "acfig-" + hashlib.sha1(name.encode()).hexdigest()[:10]  # stable across runs
    e = html.escape
    data = json.dumps({"frames": list(frames), "labels": list(labels)})
    return f"""<div class="ac-slider-figure" id="{uid}">
<img alt="{e(label_en)} = {e(labels[start])}" src="data:image/png;base64,{frames[start]}" style="max-width:100%">
<div class="ac-slider-controls">
<label for="{uid}-in"><span class="lang-en" lang="en">{e(label_en)}</span><span class="lang-zh" lang="zh-Hans">{e(label_zh)}</span></label>
<input id="{uid}-in" type="range" min="0" max="{len(frames) - 1}" step="1" value="{start}" style="width:60%">
<output for="{uid}-in">{e(labels[start])}</output>
</div>
<p class="ac-slider-note"><span class="lang-en" lang="en">{NOTE_EN}</span><span class="lang-zh" lang="zh-Hans">{NOTE_ZH}</span></p>
<script type="application/json" id="{uid}-data">{data}</script>
<script>(function () {{
  var root = document.getElementById("{uid}");
  var data = JSON.parse(document.getElementById("{uid}-data").textContent);
  var img = root.querySelector("img"), out = root.querySelector("output");
  root.querySelector("input").addEventListener("input", function (ev) {{
    var i = Number(ev.target.value);
    img.src = "data:image/png;base64," + data.frames[i];
    img.alt = img.alt.split(" = ")[0] + " = " + data.labels[i];
    out.textContent = data.labels[i];
  }});
}})();</script>
</div>"""


class SliderFigure:
    """A live ipywidgets slider with a kernel-free HTML fallback in the same output."""

    def __init__(self, widget, static_html: str, summary: str):
        self.widget, self.static_html, self.summary = widget, static_html, summary

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/html"] = self.static_html
        bundle["text/plain"] = self.summary  # what nbval compares, and what a terminal shows
        return bundle


def slider_figure(draw: Callable, values: Sequence[float], *, name: str, label_en: str,
                  label_zh: str, start: int = 0, fmt: str = "{:.3g}",
                  figsize=(6.0, 3.0)) -> SliderFigure:
    """An interactive figure over one parameter.

    draw(fig, value) fills an empty figure for one parameter value. values: the slider's
    positions (each is precomputed for the static version). name: a unique, stable id.
    label_en / label_zh: the parameter's name in both languages.
    """
    import ipywidgets as widgets

    values = list(values)
    if not values:
        raise ValueError("values must hold at least one slider position, got none")
    if not 0 <= start < len(values):
        raise ValueError(f"start must index values (0..{len(values) - 1}), got {start}")
    labels = [fmt.format(v) for v in values]
    pngs = [render_png(draw, v, figsize) for v in values]
    frames = [base64.b64encode(png).decode("ascii") for png in pngs]
    static = static_slider_html(frames, labels, start, name, label_en, label_zh)

    # The live view redraws with ``draw`` on every move, so it is not limited to the
    # precomputed frames' quality or to a fixed figure: the reader may edit ``draw``.
    slider = widgets.SelectionSlider(options=list(zip(labels, values)), value=values[start],
                                     description=label_en, continuous_update=False,
                                     style={"description_width": "initial"},
                                     layout=widgets.Layout(width="60%"))
    image = widgets.Image(value=pngs[start], format="png")

    def redraw(change):
        image.value = render_png(draw, change["new"], figsize)

    slider.observe(redraw, names="value")
    summary = (f"Interactive figure '{name}': {label_en} / {label_zh} over "
               f"{len(values)} values from {labels[0]} to {labels[-1]}")
    return SliderFigure(widgets.VBox([slider, image]), static, summary)
