"""attention_core.contracts: shapes that bind across arguments, the messages a bad argument
gets, the cost-free route around a contract, and the rule that every public callable of the
mechanisms declares one that its docstring agrees with."""
import importlib
import inspect
import pkgutil
import re

import pytest
import torch
from torch import nn

import attention_core as ac
from attention_core.contracts import (
    contract,
    each,
    grouped_heads,
    lengths,
    one_of,
    positive_int,
    require,
    scores_mask,
    shapes,
    size,
)


@contract(queries="B *h n_q d", keys="B *h_kv n_k d", values="B *h_kv n_k d_v",
          valid_lens=lengths(), mask=scores_mask, where=[grouped_heads])
def attention(queries, keys, values, valid_lens=None, mask=None):
    group = queries.shape[-3] // keys.shape[-3] if queries.dim() > 3 else 1
    keys, values = keys.repeat_interleave(group, -3), values.repeat_interleave(group, -3)
    return torch.softmax(queries @ keys.transpose(-2, -1), -1) @ values


class Layer(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.width = width

    @contract(X="B n self.width", steps=positive_int,
              where=[require(lambda X, steps: steps <= X.shape[1],
                             lambda X, steps: f"steps={steps} beyond the {X.shape[1]} rows of X")])
    def forward(self, X, steps=1):
        return X[:, :steps]


def raises(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value), str(info.value)


def test_a_symbol_binds_where_it_first_appears_and_holds_across_arguments():
    q, k = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    assert attention(q, k, torch.randn(2, 5, 4)).shape == (2, 3, 4)
    raises(lambda: attention(q, torch.randn(2, 5, 7), k), ValueError,
           "keys has size 7 in dimension 2 (shape (2, 5, 7)), but the feature size of queries is 8")
    raises(lambda: attention(q, k, torch.randn(2, 6, 4)), ValueError,
           "values has size 6 in dimension 1 (shape (2, 6, 4)), but the number of keys is 5")
    raises(lambda: attention(q, torch.randn(3, 5, 8), k), ValueError,
           "but the batch size of queries is 2")


def test_a_group_takes_any_number_of_axes_and_grouped_heads_may_divide():
    q, kv = torch.randn(2, 4, 3, 8), torch.randn(2, 2, 5, 8)
    assert attention(q, kv, kv).shape == (2, 4, 3, 8)                 # 2 key/value heads for 4
    raises(lambda: attention(q, torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8)), ValueError,
           "the last (the heads) may be a divisor of the queries'")
    raises(lambda: attention(q, torch.randn(2, 5, 8), torch.randn(2, 5, 8)), ValueError,
           "must have the rank of queries")
    raises(lambda: attention(torch.randn(3, 8), kv, kv), ValueError,
           "queries must be (batch, [heads,] n_queries, d), got shape (3, 8)")


def test_types_dtypes_devices_and_lengths_are_named():
    q = torch.randn(2, 3, 8)
    raises(lambda: attention("q", q, q), TypeError, "queries must be a torch.Tensor, got str")
    raises(lambda: attention(q.long(), q, q), TypeError, "queries must have a floating dtype")
    raises(lambda: attention(q, q.double(), q), ValueError, "tensors must share one dtype")
    raises(lambda: attention(q, q.to("meta"), q), ValueError, "tensors must share one device")
    raises(lambda: attention(q, q, q, [1, 2, 3]), ValueError,
           "valid_lens of shape (3,) must be (2,) or (2, 3): one length per sequence or per query")
    raises(lambda: attention(q, q, q, torch.tensor([1, 4])), ValueError,
           "valid_lens must be whole numbers in [0, 3] (the number of keys), got [1, 4]")
    raises(lambda: attention(q, q, q, torch.tensor([True, False])), TypeError,
           "valid_lens must hold lengths")
    raises(lambda: attention(q, q, q, mask=torch.ones(2, 4, dtype=torch.bool)), ValueError,
           "mask of shape (2, 4) does not broadcast to the scores' shape (2, 3, 3)")


def test_a_layers_sizes_and_rules_over_several_arguments():
    layer = Layer(4)
    raises(lambda: layer(torch.randn(2, 3, 5)), ValueError,
           "X has size 5 in dimension 2 (shape (2, 3, 5)), but this layer's width is 4")
    raises(lambda: layer(torch.randn(2, 3, 4), 0), ValueError,
           "steps must be a positive int, got 0")
    raises(lambda: layer(torch.randn(2, 3, 4), 5), ValueError, "steps=5 beyond the 3 rows of X")
    layer.width = None                                            # unknown, as a lazy layer's
    assert layer(torch.randn(2, 3, 5)).shape == (2, 1, 5)


def test_sizes_from_python_values_lists_of_tensors_and_live_choices():
    @contract(n=size("n"), items=each("n d"), name=one_of(ac.BACKENDS))
    def f(n, items, name="math"):
        return len(items)

    assert f(2, [torch.zeros(2, 3), torch.zeros(2, 3)]) == 2
    raises(lambda: f(3, [torch.zeros(3, 1), torch.zeros(2, 1)]), ValueError,
           "items[1] has size 2 in dimension 0 (shape (2, 1)), but n of n is 3")
    raises(lambda: f(2, []), ValueError, "items must be a non-empty list of tensors (n, d)")
    raises(lambda: f(1, [torch.zeros(1, 1)], "nope"), ValueError, "name must be one of")
    assert "chunked" in ac.BACKENDS and f(1, [torch.zeros(1, 1)], "chunked") == 1  # added later


