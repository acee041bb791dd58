"""Book tooling: figures, interactive sliders, displayed source, timing, seed and device.

These helpers serve the chapters, not the attention library: ``plot``, ``widgets`` and
``source`` need the optional extra (``pip install -e .[book]``: matplotlib, ipywidgets,
IPython, mplfonts); ``runtime`` and ``timing`` need torch only.
"""
