"""Contracts: what each public function and layer accepts, declared once, above its code.

    @contract(queries="B n_q d", keys="B n_k d", values="B n_k d_v",
              valid_lens=lengths(per="B n_q", upto="n_k"))
    def forward(self, queries, keys, values, valid_lens=None):
        ...

Each keyword names an argument and says what it must be. A string is the shape of a
floating-point tensor, a word per axis: a name (``B``, ``n_q``, ``d``) binds the size it meets
first and must meet it again wherever it reappears, in any argument; a number is that size;
``_`` any size; ``*h`` any number of axes (none included, at most five), bound as a tuple;
``self.name`` the layer's attribute (unchecked while None, as a lazy layer's input size).
``tensor(shape, dtype)`` asks for another dtype ("int", "bool", "any"); ``lengths``,
``scores_mask``, ``each`` (a list of tensors), ``size`` (an int that binds a symbol),
``positive_int``, ``probability``, ``one_of``, ``instance_of``, ... are the other specs.

``where=[...]`` adds rules over several arguments: ``require(predicate, message)``, whose
predicate names the arguments it reads, or a named one (``grouped_heads``,
``broadcast_like_torch``). An argument whose default is None may be None. A call's floating
tensors share a dtype, and all its tensors a device.

Errors (ValueError, or TypeError for a type or dtype) name the argument, its shape and what
was expected. A contract reads shapes, dtypes, devices and Python values, never a tensor's
values (but valid lengths on the CPU, free to read), so it runs on the ``meta`` device, traces
under ``torch.compile(fullgraph=True)`` and never makes the host wait for a GPU.

The function without its contract is ``f.__wrapped__``, which a layer that has checked an
input calls, so that a call is checked once, at the public entry."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence

import torch

MAX_EXTRA_AXES = 5  # a "*h" group: up to five axes (ranks up to 8 for "B *h n d")
# How an error message speaks of a shape's symbols: the legend of ``help(attention_core)``
WORDS = {"B": "batch", "n_q": "n_queries", "n_k": "n_keys", "h": "heads", "h_kv": "heads",
         "C": "channels", "H": "height", "W": "width"}
# ... and of where a size came from, when another argument bound it
ORIGINS = {"B": "the batch size of {arg}", "n_q": "the number of queries",
           "n_k": "the number of keys", "d": "the feature size of {arg}",
           "d_q": "the feature size of {arg}", "h": "the number of heads of {arg}"}


def shape_of(x) -> tuple:
    return tuple(x.shape)


def origin_of(symbol: str, arg: str) -> str:
    """How a message names the size ``symbol`` that argument ``arg`` bound."""
    return ORIGINS.get(symbol, f"{symbol} of {{arg}}").format(arg=arg)


# ---- the decorator ------------------------------------------------------------------------
def contract(where: Sequence = (), **specs):
    """Check the named arguments against their specs, in the order given (a spec may read the
    sizes an earlier one bound), then ``where``'s rules, at every call."""
    specs = {name: Tensor(s) if isinstance(s, str) else s for name, s in specs.items()}

    def decorate(fn):
        params = list(inspect.signature(fn).parameters.values())
        index = {p.name: i for i, p in enumerate(params)}
        if set(specs) - set(index):
            raise TypeError(f"contract of {fn.__qualname__} names no argument "
                            f"{sorted(set(specs) - set(index))}")
        # (name, position, default, spec, None allowed) for each checked argument; the specs
        # that read sizes other arguments bind (lengths, masks) come last, whatever the order
        checked = sorted([(name, index[name], params[index[name]].default, spec,
                           params[index[name]].default is None or spec.none_ok)
                          for name, spec in specs.items()], key=lambda c: c[3].reads_others)
        method = bool(params) and params[0].name == "self"
        needed = {n for rule in where for n in rule.names} - set(specs) - {"self"}

        @functools.wraps(fn)
        def checked_call(*args, **kwargs):
            call = Call(args[0] if method and args else None)
            for name, i, default, spec, optional in checked:
                value = args[i] if i < len(args) else kwargs.get(name, default)
                call.args[name] = value
                if value is not None or not optional:
                    spec.check(name, value, call)
            call.finish()
            for name in needed:
                i = index[name]
                call.args[name] = args[i] if i < len(args) else kwargs.get(name,
                                                                           params[i].default)
            for rule in where:
                rule.check(call)
            return fn(*args, **kwargs)

        checked_call.contract = specs  # what it declares, for readers and tests
        return checked_call

    return decorate


