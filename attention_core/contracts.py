"""Contracts: what each public function and layer accepts, declared once, above its code.

    @contract(queries="B n_q d", keys="B n_k d", values="B n_k d_v",
              valid_lens=lengths(per="B n_q", upto="n_k"))
    def forward(self, queries, keys, values, valid_lens=None):
        ...

Each keyword names an argument and says what it must be:

* a string is the shape of a floating-point tensor, one word per axis. A name (``B``, ``n_q``,
  ``d``) binds the size it meets first and must meet the same size wherever it appears again,
  in this argument or another; a number is that size; ``_`` is any size; ``*h`` is any number
  of axes (none included, at most five), bound as a tuple; ``self.name`` is the layer's
  attribute of that name (not checked while it is None, as for a lazy layer's input size).
  ``tensor(shape, dtype=...)`` asks for another dtype: "int" (token indices), "bool", "any";
* ``lengths(...)`` valid lengths, ``scores_mask`` a mask for attention scores;
* ``positive_int``, ``probability``, ``positive``, ``non_negative``, ``one_of(...)`` and
  ``instance_of(...)`` Python values.

``where=[...]`` adds rules that involve several arguments: ``require(predicate, message)``, whose
predicate names the arguments it reads, or one of the named rules below (grouped heads,
torch's broadcasting). An argument whose default is None may be None. The floating tensors
of one call share a device and a dtype.

Errors are a ValueError (a shape or a value) or a TypeError (a type or a dtype) that names the
argument, its shape and what was expected. A contract reads shapes, dtypes, devices and
Python values, never a tensor's values (except valid lengths held on the CPU, which cost no
wait): it runs on the ``meta`` device, traces under ``torch.compile(fullgraph=True)`` and never
makes the host wait for a GPU.

The function without its contract is ``f.__wrapped__``: a layer that has checked an input
calls that, so that a call is checked once, at the public entry.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence

import torch
from torch.nn.modules.lazy import LazyModuleMixin

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


# ---- the decorator ------------------------------------------------------------------------
def contract(where: Sequence = (), **specs):
    """Check the named arguments against their specs, then ``where``'s rules, at every call."""

    def decorate(fn):
        signature = inspect.signature(fn)
        params = list(signature.parameters.values())
        unknown = set(specs) - {p.name for p in params}
        if unknown:
            raise TypeError(f"contract of {fn.__qualname__} names no argument {sorted(unknown)}")
        # each checked argument, in the contract's order: (name, position, default, spec,
        # None allowed); a spec may bind sizes that a later one reads
        index = {p.name: i for i, p in enumerate(params)}
        checked = [(name, index[name], params[index[name]].default, _spec(spec),
                    params[index[name]].default is None or getattr(_spec(spec), "none_ok", False))
                   for name, spec in specs.items()]
        rules = [r if isinstance(r, Rule) else require(r) for r in where]
        method = bool(params) and params[0].name == "self"
        needed = {name for rule in rules for name in rule.names} - {"self"}
        positions = {p.name: (i, p.default) for i, p in enumerate(params)}

        @functools.wraps(fn)
        def checked_call(*args, **kwargs):
            call = Call(args[0] if method and args else None)
            for name, i, default, spec, optional in checked:
                value = args[i] if i < len(args) else kwargs.get(name, default)
                call.args[name] = value
                if value is None and optional:
                    continue
                spec.check(name, value, call)
            call.finish()
            for name in needed:
                if name not in call.args:
                    i, default = positions[name]
                    call.args[name] = args[i] if i < len(args) else kwargs.get(name, default)
            for rule in rules:
                rule.check(call)
            return fn(*args, **kwargs)

        checked_call.contract = ContractInfo(specs, rules)
        return checked_call

    return decorate


class ContractInfo:
    """What a contract declares, kept on the decorated function as ``f.contract`` (for the
    tests that compare docstrings with contracts, and for readers who ask)."""

    def __init__(self, specs: dict, rules: list):
        self.specs = {name: _spec(s) for name, s in specs.items()}
        self.rules = rules

    def shapes(self) -> dict:
        """The shape string of every tensor argument, e.g. {"queries": "B n_q d", ...}."""
        return {name: s.shape for name, s in self.specs.items() if isinstance(s, Tensor)}


