"""Every exercise has a worked solution, and each finds the other.

A chapter ends with its exercises, one numbered list per language. Its companion notebook
solutions/<same name>.ipynb restates exercise k under "## Exercise N.k · 练习 N.k" (the same
words as the chapter's, in both languages) inside a sphinx-exercise ``exercise`` labelled
``ex-NN-k``, then holds the worked solution between a gated ``solution-start`` (folded: class
dropdown) and ``solution-end``, in prose of both languages and code. Each exercise of the chapter
links to its solution, in each language. The site tests check that the folds open."""
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))

EN = re.compile(r'<div class="lang-en" lang="en">(.*?)</div>', re.S)
ZH = re.compile(r'<div class="lang-zh" lang="zh-Hans">(.*?)</div>', re.S)
ITEM = re.compile(r"^\d+\. ", re.M)
SOLUTION_LINK = re.compile(r"\s*\[(?:Solution|解答) →\]\(([^)]*)\)")


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def src(cell):
    return "".join(cell["source"])


def normal(text: str) -> str:
    """Words as a reader reads them: the solution link dropped, whitespace collapsed."""
    return " ".join(SOLUTION_LINK.sub("", text).split())


def items(block: str) -> list[str]:
    parts = ITEM.split(block.strip())
    assert parts[0].strip() == "", f"text before the first numbered exercise: {parts[0][:60]!r}"
    return parts[1:]


def chapter_exercises(path):
    """The (English, Chinese) items of a chapter's exercise list, with their raw text."""
    cs = cells(path)
    heads = [i for i, c in enumerate(cs)
             if c["cell_type"] == "markdown" and src(c).startswith("## Exercises · 练习")]
    assert len(heads) == 1, f"{path.name}: one '## Exercises · 练习' heading, found {len(heads)}"
    body = src(cs[heads[0] + 1])
    (en,), (zh,) = EN.findall(body), ZH.findall(body)
    return items(en), items(zh)


def solutions_path(chapter):
    return ROOT / "solutions" / chapter.name


def number(chapter):
    return int(chapter.name[:2])


# The chapters whose worked solutions exist (solutions/<chapter's name>).
SOLVED = [c for c in CHAPTERS if solutions_path(c).exists()]


def test_every_chapter_has_its_solutions_notebook():
    missing = [c.name for c in CHAPTERS if not solutions_path(c).exists()]
    assert not missing, f"chapters without worked solutions (solutions/<chapter's name>): {missing}"


def test_the_solutions_part_of_the_toc_lists_each_solutions_notebook_in_chapter_order():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    parts = {p["caption"]: [c["file"] for c in p["chapters"]] for p in toc["parts"]}
    assert SOLVED and parts.get("Solutions · 习题解答") == [f"solutions/{c.stem}" for c in SOLVED]
    names = {c.name for c in CHAPTERS}
    stray = [p.name for p in (ROOT / "solutions").glob("*.ipynb") if p.name not in names]
    assert not stray, f"solutions notebooks named after no chapter: {stray}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_both_languages_list_the_same_exercises(chapter):
    en, zh = chapter_exercises(chapter)
    assert len(en) == len(zh) >= 3, \
        f"{chapter.name}: {len(en)} English, {len(zh)} Chinese exercises"


@pytest.mark.parametrize("chapter", SOLVED, ids=[c.stem for c in SOLVED])
def test_each_exercise_links_to_its_solution_in_each_language(chapter):
    n = number(chapter)
    for lang, listed in zip(("English", "Chinese"), chapter_exercises(chapter)):
        for k, item in enumerate(listed, 1):
            links = SOLUTION_LINK.findall(item)
            assert links == [f"../solutions/{chapter.name}#ex-{n:02d}-{k}"], \
                f"{chapter.name}, {lang} exercise {k} links to {links}"


@pytest.mark.parametrize("chapter", SOLVED, ids=[c.stem for c in SOLVED])
def test_every_exercise_has_one_folded_solution_with_the_chapters_words(chapter):
    n = number(chapter)
    en_items, zh_items = chapter_exercises(chapter)
    cs = cells(solutions_path(chapter))
    heading = re.compile(rf"^## Exercise {n}\.(\d+) · 练习 {n}\.(\d+)\n")
    starts = [i for i, c in enumerate(cs) if c["cell_type"] == "markdown" and heading.match(src(c))]
    assert len(starts) == len(en_items), \
        f"{chapter.name}: {len(en_items)} exercises, {len(starts)} solutions"
    for k, (i, end) in enumerate(zip(starts, starts[1:] + [len(cs)]), 1):
        head = src(cs[i])
        assert heading.match(head).groups() == (str(k), str(k)), \
            f"exercise {k} is numbered {head[:30]!r}"
        label = f"ex-{n:02d}-{k}"
        assert f"```{{exercise-start}}\n:label: {label}\n:nonumber:\n```" in head
        assert head.rstrip().endswith("```{exercise-end}\n```")
        (en,), (zh,) = EN.findall(head), ZH.findall(head)
        assert normal(en) == normal(en_items[k - 1]), \
            f"{label}: the English differs from the chapter's"
        assert normal(zh) == normal(zh_items[k - 1]), \
            f"{label}: the Chinese differs from the chapter's"
        body = cs[i + 1:end]
        assert src(body[0]) == f"```{{solution-start}} {label}\n:class: dropdown\n```", \
            f"{label}: the solution must open folded right after the exercise"
        assert src(body[-1]).strip() == "```{solution-end}\n```", \
            f"{label}: the solution is not closed"
        inside = body[1:-1]
        prose = [src(c) for c in inside if c["cell_type"] == "markdown"]
        assert any(EN.search(p) for p in prose) and any(ZH.search(p) for p in prose), \
            f"{label}: the solution explains itself in both languages"
        assert any(c["cell_type"] == "code" and c.get("outputs") for c in inside), \
            f"{label}: the solution runs code and shows its output"
