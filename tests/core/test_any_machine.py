"""Every attention module's forward reads only shapes, never values, so it:

* runs on the ``meta`` device (shapes without data),
* compiles with ``torch.compile(fullgraph=True)`` without a graph break,
* never synchronises the host with a GPU (checked under ``set_sync_debug_mode("error")``
  where a GPU exists),

and ``import attention_core`` pulls in nothing heavier than torch itself does.
"""
import subprocess
import sys

import pytest
import torch
from torch import nn

import attention_core as ac
from attention_core.scoring import SCORE_FUNCTIONS
from attention_core.seq2seq import AttentionDecoder
from attention_core.transformer import TransformerEncoderBlock, make_transformer
from attention_core.variants import LocalAttention
from attention_core.worlds.fetch import FetchModel, FetchTask

B, N_Q, N_K, D = 2, 3, 5, 8


class BahdanauSteps(nn.Module):
    """The attention decoder over given encoder outputs (its GRU encoder packs sequences,
    which needs the lengths on the host: see seq2seq.GRUEncoder)."""

    def __init__(self):
        super().__init__()
        self.decoder = AttentionDecoder(9, 4, D)

    def forward(self, enc_outputs, tokens, valid_lens):
        hidden = enc_outputs[:, -1][None]                     # (layers, B, d)
        state = self.decoder.init_state((enc_outputs, hidden), valid_lens)
        return self.decoder(tokens, state)[0]


class CachedSteps(nn.Module):
    """A Transformer decoding one token at a time with its KV cache."""

    def __init__(self):
        super().__init__()
        self.model = make_transformer(7, 9, num_hiddens=D, ffn_num_hiddens=16, num_heads=2,
                                      num_kv_heads=1)

    def forward(self, src, tokens, valid_lens):
        state = self.model.decoder.init_state(self.model.encoder(src, valid_lens), valid_lens)
        logits = []
        for t in range(tokens.shape[1]):
            step, state = self.model.decoder(tokens[:, t:t + 1], state)
            logits.append(step)
        return torch.cat(logits, 1)


def score_module(name):
    sizes = {"general": dict(query_size=D, key_size=D), "concat": dict(query_size=D, key_size=D),
             "additive": dict(num_hiddens=4, query_size=D, key_size=D)}
    return SCORE_FUNCTIONS[name](**sizes.get(name, {}))


# (name, module factory, input factory(device) -> args): every layer of the mechanisms
CASES = [
    ("DotProductAttention", lambda: ac.DotProductAttention(),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                  torch.randn(B, N_K, 4, device=dev), torch.tensor([5, 2], device=dev))),
    ("DotProductAttention, heads", lambda: ac.DotProductAttention(),
     lambda dev: (torch.randn(B, 4, N_Q, D, device=dev), torch.randn(B, 4, N_K, D, device=dev),
                  torch.randn(B, 4, N_K, 4, device=dev),
                  torch.tensor([[1, 2, 5], [0, 3, 4]], device=dev))),
    ("AdditiveAttention", lambda: ac.AdditiveAttention(6, query_size=D, key_size=3),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, 3, device=dev),
                  torch.randn(B, N_K, 4, device=dev), torch.tensor([5, 0], device=dev))),
    *[(f"ScoredAttention {name}", lambda name=name: ac.ScoredAttention(score_module(name)),
       lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                    torch.randn(B, N_K, 4, device=dev), torch.tensor([5, 2], device=dev)))
      for name in SCORE_FUNCTIONS],
    ("SelfAttention", lambda: ac.SelfAttention(D, input_size=D),
     lambda dev: (torch.randn(B, N_K, D, device=dev), torch.tensor([5, 3], device=dev))),
    ("MultiHeadAttention fused",
     lambda: ac.MultiHeadAttention(D, 2, query_size=D, key_size=D, value_size=D),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                  torch.randn(B, N_K, D, device=dev), torch.tensor([5, 0], device=dev))),
    ("MultiHeadAttention weights", lambda: ac.MultiHeadAttention(D, 2, query_size=D, key_size=D,
                                                                 value_size=D, need_weights=True),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                  torch.randn(B, N_K, D, device=dev), torch.tensor([5, 2], device=dev))),
    ("MultiHeadAttention grouped", lambda: ac.MultiHeadAttention(D, 4, num_kv_heads=2, query_size=D,
                                                                 key_size=D, value_size=D),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                  torch.randn(B, N_K, D, device=dev), torch.tensor([5, 0], device=dev))),
    ("MultiHeadAttention multi-query, weights", lambda: ac.MultiHeadAttention(
        D, 4, num_kv_heads=1, query_size=D, key_size=D, value_size=D, need_weights=True),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                  torch.randn(B, N_K, D, device=dev), torch.tensor([5, 2], device=dev))),
    ("TransformerEncoderBlock", lambda: TransformerEncoderBlock(D, 16, 2, num_kv_heads=1),
     lambda dev: (torch.randn(B, N_K, D, device=dev), torch.tensor([5, 2], device=dev))),
    ("Transformer", lambda: make_transformer(7, 9, num_hiddens=D, ffn_num_hiddens=16, num_heads=2),
     lambda dev: (torch.randint(7, (B, N_K), device=dev), torch.randint(9, (B, N_Q), device=dev),
                  torch.tensor([5, 2], device=dev))),
    ("Transformer, cached decoding steps", CachedSteps,
     lambda dev: (torch.randint(7, (B, N_K), device=dev), torch.randint(9, (B, N_Q), device=dev),
                  torch.tensor([5, 2], device=dev))),
    ("AttentionDecoder (Bahdanau)", BahdanauSteps,
     lambda dev: (torch.randn(B, N_K, D, device=dev), torch.randint(9, (B, N_Q), device=dev),
                  torch.tensor([5, 2], device=dev))),
    ("FetchModel", lambda: FetchModel(FetchTask(), num_hiddens=16, num_heads=4, num_kv_heads=2),
     lambda dev: (torch.randn(B, 1, FetchTask().query_size, device=dev),
                  torch.randn(B, FetchTask().n_items, FetchTask().item_size, device=dev))),
    ("LocalAttention m", lambda: LocalAttention(1, "m"),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                  torch.randn(B, N_K, 4, device=dev), torch.tensor([5, 2], device=dev))),
    ("LocalAttention p", lambda: LocalAttention(1, "p", query_size=D),
     lambda dev: (torch.randn(B, N_Q, D, device=dev), torch.randn(B, N_K, D, device=dev),
                  torch.randn(B, N_K, 4, device=dev), torch.tensor([5, 2], device=dev))),
    ("PositionalEncoding", lambda: ac.PositionalEncoding(D),
     lambda dev: (torch.randn(B, N_K, D, device=dev),)),
    ("LearnedPositionalEncoding", lambda: ac.LearnedPositionalEncoding(D, max_len=16),
     lambda dev: (torch.randn(B, N_K, D, device=dev),)),
    ("RotaryEmbedding", lambda: ac.RotaryEmbedding(D),
     lambda dev: (torch.randn(B, 2, N_K, D, device=dev),)),
    ("NWKernelRegression", lambda: ac.NWKernelRegression(0.5),
     lambda dev: (torch.randn(7, device=dev), torch.randn(N_K, device=dev),
                  torch.randn(N_K, device=dev))),
]
IDS = [c[0] for c in CASES]