def shapes(fn) -> dict:
    """The shape a contract gives each tensor argument of ``fn``, e.g. {"queries": "B n_q d"}."""
    return {name: s.shape for name, s in fn.contract.items() if isinstance(s, Tensor)}


class Call:
    """One call being checked: its arguments, the sizes bound and by which argument."""

    __slots__ = ("owner", "args", "sizes", "bound_by", "floats", "tensors")

    def __init__(self, owner):
        self.owner = owner                      # the layer (``self``), or None
        self.args, self.sizes, self.bound_by = {"self": owner}, {}, {}
        self.floats, self.tensors = [], []

    def finish(self):
        for what, named in (("device", self.tensors), ("dtype", self.floats)):
            if len(named) > 1 and any(getattr(t, what) != getattr(named[0][1], what)
                                      for _, t in named[1:]):
                listed = ", ".join(f"{n}: {getattr(t, what)}" for n, t in named)
                raise ValueError(f"tensors must share one {what}, got {listed}")


# ---- specs: what one argument must be -----------------------------------------------------
class Spec:
    none_ok = False       # whether None is accepted even where the default is not None
    reads_others = False  # whether it reads sizes or arguments that other specs check

    def check(self, name: str, value, call: Call) -> None:
        raise NotImplementedError


class Tensor(Spec):
    """A tensor of a shape (see the module's docstring) and a kind of dtype; ``what`` follows
    the layout in messages, e.g. tensor("B n", "int", "token indices")."""

    DTYPES = {"float": "have a floating dtype", "int": "have an integer dtype",
              "bool": "be boolean", "any": "be any tensor"}

    def __init__(self, shape: str, dtype: str = "float", what: str = ""):
        self.shape, self.dtype, self.what = shape, dtype, what
        self.axes = [_axis(w) for w in shape.split()]
        groups = sum(kind == "group" for kind, _ in self.axes)
        if groups > 1:
            raise ValueError(f"a shape holds at most one group of axes, got {shape!r}")
        fixed = len(self.axes) - groups
        self.ranks = range(fixed, fixed + 1 + MAX_EXTRA_AXES * groups)

    def layout(self) -> str:
        words = [f"[{WORDS.get(n, n)},]" if kind == "group" else str(WORDS.get(n, n))
                 for kind, n in self.axes]
        text = " ".join(w if w.endswith(",]") or i == len(words) - 1 else w + ","
                        for i, w in enumerate(words))
        return f"({text})" + (f" {self.what}" if self.what else "")

    def check(self, name, value, call):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        dtype, kind = value.dtype, self.dtype
        if kind == "float":
            fits = dtype.is_floating_point
        elif kind == "int":
            fits = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
        else:
            fits = kind == "any" or dtype == torch.bool
        if not fits:
            what = f" {self.what}" if kind == "bool" and self.what else ""
            raise TypeError(f"{name} must {self.DTYPES[kind]}{what}, got {dtype} with shape "
                            f"{shape_of(value)}")
        if value.dim() not in self.ranks:
            raise ValueError(f"{name} must be {self.layout()}, got shape {shape_of(value)}")
        self.bind(name, value, call)
        call.tensors.append((name, value))
        if kind == "float":
            call.floats.append((name, value))

    def bind(self, name, value, call):
        """Bind each axis's size, or compare it with the size bound before."""
        shape, extra, dim = value.shape, value.dim() - len(self.axes), 0
        for kind, symbol in self.axes:
            if kind == "group":
                _agree(name, value, dim, symbol, tuple(shape[dim:dim + extra + 1]), call)
                dim += extra + 1
                continue
            size = shape[dim]
            if kind == "symbol":
                _agree(name, value, dim, symbol, size, call)
            elif kind == "fixed" and size != symbol:
                raise ValueError(f"{name} must be {self.layout()}, got shape {shape_of(value)}")
            elif kind == "attr":
                expected = getattr(call.owner, symbol)
                if expected is not None and size != expected:
                    raise ValueError(f"{name} has size {size} in dimension {dim} (shape "
                                     f"{shape_of(value)}), but this layer's {symbol} is "
                                     f"{expected}")
            dim += 1