def test_none_is_accepted_where_the_default_is_none():
    q = torch.randn(1, 2, 4)
    assert attention(q, q, q, None, None).shape == (1, 2, 4)
    raises(lambda: Layer(4)(None), TypeError, "X must be a torch.Tensor, got NoneType")


def test_the_body_without_its_contract_is_wrapped():
    q = torch.randn(1, 2, 4)
    assert attention.__wrapped__(q, q, q).shape == (1, 2, 4)
    assert attention.__wrapped__(q, torch.randn(1, 2, 4), q, valid_lens=[9]) is not None
    assert inspect.signature(attention) == inspect.signature(attention.__wrapped__)


def test_a_contract_naming_no_argument_is_refused_when_declared():
    with pytest.raises(TypeError, match=r"names no argument \['y'\]"):
        contract(y="n")(lambda x: x)


def test_contracts_run_on_meta_and_compile_without_a_graph_break():
    q = torch.randn(2, 4, 3, 8)
    out = attention(q.to("meta"), q.to("meta"), q.to("meta"), torch.tensor([1, 2]))
    assert out.shape == (2, 4, 3, 8) and out.device.type == "meta"
    torch._dynamo.reset()
    compiled = torch.compile(attention, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(q, q, q, torch.tensor([1, 2])), attention(q, q, q))


# ---- every public callable of the mechanisms has a contract that its docstring agrees with
CORE = [importlib.import_module(f"attention_core.{m.name}")
        for m in pkgutil.iter_modules(ac.__path__) if not m.ispkg and m.name != "contracts"]
# methods that only extend a checked method of their base class, with what checks them
EXTENDS = {"SampledAttention.__init__": "AdditiveAttention.__init__",
           "SampledAttention.forward": "AdditiveAttention.forward"}


def public_callables():
    """(qualified name, function, the docstrings that may describe it) for every function in
    a core module's __all__, and every __init__ and forward of its nn.Modules."""
    for module in CORE:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj, [obj.__doc__ or ""]
            elif inspect.isclass(obj) and issubclass(obj, nn.Module):
                for method in ("__init__", "forward"):
                    fn = obj.__dict__.get(method)
                    if fn is not None:
                        yield (f"{module.__name__}.{name}.{method}", fn,
                               [fn.__doc__ or "", obj.__doc__ or ""])


CALLABLES = list(public_callables())


def test_every_core_module_says_what_is_public():
    assert all(hasattr(module, "__all__") for module in CORE), \
        [m.__name__ for m in CORE if not hasattr(m, "__all__")]


@pytest.mark.parametrize("qualname, fn, docs", CALLABLES, ids=[c[0] for c in CALLABLES])
def test_every_public_callable_has_a_contract(qualname, fn, docs):
    takes = [p for p in inspect.signature(fn).parameters if p != "self"]
    short = ".".join(qualname.split(".")[-2:])
    if not takes or short in EXTENDS:
        return
    assert hasattr(fn, "contract"), f"{qualname} takes {takes} but declares no contract"


def rendered(shape: str) -> str:
    """A contract's shape as the docstrings write it: "B *h n_q d" -> "(B, *h, n_q, d)"."""
    words = [w[len("self."):] if w.startswith("self.") else w for w in shape.split()]
    return "(" + ", ".join(words) + ("," if len(words) == 1 else "") + ")"


@pytest.mark.parametrize("qualname, fn, docs", CALLABLES, ids=[c[0] for c in CALLABLES])
def test_the_docstring_gives_each_tensors_shape_as_its_contract_does(qualname, fn, docs):
    for name, shape in (shapes(fn) if hasattr(fn, "contract") else {}).items():
        if len(shape.split()) == 1 and shape.startswith("*"):
            continue                                              # any shape: nothing to say
        expected = rendered(shape)
        pattern = re.compile(rf"\b{re.escape(name)}`*:?\s+" + r",\s+".join(
            re.escape(w) for w in expected.split(", ")))
        assert any(pattern.search(doc) for doc in docs), \
            f"{qualname}: no docstring says `{name} {expected}` (the contract's shape)"


def test_the_order_of_a_contracts_keywords_does_not_matter():
    @contract(valid_lens=lengths(per="B", upto="n_k"), keys="B n_k d")   # lengths named first
    def f(keys, valid_lens=None):
        return keys

    raises(lambda: f(torch.zeros(2, 3, 4), torch.tensor([1, 9])), ValueError,
           "valid_lens must be whole numbers in [0, 3] (the number of keys), got [1, 9]")


def test_a_rules_message_may_be_a_template_of_its_arguments():
    @contract(where=[require(lambda a, b: a % b == 0, "a ({a}) must be a multiple of b ({b})")])
    def f(a, b):
        return a // b

    assert f(6, 3) == 2
    raises(lambda: f(7, 3), ValueError, "a (7) must be a multiple of b (3)")
