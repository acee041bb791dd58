"""Translate your own sentence: the trained translators of chapters 4 (Bahdanau) and 8
(Transformer), live in Jupyter and in the page.

``live_translator(model, data, name=...)`` returns one object with two faces, in the same
``SliderFigure`` bundle as ``widgets.slider_figure`` and the attention playground:

* in Jupyter, a text box whose sentence ``translate_sentence`` decodes with PyTorch, greedily
  as the chapters do, redrawing the output and its attention (chapter 4's alignment heatmap,
  chapter 8's head view of the cross-attention);
* on the static site, ``translator.js`` runs the same forward pass (GRU encoder, additive
  attention and GRU decoder; or Transformer blocks with a KV cache) and greedy decoding in the
  page, in float64 on the shipped float32 weights. The weights load
  only when the reader first asks for a translation, from one script file that the site build
  writes from the committed model (``weights_script``; see ``worlds.pretrained``).

The book's browser tests feed the page's model test-set and hand-written sentences and compare
its tokens and attention weights with ``translate_sentence`` on the same weights.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
from importlib import resources

import numpy as np
import torch

from ..contracts import contract, instance_of, one_of, require
from ..decoding import decoder_input, evaluating, greedy_decode
from ..positional import sinusoidal_table
from ..transformer import keep_attention_weights
from ..worlds.pretrained import RECIPES, shipped_record
from ..worlds.translation import EOS, WORDS
from .bilingual import spans
from .plot import draw_head_view
from .widgets import SliderFigure, render_png

TRANSLATOR_JS = resources.files(__package__).joinpath("translator.js").read_text(encoding="utf-8")
MAX_LEN = 60         # output tokens, as chapter 4's ``translate``
MAX_SOURCE = 60      # source tokens the page accepts (the corpus' longest has 47)
# the shipped models the page can run (worlds.pretrained), and the positions the page needs
# of a Transformer's sinusoidal table (a buffer, not a parameter: shipped beside the weights)
MODELS = ("bahdanau", "transformer")
POSITIONS = max(MAX_LEN, MAX_SOURCE + 1)


@contract(text=instance_of(str))
def tokenize(text: str) -> list:
    """A typed sentence -> the corpus' tokens: lower case, words and punctuation marks apart."""
    return WORDS.findall(text.lower())


@dataclasses.dataclass
class Translation:
    source: list            # the sentence's tokens
    unknown: list           # those the source vocabulary lacks (then nothing is decoded)
    output: list            # the greedy output, without <eos>
    # one row per decoded token, <eos>'s too: (steps, len(source) + 1) for the Bahdanau
    # decoder; (steps, layers, heads, len(source) + 1) cross-attention for a Transformer
    weights: torch.Tensor


@contract(where=[
    require(lambda text: len(tokenize(text)) > 0,
            "text must contain at least one word, got an empty sentence"),
    require(lambda text: len(tokenize(text)) <= MAX_SOURCE,
            lambda text: f"text must have at most {MAX_SOURCE} tokens, got {len(tokenize(text))}")])
def translate_sentence(model, data, text: str, *, max_len: int = MAX_LEN) -> Translation:
    """Greedy translation of one typed sentence with its attention, as chapters 4 and 8 decode.

    A Transformer's weights are its cross-attention in every layer and head, read by running
    the decoder once more over its own output (the causal mask makes each row what it was
    when that token was chosen). A sentence with words the model does not know is not decoded
    (``unknown`` lists them): the model would read each as <unk>, a token it never saw in
    training.
    """
    source = tokenize(text)
    vocab = data.src_vocab
    unknown = [t for t in dict.fromkeys(source) if t not in vocab.stoi]
    if unknown:
        return Translation(source, unknown, [], torch.zeros(0, len(source) + 1))
    device = next(model.parameters()).device
    src = torch.tensor([vocab.encode(source) + [vocab.eos]], device=device)
    tokens, weights = greedy_decode(model, src, torch.tensor([src.shape[1]], device=device),
                                    data.tgt_vocab.bos, data.tgt_vocab.eos, max_len=max_len)
    itos = data.tgt_vocab.itos
    out = [itos[i] for i in tokens[0].tolist()]
    steps = out.index(EOS) + 1 if EOS in out else len(out)
    if weights is None:  # a Transformer keeps per-layer weights: read them off its own output
        weights = _cross_attention(model, src, tokens[:, :steps], data.tgt_vocab.bos)
    return Translation(source, [], out[:steps - 1] if EOS in out else out,
                       weights[0, :steps].float().cpu())


def _cross_attention(model, src, tokens, bos):
    """(1, steps, layers, heads, n_src): the decoder's cross-attention while it reads <bos> and
    ``tokens`` but the last, as during greedy decoding."""
    keep_attention_weights(model)
    try:
        with evaluating(model):
            model(src, decoder_input(tokens, bos), torch.tensor([src.shape[1]], device=src.device))
        layers = model.decoder.cross_attention_weights      # per layer: (1, h, steps, n_src)
    finally:
        keep_attention_weights(model, False)
    return torch.stack(layers, 1).permute(0, 3, 1, 2, 4)  # (1, steps, layers, h, n_src)


