"""The trained models that pages run in the reader's browser (attention_core.book.translator).

After the build, each shipped model is written once as `_static/ac-models/<name>.js`, from
the committed weights in attention_core/worlds/trained: a page loads it only when its reader
first asks for a translation, so no page carries the megabyte in its own HTML.
"""
from __future__ import annotations

from pathlib import Path


def write_models(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from attention_core.book.translator import MODELS, script_file, weights_script

    for name in MODELS:
        target = Path(app.outdir) / "_static" / script_file(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(weights_script(name), encoding="utf-8")


def setup(app):
    app.connect("build-finished", write_models)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