def run(case, device, eval_mode=True):
    _, make, inputs = case
    torch.manual_seed(0)
    module = make().to(device)
    module.train(not eval_mode)
    args = inputs(device)
    module(*args)  # materialise lazy layers
    return module, args


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_runs_on_the_meta_device(case):
    module, args = run(case, "cpu")
    expected = module(*args)
    module = module.to("meta")
    out = module(*(a.to("meta") for a in args))
    assert out.device.type == "meta" and out.shape == expected.shape


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow)
                                  if c[0].startswith("Transformer") else c for c in CASES], ids=IDS)
def test_forward_compiles_without_a_graph_break(case):
    torch._dynamo.reset()
    module, args = run(case, "cpu")
    expected = module(*args)
    compiled = torch.compile(module, fullgraph=True, backend="eager")
    # Dynamo traces nn.GRU (the Bahdanau decoder) only with its RNN support switched on
    with torch._dynamo.config.patch(allow_rnn=True):
        torch.testing.assert_close(compiled(*args), expected)


@pytest.mark.parametrize("backend", sorted(ac.BACKENDS))
def test_attend_on_meta_and_compiled(backend):
    q, k, v = (torch.randn(2, 3, n, 8) for n in (4, 6, 6))
    mask = torch.rand(2, 1, 4, 6) > 0.2
    expected, _ = ac.attend(q, k, v, mask, backend=backend)
    out, _ = ac.attend(*(t.to("meta") for t in (q, k, v, mask)), backend=backend)
    assert out.shape == expected.shape and out.device.type == "meta"
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: ac.attend(*a, is_causal=True, backend=backend)[0],
                             fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(q, k, v, mask), ac.attend(q, k, v, mask, is_causal=True,
                                                                    backend=backend)[0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_no_host_device_synchronisation_on_cuda(case):
    module, args = run(case, "cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        module(*args)
    finally:
        torch.cuda.set_sync_debug_mode("default")


@pytest.mark.slow
def test_import_pulls_in_nothing_heavier_than_torch():
    """The book's dependencies stay out of the library: after `import attention_core`, no
    module of matplotlib, ipywidgets, IPython, tqdm or sacrebleu is loaded that `import
    torch` alone did not load (torch.hub imports tqdm by itself)."""
    code = ("import sys; heavy = {'matplotlib', 'ipywidgets', 'IPython', 'tqdm', 'sacrebleu'}; "
            "import torch; before = {m for m in sys.modules if m.split('.')[0] in heavy}; "
            "import attention_core; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy and m not in before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