class Call:
    """One call being checked: the sizes bound so far, where each came from, the arguments
    seen, and the tensors whose device and dtype must agree."""

    __slots__ = ("owner", "sizes", "bound_by", "args", "floats", "devices")

    def __init__(self, owner):
        self.owner = owner                      # the layer (``self``), or None
        self.sizes, self.bound_by, self.args = {}, {}, {"self": owner}
        self.floats, self.devices = [], []

    def finish(self):
        """The floating tensors share one dtype, and all tensors one device."""
        _same("device", self.devices)
        _same("dtype", self.floats)


def _same(what: str, named: list) -> None:
    if len(named) > 1:
        first = getattr(named[0][1], what)
        if any(getattr(t, what) != first for _, t in named[1:]):
            listed = ", ".join(f"{n}: {getattr(t, what)}" for n, t in named)
            raise ValueError(f"tensors must share one {what}, got {listed}")


# ---- specs ---------------------------------------------------------------------------------
class Spec:
    """What one argument must be; ``check`` raises if it is not."""

    def check(self, name: str, value, call: Call) -> None:
        raise NotImplementedError


def _spec(spec) -> Spec:
    if isinstance(spec, str):
        return Tensor(spec)
    if isinstance(spec, Spec):
        return spec
    raise TypeError(f"a contract's spec must be a shape string or a Spec, got {spec!r}")


class Axis:
    """One word of a shape: a symbol, a fixed size, any size, a group of axes, or a layer's
    attribute."""

    __slots__ = ("kind", "name")

    def __init__(self, word: str):
        if word == "_":
            self.kind, self.name = "any", "_"
        elif word.isdigit():
            self.kind, self.name = "fixed", int(word)
        elif word.startswith("*"):
            self.kind, self.name = "group", word[1:]
        elif word.startswith("self."):
            self.kind, self.name = "attr", word[5:]
        elif word.isidentifier():
            self.kind, self.name = "symbol", word
        else:
            raise ValueError(f"cannot read {word!r} in a shape")

    def word(self) -> str:
        """The axis as an error message writes it."""
        if self.kind == "group":
            return f"[{WORDS.get(self.name, self.name)},]"
        return str(WORDS.get(self.name, self.name))


class Tensor(Spec):
    """A tensor of a shape (see the module's docstring) and a kind of dtype."""

    DTYPES = {"float": "have a floating dtype", "int": "have an integer dtype",
              "bool": "be boolean", "any": "be any tensor"}

    def __init__(self, shape: str, dtype: str = "float", what: str = ""):
        if dtype not in self.DTYPES:
            raise ValueError(f"dtype must be one of {sorted(self.DTYPES)}, got {dtype!r}")
        self.shape, self.dtype, self.what = shape, dtype, what
        self.axes = [Axis(w) for w in shape.split()]
        groups = [i for i, a in enumerate(self.axes) if a.kind == "group"]
        if len(groups) > 1:
            raise ValueError(f"a shape holds at most one group of axes, got {shape!r}")
        self.group = groups[0] if groups else None
        fixed = len(self.axes) - (self.group is not None)
        self.ranks = range(fixed, fixed + MAX_EXTRA_AXES + 1) if groups else range(fixed, fixed + 1)

    def layout(self) -> str:
        words = [a.word() for a in self.axes]
        text = " ".join(w if w.endswith(",]") or i == len(words) - 1 else w + ","
                        for i, w in enumerate(words))
        return f"({text})" + (f" {self.what}" if self.what else "")

    def check(self, name, value, call):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        self.check_dtype(name, value)
        if value.dim() not in self.ranks:
            raise ValueError(f"{name} must be {self.layout()}, got shape {shape_of(value)}")
        self.bind(name, value, call)
        call.devices.append((name, value))
        if self.dtype == "float":
            call.floats.append((name, value))

    def check_dtype(self, name, value):
        dtype, kind = value.dtype, self.dtype
        if kind == "float":
            fits = dtype.is_floating_point
        elif kind == "int":
            fits = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
        else:
            fits = kind == "any" or dtype == torch.bool
        if not fits:
            what = f" {self.what}" if self.dtype == "bool" and self.what else ""
            raise TypeError(f"{name} must {self.DTYPES[self.dtype]}{what}, got {dtype} with "
                            f"shape {shape_of(value)}")

    def bind(self, name, value, call):
        """Bind or compare each axis's size with the sizes bound so far."""
        shape, extra = value.shape, value.dim() - len(self.axes)
        dim = 0
        for axis in self.axes:
            if axis.kind == "group":
                sizes = tuple(shape[dim:dim + extra + 1])
                _agree(name, value, dim, axis.name, sizes, call)
                dim += extra + 1
                continue
            size = shape[dim]
            if axis.kind == "symbol":
                _agree(name, value, dim, axis.name, size, call)
            elif axis.kind == "fixed" and size != axis.name:
                raise ValueError(f"{name} must be {self.layout()}, got shape {shape_of(value)}")
            elif axis.kind == "attr":
                expected = getattr(call.owner, axis.name)
                if expected is not None and size != expected:
                    raise ValueError(f"{name} has size {size} in dimension {dim} (shape "
                                     f"{shape_of(value)}), but this layer's {axis.name} is "
                                     f"{expected}")
            dim += 1


