"""The practice checks: every task's reference passes, every catalogued mistake is caught and
named by its own hint, and a failure outside the catalogue is described plainly."""
import dataclasses
import inspect
from pathlib import Path

import pytest
import torch

from attention_core import practice
from attention_core.practice.checking import _call, compare

TASKS = list(practice.TASKS.values())
MISTAKES = [pytest.param(task, mistake, id=f"{task.name}: {mistake.name}")
            for task in TASKS for mistake in task.mistakes]


def test_at_least_twenty_tasks_cover_every_chapter_with_four_mistakes_each():
    assert len(TASKS) >= 20
    assert {task.chapter for task in TASKS} == set(range(1, 11))
    for task in TASKS:
        assert len(task.mistakes) >= 4, task.name
        assert len({m.name for m in task.mistakes}) == len(task.mistakes), task.name
        assert len(task.build("cpu")) >= 4, task.name


def test_a_task_takes_the_signature_of_the_function_it_reimplements():
    for task in TASKS:
        assert task.signature.startswith(f"{task.name}(") and ":" not in task.signature
        assert task.implements.startswith("attention_core.")
        for mistake in task.mistakes:  # the catalogue is written against the same signature
            assert list(inspect.signature(mistake.code).parameters) == \
                list(inspect.signature(task.reference).parameters), (task.name, mistake.name)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_the_reference_passes(task, device):
    verdict = practice.check(task, task.reference, device=device)
    assert verdict.passed, verdict.en
    assert verdict.en.startswith("✓") and verdict.zh.startswith("✓")
    assert verdict.mistake is None and verdict.failed == ()


@pytest.mark.parametrize("task, mistake", MISTAKES)
def test_every_catalogued_mistake_fails_with_its_own_hint(task, mistake, device):
    verdict = practice.check(task, mistake.code, device=device)
    assert not verdict.passed
    assert verdict.mistake == mistake.name and not verdict.partial, verdict.en
    assert f"Hint: {mistake.en}" in verdict.en
    assert f"提示：{mistake.zh}" in verdict.zh
    assert len(verdict.failed) >= 1


def test_the_cases_are_the_same_on_every_build():
    for task in TASKS:
        first, second = task.build("cpu"), task.build("cpu")
        for a, b in zip(first, second):
            assert a.en == b.en and compare(_call(task.reference, a), _call(task.reference, b),
                                            task.outputs) is None


def test_a_mistake_outside_the_catalogue_gets_the_first_failing_case_described():
    def doubled(x, heads):  # right shape, wrong values: no catalogued mistake does this
        return practice.TASKS["split_heads"].reference(x, heads) * 2
    verdict = practice.check("split_heads", doubled, device="cpu")
    assert not verdict.passed and verdict.mistake is None
    first = practice.TASKS["split_heads"].build("cpu")[0]
    assert f"First failure, {first.en}: x=(2, 5, 12) float32, heads=3" in verdict.en
    assert "entries differ" in verdict.en and "not one of the mistakes" in verdict.en
    assert f"第一个未通过的用例，{first.zh}" in verdict.zh and "不是本检查收录" in verdict.zh


def test_two_mistakes_at_once_get_the_hint_for_the_first_failing_case():
    task = practice.TASKS["masked_softmax"]
    minus_1e6, ignores_mask = task.mistakes[0], task.mistakes[-1]
    assert ignores_mask.name == "mask argument ignored"

    def both(scores, valid_lens=None, *, mask=None):  # -1e6, and the mask argument dropped
        return minus_1e6.code(scores, valid_lens)
    verdict = practice.check(task, both, device="cpu")
    assert not verdict.passed and verdict.partial and verdict.mistake == minus_1e6.name
    assert "Hint for the first failing case" in verdict.en
    assert "a boolean mask" in verdict.failed


def test_an_error_in_the_readers_function_is_reported_with_the_case():
    def broken(scores, valid_lens=None, *, mask=None):
        raise IndexError("dimension out of range")
    verdict = practice.check("masked_softmax", broken, device="cpu")
    assert not verdict.passed
    assert "your function raised IndexError: dimension out of range" in verdict.en
    assert "你的函数抛出了 IndexError" in verdict.zh


def test_a_value_difference_says_which_rows_differ_and_whether_it_is_a_reordering():
    def last_row_wrong(n_queries, n_keys, device=None):
        mask = practice.TASKS["causal_mask"].reference(n_queries, n_keys, device)
        mask[-1, 0] = ~mask[-1, 0]
        return mask
    verdict = practice.check("causal_mask", last_row_wrong, device="cpu")
    assert "rows (axis -2) that differ: 3 of 4, the others match" in verdict.en
    assert "不同的行（倒数第二维）：3（共 4 行），其余的行一致" in verdict.zh

    def reordered(x, heads):
        return practice.TASKS["split_heads"].reference(x, heads).flip(-1)
    verdict = practice.check("split_heads", reordered, device="cpu")
    assert "your output holds the expected numbers, in another order" in verdict.en