NEEDED = "decoder.dense.weight"  # the output layer of an encoder-decoder


@contract(name=one_of(*MODELS), where=[
    require(lambda state_dict: NEEDED in state_dict,
            lambda state_dict: f"state_dict must be an encoder-decoder's (with {NEEDED}), "
                               f"got keys {sorted(state_dict)[:3]}...")])
def weights_payload(name: str, state_dict, src_itos, tgt_itos, heads: int = 1) -> dict:
    """The page's copy of a model: vocabularies, shapes, and every parameter as float32 (a
    Transformer's first POSITIONS rows of positions too), in order, as one little-endian
    base64 string. heads: a Transformer's number of heads (its weights do not say)."""
    tensors = {k: t.detach().float().cpu().contiguous() for k, t in state_dict.items()}
    if name == "transformer":
        # the rows of the table the model builds (max_len 1000): a shorter table's sines may
        # round differently in their last bit (another vectorised loop)
        d = tensors["decoder.embedding.weight"].shape[1]
        tensors["positions"] = sinusoidal_table(1000, d)[:POSITIONS].contiguous()
    blob = b"".join(t.numpy().astype("<f4").tobytes() for t in tensors.values())
    return {"name": name, "src_itos": list(src_itos), "tgt_itos": list(tgt_itos),
            "shapes": {k: list(t.shape) for k, t in tensors.items()}, "order": list(tensors),
            "max_len": MAX_LEN, "max_source": MAX_SOURCE, "heads": heads,
            "float32": base64.b64encode(blob).decode("ascii")}


def weights_script(name: str, directory=None) -> str:
    """The script file the page loads on first use, from the shipped model ``name``
    (``worlds.pretrained``): it registers the model's payload in ``window.acModels``."""
    record = shipped_record(name, directory=directory)
    heads = RECIPES[name].model.get("num_heads", 1)
    payload = json.dumps(weights_payload(name, record["state_dict"], record["src_itos"],
                                         record["tgt_itos"], heads), separators=(",", ":"))
    return f"(window.acModels = window.acModels || {{}})[{json.dumps(name)}] = {payload};\n"


def script_file(name: str) -> str:
    """The site's path of a model's script, under _static."""
    return f"ac-models/{name}.js"


EXAMPLES = ["the 3rd of may , 1999", "four hundred and twelve thousand",
            "march 14th , 2021 ; seven hundred and five", "nine hundred thousand and one"]
HELP = ("It knows numbers below a million in words "
        "(\u201cfour hundred and twelve thousand\u201d), dates from 1990 to 2029 "
        "(\u201cthe 3rd of may , 1999\u201d or \u201cmay 3rd , 1999\u201d), "
        "and up to four of them joined by \u201c;\u201d, as in its training.",
        "它认识用英文单词写的一百万以下的数（four hundred and twelve thousand）、"
        "1990 至 2029 年的日期（the 3rd of may , 1999 或 may 3rd , 1999），"
        "以及用分号 ; 连起来的至多四项，与它的训练数据一样。")


NOTES = {
    "bahdanau": ("Computed in your browser by the model this chapter trains (the weights shipped "
                 "with the book, about 225,000 numbers): encoder, additive attention and greedy "
                 "decoding, as in the code above. Each row of the heatmap is one output token; "
                 "its cells are the attention weights over the source tokens when the decoder "
                 "chose it.",
                 "由本章训练的模型在你的浏览器中计算（本书附带的权重，约 22.5 万个数）："
                 "编码器、加性注意力和贪心解码，与上面的代码相同。"
                 "热图的每一行是一个输出词元，格子是解码器选出它时对各源词元的注意力权重。"),
    "transformer": ("Computed in your browser by the Transformer this chapter trains (the weights "
                    "shipped with the book, about 186,000 numbers): encoder blocks, then greedy "
                    "decoding with a KV cache, as in the code above. The head view links each "
                    "token the decoder read (left; each row chooses the token after it) to the "
                    "source tokens (right); a line's width and opacity grow with the "
                    "cross-attention weight of the chosen layer and head.",
                    "由本章训练的 Transformer 在你的浏览器中计算"
                    "（本书附带的权重，约 18.6 万个数）："
                    "先过编码器块，再用键值缓存贪心解码，与上面的代码相同。"
                    "头视图把解码器读入的每个词元（左；每一行选出它后面的那个词元）"
                    "连到源词元（右）；"
                    "连线越粗越深，所选层和头的交叉注意力权重越大。"),
}