def _agree(name, value, dim, symbol, size, call):
    """Bind ``symbol`` to ``size``, or require the size it is bound to."""
    bound = call.sizes.get(symbol)
    if bound is None:
        call.sizes[symbol], call.bound_by[symbol] = size, name
    elif bound != size:
        origin = origin_of(symbol, call.bound_by[symbol])
        if isinstance(size, tuple):
            raise ValueError(f"{name} of shape {shape_of(value)} has {symbol} = {size}, but "
                             f"{call.bound_by[symbol]} has {symbol} = {bound}")
        raise ValueError(f"{name} has size {size} in dimension {dim} (shape {shape_of(value)}), "
                         f"but {origin} is {bound}")


def origin_of(symbol: str, arg: str) -> str:
    """How a message names the size ``symbol`` that argument ``arg`` bound."""
    return ORIGINS.get(symbol, f"{symbol} of {{arg}}").format(arg=arg)


def tensor(shape: str, dtype: str = "float", what: str = "") -> Tensor:
    """A tensor spec with another dtype ("int", "bool", "any") or words after its layout,
    e.g. tensor("B n", "int", "token indices")."""
    return Tensor(shape, dtype, what)


class Each(Spec):
    """A non-empty list or tuple of tensors, each of one shape (its sizes shared, as in one
    argument): ``weights=each("B h n n")``; messages name ``weights[i]``."""

    def __init__(self, shape: str, dtype: str = "float"):
        self.item = Tensor(shape, dtype)

    def check(self, name, value, call):
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError(f"{name} must be a non-empty list of tensors "
                             f"{self.item.layout()}, got {type(value).__name__} "
                             f"{value if isinstance(value, (list, tuple)) else ''}".rstrip())
        for i, item in enumerate(value):
            self.item.check(f"{name}[{i}]", item, call)


def each(shape: str, dtype: str = "float") -> Each:
    return Each(shape, dtype)


class Lengths(Spec):
    """Valid lengths: one per sequence (B,) or, where ``per`` names a second size, one per query
    (B, n_q), as a tensor or a list, whose values lie in [``at_least``, ``upto``]. A size is a
    symbol bound before (``"B"``) or an axis of another argument (``"scores[-2]"``). The values
    are checked where reading them costs nothing: a list, or a CPU tensor outside compiled code.
    """

    none_ok = True  # no lengths: every position is valid

    def __init__(self, per: str = "B n_q", upto: str = "n_k", at_least: int = 0):
        self.per, self.upto, self.at_least = [SizeRef(r) for r in per.split()], SizeRef(upto), at_least

    def check(self, name, value, call):
        given = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        if given.dtype == torch.bool or given.is_complex():
            raise TypeError(f"{name} must hold lengths, got dtype {given.dtype}")
        shape = shape_of(given)
        batch = self.per[0].size(call)
        if batch is None and shape:
            batch = shape[0]
        if shape != (batch,) and (len(self.per) == 1 or shape != (batch, self.per[1].size(call))):
            allowed = [(batch,)] + [(batch, ref.size(call)) for ref in self.per[1:]]
            listed = " or ".join(str(a) if len(a) > 1 else f"({a[0]},)" for a in allowed)
            per = " or per query" if len(self.per) > 1 else ""
            raise ValueError(f"{name} of shape {shape} must be {listed}: one length "
                             f"per sequence{per}")
        high = self.upto.size(call)
        if high is not None and given.device.type == "cpu" and given.numel() \
                and not torch.compiler.is_compiling():
            values = given.flatten().tolist()                  # free to read on the CPU
            whole = not given.is_floating_point() or all(float(v).is_integer() for v in values)
            if min(values) < self.at_least or max(values) > high or not whole:
                raise ValueError(f"{name} must be whole numbers in [{self.at_least}, {high}] "
                                 f"({self.upto.phrase(call)}), got {given.tolist()}")


