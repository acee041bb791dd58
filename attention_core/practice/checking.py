"""Run a reader's function against the package's own and say, in both languages, what differs.

A task (``Task``) names a package function, builds its test cases (random, edge-case and
adversarial inputs) and carries a catalogue of common mistakes, each written as code
(``Mistake``). ``check`` calls the reader's function and the reference on the same cases; when
the reader's function fails, it also runs every catalogued mistake on those cases, and a
mistake whose results agree with the reader's on every case (the same outputs, the same kind
of error) is named with its hint. A failure that no mistake explains is described plainly: the
first failing case, its inputs' shapes, and what differs.
"""
from __future__ import annotations

import copy
import dataclasses
import html
import inspect
import os
from collections.abc import Callable, Sequence

import torch

from .inputs import DEVICE

LANGUAGE_VARIABLE = "ATTENTION_CORE_LANG"
_language = {"now": None}

# tolerance (atol, rtol) of a comparison, by the dtype of the expected tensor
TOLERANCES = {torch.float16: (5e-3, 5e-3), torch.bfloat16: (3e-2, 3e-2),
              torch.float32: (2e-5, 2e-4), torch.float64: (1e-9, 1e-7)}


def set_language(language: str | None) -> None:
    """How verdicts print: "en", "zh" or "both" (None: $ATTENTION_CORE_LANG, else both). On the
    site a verdict always carries both and the page's language switch picks one."""
    if language not in (None, "en", "zh", "both"):
        raise ValueError(f"language must be 'en', 'zh', 'both' or None, got {language!r}")
    _language["now"] = language


def language() -> str:
    """The language verdicts print in now: "en", "zh" or "both"."""
    chosen = _language["now"] or os.environ.get(LANGUAGE_VARIABLE, "").strip().lower() or "both"
    return chosen if chosen in ("en", "zh", "both") else "both"


@dataclasses.dataclass(frozen=True)
class Case:
    """One call: a label in each language and the arguments (tensors built on the CPU; ``check``
    moves them to its device)."""

    en: str
    zh: str
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Mistake:
    """A common mistake, written as code with the task's signature, and the hint that names it."""

    name: str
    code: Callable
    en: str
    zh: str


@dataclasses.dataclass(frozen=True)
class Task:
    """What a reader re-implements: the package's ``reference`` (whose signature the reader's
    function takes), the chapter that teaches it, its cases and its catalogue of mistakes.

    cases(generator) -> [Case, ...]: deterministic inputs from a seeded CPU generator.
    outputs: a name for each tensor the function returns, in order (a tuple is flattened).
    """

    name: str
    chapter: int
    reference: Callable
    en: str
    zh: str
    cases: Callable[[torch.Generator], Sequence[Case]]
    mistakes: tuple[Mistake, ...]
    outputs: tuple[str, ...] = ("output",)

    @property
    def signature(self) -> str:
        """The reference's signature without annotations: the reader's function takes the same
        arguments."""
        plain = inspect.signature(self.reference)
        plain = plain.replace(return_annotation=inspect.Signature.empty, parameters=[
            p.replace(annotation=inspect.Parameter.empty) for p in plain.parameters.values()])
        return f"{self.name}{plain}"

    @property
    def implements(self) -> str:
        """The package function this task re-implements, as a reader imports it."""
        return f"{self.reference.__module__}.{self.reference.__qualname__}"

    def build(self, device=None) -> list[Case]:
        """The task's cases, on ``device`` (default: the device the chapters run on)."""
        from ..runtime import get_device
        device = get_device() if device is None else torch.device(device)
        generator = torch.Generator().manual_seed(sum(map(ord, self.name)))
        return [dataclasses.replace(case, args=_to(case.args, device),
                                    kwargs=_to(case.kwargs, device))
                for case in self.cases(generator)]


def _to(value, device):
    """Tensors and modules inside value, on device (strides kept: a transposed input stays so)."""
    if value is DEVICE:
        return device
    if isinstance(value, torch.Tensor):
        return value if value.device == device else value.to(device)
    if isinstance(value, torch.nn.Module):
        return value.to(device).eval()
    if isinstance(value, tuple):
        return tuple(_to(v, device) for v in value)
    if isinstance(value, list):
        return [_to(v, device) for v in value]
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _to(getattr(value, f.name), device)
                                             for f in dataclasses.fields(value) if f.init})
    return value


def _fresh(value):
    """A copy the called function may change without touching the next call's inputs."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, torch.nn.Module):
        return copy.deepcopy(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_fresh(v) for v in value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _fresh(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    return value


def _leaves(value) -> list:
    """The tensors (and plain values) a function returned, in order."""
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [leaf for f in dataclasses.fields(value) for leaf in _leaves(getattr(value, f.name))]
    return [value]


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one call did: its leaves, or the error it raised."""

    leaves: list | None = None
    error: BaseException | None = None