@contract(weights=one_of(*MODELS))
def static_translator_html(name: str, weights: str = "bahdanau", example: str = EXAMPLES[0]) -> str:
    """The kernel-free face: a text box, the output and the attention heatmap, computed by
    translator.js with the shipped model ``weights`` once the reader asks for it."""
    uid = "actr-" + hashlib.sha1(name.encode()).hexdigest()[:10]
    data = {"model": weights, "script": script_file(weights), "examples": EXAMPLES}
    buttons = "".join(f'<button type="button" data-example="{i}" style="margin:0 0.4em 0.3em 0">'
                      f'{html.escape(e)}</button>' for i, e in enumerate(EXAMPLES))
    return f"""<div class="ac-translator" id="{uid}">
<label style="display:block;margin:0.25em 0">{spans("English source", "英文源句")}
<input type="text" data-control="source" value="{html.escape(example)}" spellcheck="false" autocomplete="off" style="display:block;width:100%;max-width:36em;box-sizing:border-box;font-size:1em;padding:0.3em"></label>
<div style="margin:0.3em 0">{buttons}</div>
<p class="ac-translator-help" style="font-size:0.85em;margin:0.3em 0">{spans(*HELP)}</p>
<button type="button" data-control="load" style="margin:0.3em 0">{spans("Run the model in this page (about 1 MB, loaded once)", "在本页运行模型（约 1 MB，只加载一次）")}</button>
<p class="ac-translator-status" role="status" style="margin:0.3em 0"></p>
<p class="ac-translator-output" style="margin:0.3em 0;font-size:1.2em" lang="zh-Hans"></p>
<div class="ac-translator-heatmap" style="overflow-x:auto;max-width:100%"></div>
<p class="ac-slider-note" style="margin:0">{spans(*NOTES[weights])}</p>
<script type="application/json" id="{uid}-data">{json.dumps(data)}</script>
<script>{TRANSLATOR_JS}acTranslator("{uid}");</script>
</div>"""  # noqa: E501 (the markup of one figure, a line per element)


def draw_translation(fig, translation: Translation):
    """The Jupyter face's figure: the attention heatmap of one translation."""
    ax = fig.subplots()
    ax.grid(False)
    if translation.unknown or not translation.weights.numel():
        ax.axis("off")
        ax.text(0, 0.5, "not translated · 未翻译", fontsize=10)
        return
    src = translation.source + ["<eos>"]
    if translation.weights.dim() == 4:  # a Transformer: the head view of each layer, every head
        fig.delaxes(ax)
        queries = (["<bos>"] + translation.output)[:len(translation.weights)]
        axes = fig.subplots(1, translation.weights.shape[1])
        for layer, ax in enumerate(axes):
            draw_head_view(ax, translation.weights[:, layer].permute(1, 0, 2), queries, src)
            ax.set_title(f"layer {layer + 1} · 第 {layer + 1} 层", fontsize=9)
        axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.15, 1))
        return
    rows = translation.output + (["<eos>"] if len(translation.weights) > len(translation.output)
                                 else [])
    image = ax.imshow(np.asarray(translation.weights), cmap="Reds", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(src)), src, rotation=90, fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set(xlabel="source · 源词元", ylabel="output · 输出")
    fig.colorbar(image, ax=ax, shrink=0.7)


def live_translator(model, data, *, name: str, weights: str = "bahdanau",
                    example: str = EXAMPLES[0], figsize=(7.0, 4.0)) -> SliderFigure:
    """A translator for typed sentences: ipywidgets + PyTorch with ``model`` in Jupyter, and
    the shipped model ``weights`` in the page (see the module's docstring)."""
    import ipywidgets as widgets

    box = widgets.Text(value=example, description="English · 英文", continuous_update=False,
                       style={"description_width": "initial"}, layout=widgets.Layout(width="80%"))
    said = widgets.HTML()

    def render():
        try:
            t = translate_sentence(model, data, box.value)
        except ValueError as error:
            said.value = f"<p>{error}</p>"
            return render_png(lambda fig: fig.text(0.1, 0.5, "—"), [], (figsize[0], 0.5))
        if t.unknown:
            missing = spans("Not in the model’s vocabulary: " + ", ".join(t.unknown),
                            "模型词表中没有：" + "、".join(t.unknown))
            said.value = f"<p>{missing}</p><p>{spans(*HELP)}</p>"
        else:
            said.value = f'<p style="font-size:1.2em">{"".join(t.output)}</p>'
        return render_png(lambda fig: draw_translation(fig, t), [], figsize)

    image = widgets.Image(value=render(), format="png")
    box.observe(lambda change: setattr(image, "value", render()), names="value")
    return SliderFigure(widgets.VBox([box, said, image]),
                        static_translator_html(name, weights, example),
                        translator_summary(name, weights))


def translator_summary(name: str, weights: str) -> str:
    """What a terminal shows of a live translator (and what nbval compares)."""
    drawn = "its cross-attention head view" if weights == "transformer" else "its attention heatmap"
    return (f"Live translator '{name}': a typed English number or date, translated greedily by "
            f"the {weights} model, with {drawn}")