def test_a_wrong_shape_and_a_wrong_dtype_are_named():
    def transposed(x):
        return practice.TASKS["merge_heads"].reference(x).transpose(1, 2)
    verdict = practice.check("merge_heads", transposed, device="cpu")
    assert "expected shape (2, 5, 12), got (2, 12, 5)" in verdict.en

    def in_float64(scores, valid_lens=None, *, mask=None):
        return practice.TASKS["masked_softmax"].reference(scores, valid_lens, mask=mask).double()
    verdict = practice.check("masked_softmax", in_float64, device="cpu")
    assert "expected dtype torch.float32, got torch.float64" in verdict.en


def test_a_function_that_changes_its_inputs_fails_and_cannot_change_the_reference():
    reference = practice.TASKS["masked_softmax"].reference

    def tidy_but_destructive(scores, valid_lens=None, *, mask=None):
        out = reference(scores, valid_lens, mask=mask)
        scores.zero_()  # in place: the reference, run on its own copy, must not see this
        return out
    verdict = practice.check("masked_softmax", tidy_but_destructive, device="cpu")
    assert not verdict.passed and verdict.mistake is None
    assert "your function changed its input scores in place" in verdict.en
    assert "its result was right" in verdict.en and "就地修改了输入 scores" in verdict.zh
    task = practice.TASKS["kv_cache_step"]

    def grows_the_callers_cache(self, X, cache):  # a tensor inside a tuple, changed in place
        out, grown = task.reference(self, X, cache)
        if cache is not None:
            cache[0].mul_(2)
        return out, grown
    verdict = practice.check(task, grows_the_callers_cache, device="cpu")
    assert "changed its input cache in place" in verdict.en


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="task must be one of practice.TASKS, got 'softmax'"):
        practice.check("softmax", lambda x: x)
    with pytest.raises(TypeError, match=r"fn must be a function with the signature "
                       r"causal_mask\(n_queries, n_keys, device=None\), got int"):
        practice.check("causal_mask", 3)
    with pytest.raises(ValueError, match="language must be"):
        practice.set_language("fr")


def test_a_verdict_prints_in_the_readers_language(monkeypatch):
    verdict = practice.check("causal_mask", practice.TASKS["causal_mask"].reference, device="cpu")
    try:
        practice.set_language("zh")
        assert str(verdict) == verdict.zh and 'lang="en"' not in verdict._repr_html_()
        practice.set_language("en")
        assert str(verdict) == verdict.en and 'lang="zh-Hans"' not in verdict._repr_html_()
        practice.set_language(None)
        monkeypatch.setenv("ATTENTION_CORE_LANG", "zh")
        assert str(verdict) == verdict.zh
        monkeypatch.delenv("ATTENTION_CORE_LANG")
        assert str(verdict) == f"{verdict.en}\n{verdict.zh}"
        html = verdict._repr_html_()  # both, for the site's language switch to choose from
        assert '<div class="lang-en practice-verdict" lang="en">' in html
        assert '<div class="lang-zh practice-verdict" lang="zh-Hans">' in html
    finally:
        practice.set_language(None)


def test_a_verdict_escapes_what_the_readers_function_says():
    def hostile(n_queries, n_keys, device=None):
        raise ValueError("<script>alert(1)</script>")
    html = practice.check("causal_mask", hostile, device="cpu")._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_cases_follow_the_device_they_are_built_for(device):
    for task in TASKS:
        for case in task.build(device):
            for value in [*case.args, *case.kwargs.values()]:
                if isinstance(value, torch.Tensor):
                    assert value.device.type == device.type, (task.name, case.en)
                if isinstance(value, torch.nn.Module):
                    assert all(p.device.type == device.type for p in value.parameters())
                if dataclasses.is_dataclass(value):
                    assert value.hidden.device.type == device.type


def test_the_checks_page_counts_the_tasks_and_mistakes_it_describes():
    page = (Path(__file__).resolve().parents[2] / "book" / "checks.md").read_text(encoding="utf-8")
    mistakes = sum(len(task.mistakes) for task in TASKS)
    assert f"There\nare {len(TASKS)} tasks" in page or f"There are {len(TASKS)} tasks" in page
    assert f"{mistakes} in all" in page and f"一共 {len(TASKS)} 个任务" in page
    assert f"共 {mistakes} 个" in page