def _call(fn, case: Case) -> Outcome:
    return _watched_call(fn, case)[0]


def _watched_call(fn, case: Case) -> tuple[Outcome, str | None]:
    """fn's outcome on a copy of the case's inputs, and the name of an input it changed in
    place (None if it changed none)."""
    args, kwargs = _fresh(case.args), _fresh(case.kwargs)
    try:
        with torch.no_grad():
            outcome = Outcome(leaves=_leaves(fn(*args, **kwargs)))
    except Exception as error:  # the reader's error is a result to report, not a crash
        outcome = Outcome(error=error)
    names = [*inspect.signature(fn).parameters][:len(args)]
    names += [f"argument {i}" for i in range(len(names), len(args))] + [*kwargs]
    given, used = [*case.args, *case.kwargs.values()], [*args, *kwargs.values()]
    for name, before, after in zip(names, given, used):
        tensors = [(b, a) for b, a in zip(_leaves(before), _leaves(after))
                   if isinstance(b, torch.Tensor)]
        if any(b.shape != a.shape or not _close(b, a).all() for b, a in tensors):
            return outcome, name
    return outcome, None


@dataclasses.dataclass(frozen=True)
class Difference:
    """Why a result is not the expected one, in both languages; ``kind`` groups differences."""

    kind: str
    en: str
    zh: str


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        layout = "" if x.is_contiguous() or x.numel() <= 1 else ", not contiguous"
        return f"{tuple(x.shape)} {str(x.dtype).removeprefix('torch.')}{layout}"
    if isinstance(x, torch.nn.Module):
        return type(x).__name__
    if isinstance(x, torch.device):
        return f"'{x}'"
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return type(x).__name__
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
        return "(" + ", ".join(_describe(v) for v in x) + ")"
    return repr(x)


def _number(x: float) -> str:
    return f"{x:.4g}"


# the returned values' names in Chinese, where a name is a word rather than code
NAMES_ZH = {"output": "输出", "weights": "权重", "predictions": "预测", "keys": "键",
            "values": "值", "cache keys": "缓存的键", "cache values": "缓存的值"}


def compare(expected: Outcome, got: Outcome, names: Sequence[str]) -> Difference | None:
    """None when got matches expected (within the dtype's tolerance), else the first difference."""
    if got.error is not None:
        if expected.error is not None:
            return None
        message = f"{type(got.error).__name__}: {got.error}".splitlines()[0][:300]
        return Difference("error", f"your function raised {message}",
                          f"你的函数抛出了 {message}")
    if expected.error is not None:
        return Difference("no error", "your function returned a result where the package's "
                          f"raises {type(expected.error).__name__}",
                          f"包里的实现在这里抛出 {type(expected.error).__name__}，"
                          "你的函数却返回了结果")
    want, have = expected.leaves, got.leaves
    if len(want) != len(have):
        return Difference("count", f"expected {len(want)} returned value(s) "
                          f"({', '.join(names)}), got {len(have)}",
                          f"应返回 {len(want)} 个值（{', '.join(names)}），实际返回 {len(have)} 个")
    for i, (w, h) in enumerate(zip(want, have)):
        name = names[i] if i < len(names) else f"output {i}"
        if isinstance(w, torch.Tensor):
            found = _compare_tensor(name, NAMES_ZH.get(name, name), w, h)
            if found is not None:
                return found
        elif not (w is h or w == h):
            return Difference("value", f"{name}: expected {w!r}, got {h!r}",
                              f"{NAMES_ZH.get(name, name)}：应为 {w!r}，实际为 {h!r}")
    return None