def _axis(word: str) -> tuple:
    """A word of a shape as (kind, symbol): symbol, fixed, any (_), group (*h), attr (self.x)."""
    if word == "_":
        return "any", "_"
    if word.isdigit():
        return "fixed", int(word)
    if word.startswith("*") and word[1:].isidentifier():
        return "group", word[1:]
    if word.startswith("self.") and word[5:].isidentifier():
        return "attr", word[5:]
    if word.isidentifier():
        return "symbol", word
    raise ValueError(f"cannot read {word!r} in a shape")


def _agree(name, value, dim, symbol, size, call):
    """Bind ``symbol`` to ``size``, or require the size it is bound to."""
    bound = call.sizes.get(symbol)
    if bound is None:
        call.sizes[symbol], call.bound_by[symbol] = size, name
    elif bound != size:
        if isinstance(size, tuple):
            raise ValueError(f"{name} of shape {shape_of(value)} has {symbol} = {size}, but "
                             f"{call.bound_by[symbol]} has {symbol} = {bound}")
        raise ValueError(f"{name} has size {size} in dimension {dim} (shape {shape_of(value)}), "
                         f"but {origin_of(symbol, call.bound_by[symbol])} is {bound}")


class Each(Spec):
    """A non-empty list or tuple of tensors of one shape (sizes shared as in one argument);
    messages name ``weights[i]``."""

    def __init__(self, shape: str, dtype: str = "float"):
        self.item = Tensor(shape, dtype)

    def check(self, name, value, call):
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError(f"{name} must be a non-empty list of tensors {self.item.layout()}, "
                             f"got {value!r:.60}")
        for i, item in enumerate(value):
            self.item.check(f"{name}[{i}]", item, call)


class Lengths(Spec):
    """Valid lengths (B,), or (B, n_q) where ``per`` names a second size, a tensor or a list,
    with values in [``at_least``, ``upto``], checked where reading them is free (a list, a CPU
    tensor outside compiled code). A size is a bound symbol or an axis, ``"scores[-2]"``."""

    none_ok = True  # no lengths: every position is valid
    reads_others = True

    def __init__(self, per: str = "B n_q", upto: str = "n_k", at_least: int = 0):
        self.per, self.upto = [SizeRef(r) for r in per.split()], SizeRef(upto)
        self.at_least = at_least

    def check(self, name, value, call):
        given = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        if given.dtype == torch.bool or given.is_complex():
            raise TypeError(f"{name} must hold lengths, got dtype {given.dtype}")
        shape, batch = shape_of(given), self.per[0].size(call)
        if batch is None and shape:
            batch = shape[0]
        if shape != (batch,) and (len(self.per) == 1 or shape != (batch, self.per[1].size(call))):
            allowed = [f"({batch},)"] + [str((batch, ref.size(call))) for ref in self.per[1:]]
            per = " or per query" if len(self.per) > 1 else ""
            raise ValueError(f"{name} of shape {shape} must be {' or '.join(allowed)}: one "
                             f"length per sequence{per}")
        high = self.upto.size(call)
        if high is not None and given.device.type == "cpu" and given.numel() \
                and not torch.compiler.is_compiling():
            values = given.flatten().tolist()                  # free to read on the CPU
            whole = not given.is_floating_point() or all(float(v).is_integer() for v in values)
            if min(values) < self.at_least or max(values) > high or not whole:
                raise ValueError(f"{name} must be whole numbers in [{self.at_least}, {high}] "
                                 f"({self.upto.phrase(call)}), got {given.tolist()}")