class SizeRef:
    """A size that a contract names: a bound symbol, or ``arg[axis]``, an axis of an argument."""

    __slots__ = ("symbol", "arg", "axis")

    def __init__(self, ref: str):
        if ref.endswith("]"):
            arg, axis = ref[:-1].split("[")
            self.symbol, self.arg, self.axis = None, arg, int(axis)
        else:
            self.symbol, self.arg, self.axis = ref, None, None

    def size(self, call: Call):
        """The size in this call, or None where it is unknown."""
        if self.symbol is not None:
            return call.sizes.get(self.symbol)
        shape = call.args[self.arg].shape
        return shape[self.axis] if -len(shape) <= self.axis < len(shape) else None

    def phrase(self, call: Call) -> str:
        if self.symbol is not None:
            return origin_of(self.symbol, call.bound_by.get(self.symbol, ""))
        return f"the size of {self.arg} in dimension {self.axis}"


def lengths(per: str = "B n_q", upto: str = "n_k", at_least: int = 0) -> Lengths:
    return Lengths(per, upto, at_least)


class Size(Spec):
    """A Python int >= 0 that binds a symbol of the shapes, e.g. ``n_keys=size("n_k")``."""

    def __init__(self, symbol: str):
        self.symbol = symbol

    def check(self, name, value, call):
        if not _is_int(value) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        call.sizes[self.symbol], call.bound_by[self.symbol] = value, name


def size(symbol: str) -> Size:
    return Size(symbol)


class ScoresMask(Spec):
    """A mask for attention scores: boolean (True = may attend) or floating (added to the
    scores), broadcastable to the scores' shape (B, *h, n_q, n_k), whose leading axes are the
    queries' broadcast against the keys' and values' (as torch's)."""

    def check(self, name, value, call):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.dtype != torch.bool and not value.is_floating_point():
            raise TypeError(f"{name} must be boolean (True = may attend) or floating (added to "
                            f"the scores), got {value.dtype}")
        q, k = call.args["queries"], call.args["keys"]
        v = call.args.get("values", k)
        lead = leading_shapes(q.shape, k.shape, v.shape)
        scores = (*(q.shape[:-2] if lead is None else lead[0]), q.shape[-2], k.shape[-2])
        try:
            fits = torch.broadcast_shapes(value.shape, scores) == scores
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"{name} of shape {shape_of(value)} does not broadcast to the "
                             f"scores' shape {scores} (batch, [heads,] n_queries, n_keys)")


scores_mask = ScoresMask()