def _compare_tensor(name: str, name_zh: str, w: torch.Tensor, h) -> Difference | None:
    if not isinstance(h, torch.Tensor):
        return Difference("type", f"{name}: expected a tensor, got {type(h).__name__}",
                          f"{name_zh}：应为张量，实际为 {type(h).__name__}")
    if h.shape != w.shape:
        return Difference("shape", f"{name}: expected shape {tuple(w.shape)}, got "
                          f"{tuple(h.shape)}", f"{name_zh}：形状应为 {tuple(w.shape)}，实际为 "
                          f"{tuple(h.shape)}")
    if h.dtype != w.dtype:
        return Difference("dtype", f"{name}: expected dtype {w.dtype}, got {h.dtype}",
                          f"{name_zh}：数据类型应为 {w.dtype}，实际为 {h.dtype}")
    if h.device != w.device:
        return Difference("device", f"{name}: expected it on {w.device}, got {h.device}",
                          f"{name_zh}：应在 {w.device} 上，实际在 {h.device} 上")
    if w.numel() == 0:
        return None
    wrong = ~_close(w, h)
    if not wrong.any():
        return None
    where = tuple(int(i) for i in wrong.nonzero()[0])
    at = "[" + ", ".join(map(str, where)) + "]"
    count = int(wrong.sum())
    want_v, have_v = w[where].item(), h[where].item()
    if w.is_floating_point() and bool(h.isnan().any()) and not bool(w.isnan().any()):
        return Difference("nan", f"{name}: NaN in {count} of {w.numel()} entries, first at {at}, "
                          f"where {_number(want_v)} is expected",
                          f"{name_zh}：{w.numel()} 个元素中有 {count} 个是 NaN，第一个在 {at}，"
                          f"那里应为 {_number(want_v)}")
    en = (f"{name}: {count} of {w.numel()} entries differ; first at {at}: expected "
          f"{_number(want_v)}, got {_number(have_v)}")
    zh = (f"{name_zh}：{w.numel()} 个元素中有 {count} 个不同；第一个在 {at}：应为 "
          f"{_number(want_v)}，实际为 {_number(have_v)}")
    if w.dim() >= 2 and w.shape[-2] > 1:  # which rows (queries, positions) are wrong
        rows = wrong.reshape(-1, *w.shape[-2:]).any(0).any(-1)
        if not rows.all():
            listed = ", ".join(str(int(r)) for r in rows.nonzero()[:, 0][:8])
            more = ", …" if int(rows.sum()) > 8 else ""
            en += (f"; rows (axis -2) that differ: {listed}{more} of {w.shape[-2]}, the "
                   f"others match")
            zh += f"；不同的行（倒数第二维）：{listed}{more}（共 {w.shape[-2]} 行），其余的行一致"
    if w.numel() > 1 and _close(w.flatten().sort().values, h.flatten().sort().values).all():
        en += "; your output holds the expected numbers, in another order"
        zh += "；你的输出包含的正是期望的那些数，只是顺序不同"
    return Difference("values", en, zh)