class SizeRef:
    """A size a contract names: a bound symbol, or ``arg[axis]``, an axis of an argument."""

    __slots__ = ("symbol", "arg", "axis")

    def __init__(self, ref: str):
        arg, _, axis = ref.rstrip("]").partition("[")
        self.symbol, self.arg, self.axis = (None, arg, int(axis)) if axis else (ref, None, None)

    def size(self, call: Call):  # None where it is unknown
        if self.symbol is not None:
            return call.sizes.get(self.symbol)
        shape = call.args[self.arg].shape
        return shape[self.axis] if -len(shape) <= self.axis < len(shape) else None

    def phrase(self, call: Call) -> str:
        if self.symbol is not None:
            return origin_of(self.symbol, call.bound_by.get(self.symbol, ""))
        return f"the size of {self.arg} in dimension {self.axis}"


class Size(Spec):
    """A Python int >= 0 that binds a symbol of the shapes, e.g. ``n_keys=size("n_k")``."""

    def __init__(self, symbol: str):
        self.symbol = symbol

    def check(self, name, value, call):
        if not non_negative_int.test(value):
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        call.sizes[self.symbol], call.bound_by[self.symbol] = value, name


class ScoresMask(Spec):
    """A mask for attention scores, boolean (True = may attend) or floating (added to them),
    broadcastable to the scores (B, *h, n_q, n_k) as torch broadcasts queries, keys, values."""

    reads_others = True

    def check(self, name, value, call):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.dtype != torch.bool and not value.is_floating_point():
            raise TypeError(f"{name} must be boolean (True = may attend) or floating (added to "
                            f"the scores), got {value.dtype}")
        q, k = call.args["queries"], call.args["keys"]
        lead = leading_shapes(q.shape, k.shape, call.args.get("values", k).shape)
        scores = (*(q.shape[:-2] if lead is None else lead[0]), q.shape[-2], k.shape[-2])
        try:
            fits = torch.broadcast_shapes(value.shape, scores) == scores
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"{name} of shape {shape_of(value)} does not broadcast to the "
                             f"scores' shape {scores} (batch, [heads,] n_queries, n_keys)")


class Value(Spec):
    """A Python value that ``test`` accepts; ``expected`` completes "{name} must ..."."""

    def __init__(self, test: Callable[[object], bool], expected: str, error=ValueError):
        self.test, self.expected, self.error = test, expected, error

    def check(self, name, value, call):
        if not self.test(value):
            got = type(value).__name__ if self.error is TypeError else repr(value)
            raise self.error(f"{name} must {self.expected}, got {got}")


class OneOf(Spec):
    """One of ``choices``, or a key of one dict passed alone (read at each call, live)."""

    def __init__(self, *choices):
        self.pool = choices[0] if len(choices) == 1 and isinstance(choices[0], dict) else choices

    def check(self, name, value, call):
        if value not in self.pool:
            raise ValueError(f"{name} must be one of {sorted(self.pool, key=str)}, got {value!r}")


class PositiveOrScalar(Spec):
    """A positive number, or a scalar tensor (a learned value, which is not read)."""

    def check(self, name, value, call):
        if not isinstance(value, torch.Tensor):
            positive.check(name, value, call)
        elif value.dim() != 0:
            raise ValueError(f"{name} must be a scalar tensor, got shape {shape_of(value)}")


def instance_of(cls, what: str = "") -> Value:
    return Value(lambda v: isinstance(v, cls), f"be {what or 'a ' + cls.__name__}", TypeError)


# the spellings contracts use
tensor, each, lengths, size, one_of = Tensor, Each, Lengths, Size, OneOf
scores_mask, positive_or_scalar = ScoresMask(), PositiveOrScalar()
positive_int = Value(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                     "be a positive int")
non_negative_int = Value(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                         "be an int >= 0")
probability = Value(lambda v: isinstance(v, (int, float)) and 0.0 <= v < 1.0, "be in [0, 1)")
positive = Value(lambda v: isinstance(v, (int, float)) and v > 0, "be positive")
non_negative = Value(lambda v: isinstance(v, (int, float)) and v >= 0, "be non-negative")