class Value(Spec):
    """A Python value that ``test`` accepts; ``expected`` completes "{name} must ..."."""

    def __init__(self, test: Callable[[object], bool], expected: str):
        self.test, self.expected = test, expected

    def check(self, name, value, call):
        if not self.test(value):
            raise ValueError(f"{name} must {self.expected}, got {value!r}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


positive_int = Value(lambda v: _is_int(v) and v >= 1, "be a positive int")
non_negative_int = Value(lambda v: _is_int(v) and v >= 0, "be an int >= 0")
probability = Value(lambda v: isinstance(v, (int, float)) and 0.0 <= v < 1.0, "be in [0, 1)")
positive = Value(lambda v: isinstance(v, (int, float)) and v > 0, "be positive")
non_negative = Value(lambda v: isinstance(v, (int, float)) and v >= 0, "be non-negative")


class OneOf(Value):
    """One of ``choices``; a dict is read at every call, so names added to it later count."""

    def __init__(self, choices):
        self.choices = choices
        super().__init__(lambda v: v in self.choices, "")

    def check(self, name, value, call):
        if value not in self.choices:
            raise ValueError(f"{name} must be one of {sorted(self.choices, key=str)}, got "
                             f"{value!r}")


class PositiveOrScalar(Spec):
    """A positive Python number, or a scalar tensor (a learned value, which is not read)."""

    def check(self, name, value, call):
        if isinstance(value, torch.Tensor):
            if value.dim() != 0:
                raise ValueError(f"{name} must be a scalar tensor, got shape {shape_of(value)}")
        else:
            positive.check(name, value, call)


positive_or_scalar = PositiveOrScalar()


def one_of(*choices) -> OneOf:
    """A value among ``choices``, or among the keys of one dict passed alone (read live)."""
    return OneOf(choices[0] if len(choices) == 1 and isinstance(choices[0], dict) else choices)


class InstanceOf(Spec):
    def __init__(self, cls, what: str = ""):
        self.cls, self.what = cls, what or f"a {getattr(cls, '__name__', cls)}"

    def check(self, name, value, call):
        if not isinstance(value, self.cls):
            raise TypeError(f"{name} must be {self.what}, got {type(value).__name__}")


def instance_of(cls, what: str = "") -> InstanceOf:
    return InstanceOf(cls, what)


# ---- rules over several arguments ----------------------------------------------------------
class Rule:
    """A rule that reads several arguments (``names``) and raises if they do not fit."""

    names: tuple = ()

    def check(self, call: Call) -> None:
        raise NotImplementedError


class Require(Rule):
    def __init__(self, predicate: Callable, message, error=ValueError, names=None):
        self.predicate, self.message, self.error = predicate, message, error
        self.names = tuple(names or inspect.signature(predicate).parameters)

    def check(self, call):
        values = [call.args[n] for n in self.names]
        if not self.predicate(*values):
            message = self.message
            raise self.error(message(*values) if callable(message) else message)


def require(predicate: Callable, message: str | Callable = "", error=ValueError,
            names: Sequence[str] | None = None) -> Require:
    """A rule: ``predicate``'s parameters name the arguments it reads (``self`` for the layer),
    unless ``names`` lists them; ``message`` is the error's text, or a function of the same
    arguments that returns it."""
    return Require(predicate, message or f"arguments fail {predicate.__name__}", error, names)


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


class BroadcastLikeTorch(Rule):
    """queries, keys and values whose leading (batch, head) axes broadcast as torch's
    ``scaled_dot_product_attention`` broadcasts them, grouped heads included."""

    names = ("queries", "keys", "values")

    def check(self, call):
        q, k, v = (call.args[n] for n in self.names)
        if leading_shapes(q.shape, k.shape, v.shape) is None:
            raise ValueError(f"queries {shape_of(q)}, keys {shape_of(k)} and values "
                             f"{shape_of(v)}: their leading (batch, head) axes do not "
                             f"broadcast (right-aligned, size 1 against any size; key/value "
                             f"heads may also divide the query heads)")


broadcast_like_torch = BroadcastLikeTorch()


class GroupedHeads(Rule):
    """Keys and values with the queries' leading axes, except that their head axis (axis -3,
    for ranks >= 4) may hold fewer heads that divide the queries' (grouped-query attention:
    query head i reads key/value head i // (h / h_kv)). The shapes name the groups ``*h`` for
    the queries and ``*h_kv`` for keys and values."""

    names = ("queries", "keys", "values")

    def check(self, call):
        heads, kv_heads = call.sizes.get("h", ()), call.sizes.get("h_kv", ())
        if len(heads) != len(kv_heads):
            keys = call.args["keys"]
            raise ValueError(f"keys of shape {shape_of(keys)} must have the rank of queries "
                             f"{shape_of(call.args['queries'])}")
        if heads[:-1] != kv_heads[:-1] or (heads and (
                kv_heads[-1] == 0 or heads[-1] % kv_heads[-1])):
            raise ValueError(f"keys and values have head axes {kv_heads} and queries {heads}: "
                             f"they must be equal, except that the last (the heads) may be a "
                             f"divisor of the queries' (grouped heads)")


grouped_heads = GroupedHeads()


def divides(small: str, large: str, why: str = "") -> Require:
    """The integer argument ``small`` divides the integer argument ``large``."""
    return require(lambda a, b: a is None or b % a == 0,
                   lambda a, b: f"{small} ({a}) must divide {large} ({b})" + why,
                   names=(small, large))


def in_features(layer) -> int | None:
    """A linear layer's input size, or None while it is lazy (the size found at its first call)."""
    return None if isinstance(layer, LazyModuleMixin) and layer.has_uninitialized_params() \
        else layer.in_features