def _close(w: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Where h equals w within the tolerance of w's dtype (NaN equals NaN)."""
    if not w.is_floating_point():
        return h == w
    atol, rtol = TOLERANCES.get(w.dtype, (1e-5, 1e-4))
    w64, h64 = w.double(), h.double()
    return ((w64 - h64).abs() <= atol + rtol * w64.abs()) | (w64 == h64) | \
        (w64.isnan() & h64.isnan())


# what to look at when no catalogued mistake explains a failure, by the kind of difference
ADVICE = {
    "error": ("your function must accept the inputs above: check the shapes and arguments it "
              "assumes.", "你的函数必须能接受上面的输入：检查它对形状和参数的假设。"),
    "dtype": ("return the dtype of the inputs (cast back if you computed in another one).",
              "返回值的数据类型应与输入相同（如果中间换了类型，最后要转回来）。"),
    "shape": ("check the shape your function returns against the one expected above.",
              "把你的函数返回的形状与上面期望的形状对照一下。"),
    "values": ("compare your function with the formula on the failing case above.",
               "请在上面这个未通过的用例上对照公式检查你的函数。"),
    "mutated": ("its result was right.", "它的结果是对的。"),
}


def _changed(name: str | None) -> Difference | None:
    """The difference of a function that returned the right result but changed an input."""
    if name is None:
        return None
    return Difference("mutated", f"your function changed its input {name} in place; the "
                      f"caller still needs it (a query reused by the next layer, a cache): work "
                      f"on a copy, or with operations that return new tensors",
                      f"你的函数就地修改了输入 {name}；调用者之后还要用它（下一层还要用的查询、"
                      f"缓存）：请在副本上操作，或者使用返回新张量的运算")


def _agree(a: Outcome, b: Outcome, names) -> bool:
    """Two wrong results are the same mistake: equal outputs, or errors of the same type."""
    if a.error is not None or b.error is not None:
        return a.error is not None and b.error is not None and type(a.error) is type(b.error)
    return compare(a, b, names) is None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The result of ``check``: ``passed``, and a message in English (``en``) and Chinese
    (``zh``). ``mistake`` is the catalogued mistake the failure matches (or None);
    ``failed`` the labels (English) of the cases that failed; ``partial``: the mistake explains
    the first failing case but not every failure."""

    task: str
    passed: bool
    en: str
    zh: str
    mistake: str | None = None
    failed: tuple[str, ...] = ()
    partial: bool = False

    def __str__(self) -> str:
        chosen = language()
        return {"en": self.en, "zh": self.zh}.get(chosen, f"{self.en}\n{self.zh}")

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        chosen = language()
        blocks = []
        for lang, code, text in (("en", "en", self.en), ("zh", "zh-Hans", self.zh)):
            if chosen in (lang, "both"):
                body = html.escape(text)
                # pre-wrap: a long line wraps on a phone and in the PDF instead of overflowing
                blocks.append(f'<div class="lang-{lang} practice-verdict" lang="{code}">'
                              f'<pre style="white-space: pre-wrap; overflow-wrap: anywhere">'
                              f"{body}</pre></div>")
        return "\n".join(blocks)


def check(task, fn: Callable, *, device=None) -> Verdict:
    """Run ``fn`` on every case of ``task`` (a Task or its name in TASKS) and compare it with
    the package's function; on ``device`` (default: where the chapters run). Returns a Verdict,
    which a notebook shows in the reader's language."""
    from .tasks import TASKS
    if isinstance(task, str):
        if task not in TASKS:
            raise ValueError(f"task must be one of practice.TASKS, got {task!r}")
        task = TASKS[task]
    if not callable(fn):
        raise TypeError(f"fn must be a function with the signature {task.signature}, "
                        f"got {type(fn).__name__}")
    cases = task.build(device)
    expected = [_call(task.reference, case) for case in cases]
    watched = [_watched_call(fn, case) for case in cases]
    got = [outcome for outcome, _ in watched]
    differences = [compare(e, g, task.outputs) or _changed(changed)
                   for e, g, (_, changed) in zip(expected, got, watched)]
    failed = [i for i, d in enumerate(differences) if d is not None]
    if not failed:
        labels_en = "; ".join(case.en for case in cases)
        labels_zh = "；".join(case.zh for case in cases)
        return Verdict(task.name, True,
                       f"✓ {task.name}: your function matches {task.implements} on all "
                       f"{len(cases)} cases ({labels_en}).",
                       f"✓ {task.name}：你的函数在全部 {len(cases)} 个用例上与 {task.implements} "
                       f"一致（{labels_zh}）。")
    first = failed[0]
    mistake, explains_all = _recognise(task, cases, expected, got, first)
    case, diff = cases[first], differences[first]
    try:
        bound = inspect.signature(task.reference).bind(*case.args, **case.kwargs)
        inputs = ", ".join(f"{k}={_describe(v)}" for k, v in bound.arguments.items())
    except TypeError:
        inputs = ", ".join(_describe(v) for v in case.args)
    failed_en = "; ".join(cases[i].en for i in failed)
    failed_zh = "；".join(cases[i].zh for i in failed)
    passed_count = len(cases) - len(failed)
    en = (f"✗ {task.name}: {len(failed)} of {len(cases)} cases fail ({failed_en}); "
          f"{passed_count} pass.\n"
          f"First failure, {case.en}: {inputs}\n  {diff.en}")
    zh = (f"✗ {task.name}：{len(cases)} 个用例中有 {len(failed)} 个未通过（{failed_zh}），"
          f"{passed_count} 个通过。\n"
          f"第一个未通过的用例，{case.zh}：{inputs}\n  {diff.zh}")
    if mistake is not None and explains_all:
        en += f"\nHint: {mistake.en}"
        zh += f"\n提示：{mistake.zh}"
    elif mistake is not None:
        en += (f"\nHint for the first failing case (the others may have another cause): "
               f"{mistake.en}")
        zh += f"\n针对第一个未通过用例的提示（其余的可能另有原因）：{mistake.zh}"
    else:
        advice_en, advice_zh = ADVICE.get(diff.kind, ADVICE["values"])
        en += f"\nThis is not one of the mistakes this check knows; {advice_en}"
        zh += f"\n这不是本检查收录的常见错误之一；{advice_zh}"
    return Verdict(task.name, False, en, zh, mistake and mistake.name,
                   tuple(cases[i].en for i in failed), mistake is not None and not explains_all)


def _recognise(task: Task, cases, expected, got, first: int) -> tuple[Mistake | None, bool]:
    """The catalogued mistake that explains the reader's results: the first whose results agree
    with the reader's on every case, (mistake, True); failing that, the one that agrees on the
    first failing case and on the most cases, (mistake, False) (a reader who made two mistakes
    learns of one at a time); else (None, False)."""
    best, best_count = None, -1
    for mistake in task.mistakes:
        outcomes = [_call(mistake.code, case) for case in cases]
        agree = [_agree(o, g, task.outputs) for o, g in zip(outcomes, got)]
        if all(agree):
            return mistake, True
        wrong_there = compare(expected[first], outcomes[first], task.outputs) is not None
        if agree[first] and wrong_there and sum(agree) > best_count:
            best, best_count = mistake, sum(agree)
    return best, False