# ---- rules over several arguments ----------------------------------------------------------
class Require:
    """A rule: ``predicate``'s parameters name the arguments it reads (``self`` for the layer),
    unless ``names`` lists them; ``message`` is the error's text, formatted with those
    arguments ("num_hiddens ({num_hiddens}) ..."), or a function of them that returns it."""

    def __init__(self, predicate: Callable, message: str | Callable, error=ValueError,
                 names: Sequence[str] | None = None):
        self.predicate, self.message, self.error = predicate, message, error
        self.names = tuple(names or inspect.signature(predicate).parameters)

    def check(self, call: Call) -> None:
        values = [call.args[n] for n in self.names]
        if not self.predicate(*values):
            if callable(self.message):
                raise self.error(self.message(*values))
            raise self.error(self.message.format(**dict(zip(self.names, values))))


require = Require


def leading_shapes(q_shape, k_shape, v_shape):
    """The leading axes (batch ..., heads) that queries and keys/values expand to when torch's
    ``scaled_dot_product_attention`` broadcasts them (right-aligned, size 1 against any size),
    keys and values keeping a head count (axis -3 of rank >= 4) that divides the queries'
    (grouped-query attention). Returns (queries' leading shape, keys'/values' leading shape), or
    None when they do not broadcast."""
    if q_shape[:-2] == k_shape[:-2] == v_shape[:-2]:                   # the usual case
        return tuple(q_shape[:-2]), tuple(q_shape[:-2])
    rank = max(len(q_shape), len(k_shape), len(v_shape))
    q, k, v = ((1,) * (rank - len(s)) + tuple(s[:-2]) for s in (q_shape, k_shape, v_shape))
    try:
        batch = tuple(torch.broadcast_shapes(q[:-1], k[:-1], v[:-1]))
        if rank >= 4 and k[-1] == v[-1] and k[-1] not in (1, q[-1]) and q[-1] % k[-1] == 0:
            return batch + q[-1:], batch + k[-1:]                 # grouped heads
        last = tuple(torch.broadcast_shapes(q[-1:], k[-1:], v[-1:]))
    except RuntimeError:
        return None
    return batch + last, batch + last


# queries, keys and values whose leading (batch, head) axes broadcast as torch's
# scaled_dot_product_attention broadcasts them, grouped heads included
broadcast_like_torch = require(
    lambda queries, keys, values: leading_shapes(queries.shape, keys.shape, values.shape)
    is not None,
    lambda q, k, v: f"queries {shape_of(q)}, keys {shape_of(k)} and values {shape_of(v)}: their "
    f"leading (batch, head) axes do not broadcast (right-aligned, size 1 against any size; "
    f"key/value heads may also divide the query heads)")


def _heads_group(queries, keys) -> bool:
    """Keys of the queries' rank and leading axes, except that the last of them (the heads, for
    ranks >= 4) may be fewer heads that divide the queries' (query head i reads key/value head
    i // (h / h_kv)); the shapes name these axes ``*h`` and ``*h_kv``."""
    h, h_kv = queries.shape[1:-2], keys.shape[1:-2]
    return len(h) == len(h_kv) and h[:-1] == h_kv[:-1] and (
        not h or (h_kv[-1] > 0 and h[-1] % h_kv[-1] == 0))


def _heads_apart(q, k) -> str:
    if q.dim() != k.dim():
        return f"keys of shape {shape_of(k)} must have the rank of queries {shape_of(q)}"
    return (f"keys and values have head axes {shape_of(k)[1:-2]} and queries "
            f"{shape_of(q)[1:-2]}: they must be equal, except that the last (the heads) may be "
            f"a divisor of the queries' (grouped heads)")


grouped_heads = require(_heads_group, _heads_apart)
