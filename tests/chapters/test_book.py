"""The book's own rules, checked on the sources: every page in the TOC exists, every notebook
is executed in order without errors, every prose block exists in both languages, titles are
bilingual, no image comes from another site, and the glossary's terms are used."""
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [ch["file"] for ch in part["chapters"]]
    return files


def resolve(entry):
    for suffix in (".ipynb", ".md"):
        path = ROOT / (entry + suffix)
        if path.exists():
            return path
    raise FileNotFoundError(f"_toc.yml names {entry!r}, which is neither .ipynb nor .md")


PAGES = [resolve(f) for f in toc_files()]
NOTEBOOKS = [p for p in PAGES if p.suffix == ".ipynb"]
IDS = [str(p.relative_to(ROOT)) for p in PAGES]


def markdown_sources(path):
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def test_every_chapter_notebook_is_in_the_toc():
    on_disk = set((ROOT / "chapters").glob("*.ipynb")) | set((ROOT / "solutions").glob("*.ipynb"))
    assert on_disk == set(NOTEBOOKS), \
        "a notebook in chapters/ or solutions/ is missing from _toc.yml"
    assert NOTEBOOKS, "the book has no chapter"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_notebook_is_executed_in_order_without_errors(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    counts = [c.get("execution_count") for c in code]
    assert None not in counts, "a code cell has no saved output: run `make execute`"
    assert counts == list(range(1, len(code) + 1)), "cells were not executed top to bottom once"
    for c in code:
        for out in c.get("outputs", []):
            assert out["output_type"] != "error", f"saved error output: {out.get('ename')}"
            if out["output_type"] == "stream" and out["name"] == "stderr":
                pytest.fail(f"saved stderr output (a warning?): {''.join(out['text'])[:200]}")
    # saved widget state would make the site fetch the widget manager from a CDN
    assert "widgets" not in nb.get("metadata", {}), "notebook saved widget state"
    first = "".join(code[0]["source"])
    assert "set_seed" in first or "manual_seed" in first, "the first code cell must fix the seed"


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_prose_exists_in_both_languages(path):
    for src in markdown_sources(path):
        blocks = re.findall(r'<div class="lang-(en|zh)" lang="([^"]+)">(.*?)</div>', src, re.S)
        langs = [b[0] for b in blocks]
        assert langs == ["en", "zh"] * (len(langs) // 2), f"blocks must alternate en, zh: {langs}"
        for lang, tag, body in blocks:
            assert body.strip(), f"an empty {lang} block"
            assert tag == {"en": "en", "zh": "zh-Hans"}[lang]
            if lang == "zh":
                assert CJK.search(body), f"a zh block without Chinese: {body[:80]!r}"
        rest = re.sub(r'<div class="lang-(en|zh)".*?</div>', "", src, flags=re.S)
        rest = re.sub(r"```.*?```", "", rest, flags=re.S)  # directives such as {bibliography}
        for line in rest.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "|", "(")):
                continue  # headings (bilingual, checked below), tables, labels
            pytest.fail(f"prose outside a language block in {path.name}: {line[:80]!r}")


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_headings_are_bilingual(path):
    for src in markdown_sources(path):
        body = re.sub(r"```.*?```", "", src, flags=re.S)
        for heading in re.findall(r"^#{1,6} (.+)$", body, re.M):
            assert " · " in heading and CJK.search(heading) and LATIN.search(heading), \
                f"heading is not 'English · 中文': {heading!r}"


def test_chapters_end_with_summary_and_exercises():
    for path in [p for p in NOTEBOOKS if p.parent.name == "chapters"]:
        headings = re.findall(r"^## (.+)$", "\n".join(markdown_sources(path)), re.M)
        assert headings[-2:] == ["Summary · 小结", "Exercises · 练习"], path.name


DISPLAY_MATH = re.compile(r"\$\$(.*?)\$\$", re.S)
MARKDOWN_BLOCK_START = re.compile(r"^\s*([-+*] |\d+[.)] |#|>)", re.M)


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_display_math_has_no_line_that_markdown_reads_as_a_list(path):
    """Display math is a block of its own (blank lines around it: inside a paragraph, $$ is
    read as two inline $), and no line of it begins with "+ ", "- ", "1. " (or #, >), which
    Markdown reads as a list (or heading, quote), breaking the equation into raw TeX: the
    operator goes at the end of the line before."""
    for source in markdown_sources(path):
        for found in DISPLAY_MATH.finditer(source):
            math = found.group(1)
            bad = MARKDOWN_BLOCK_START.findall(math)
            assert not bad, f"display math with a line starting {bad}: {math[:80]!r}"
            # inside a paragraph, $$ is read as two inline $ and the TeX prints raw
            before, after = source[:found.start()], source[found.end():]
            assert re.search(r"(^|\n[ \t]*\n|>)[ \t]*$", before) and \
                re.match(r"[ \t]*(\n[ \t]*\n|\n?$|\s*<)", after), \
                f"display math not in a block of its own: {before[-40:]!r} $$ ... $$ {after[:40]!r}"


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_no_image_from_another_site(path):
    text = path.read_text(encoding="utf-8")
    assert not re.search(r'(src=\\?"https?://|!\[[^\]]*\]\(https?://)', text)


def glossary_avoided():
    """{avoided word: (English, Chinese)} from every table of book/glossary.md."""
    avoided = {}
    for row in (ROOT / "book/glossary.md").read_text(encoding="utf-8").splitlines():
        if not row.startswith("|") or row.startswith("|---") or row.startswith("| English |"):
            continue
        en, zh, avoid = (c.strip() for c in row.strip("|").split("|"))
        for word in filter(None, (w.strip() for w in avoid.split("、"))):
            avoided[word] = (en, zh)
    return avoided


def chinese_sources():
    """(where, text) for every place a reader meets Chinese: the pages' prose, the notebooks'
    code cells (figure labels, printed tables) and the package (widgets, diagrams)."""
    for path in PAGES:
        if path.name != "glossary.md":
            yield path.name, "\n".join(markdown_sources(path))
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            yield f"{path.name} (code)", "\n".join("".join(c["source"]) for c in cells
                                                   if c["cell_type"] == "code")
    for path in sorted((ROOT / "attention_core").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def test_glossary_terms_avoided_everywhere():
    avoided = glossary_avoided()
    assert {"注意力池化", "批次", "逐位相同"} <= set(avoided)  # both tables were parsed
    for where, text in chinese_sources():
        for word, (en, zh) in avoided.items():
            assert word not in text, f"{where} uses {word!r}; the glossary says {en} = {zh}"


# Digits grouped in threes (20,000, 32 000, 524\,288, 33{,}024): the Chinese text does not group
# them, as in d2l-zh (the glossary states the rule; the English groups).
GROUPED = re.compile(r"(?<![\d.])\d{1,3}(?:,|\\,|\{,\}| )\d{3}(?!\d)")
ZH_BLOCK = re.compile(r'<div class="lang-zh" lang="zh-Hans">(.*?)</div>', re.S)


PROSE_PAGES = [p for p in PAGES if p.name != "glossary.md"]  # the glossary states the rule


@pytest.mark.parametrize("path", PROSE_PAGES, ids=[str(p.relative_to(ROOT)) for p in PROSE_PAGES])
def test_chinese_numbers_not_grouped(path):
    for block in ZH_BLOCK.findall("\n".join(markdown_sources(path))):
        prose = re.sub(r"`[^`]*`", "", block)  # code keeps what Python prints
        assert not GROUPED.search(prose), GROUPED.search(prose).group(0)


EN_BLOCK = re.compile(r'<div class="lang-en" lang="en">(.*?)</div>', re.S)
SPACE_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:\\,| )\d{3}(?![\d%]|\.\d)")
FOUR_DIGITS_GROUPED = re.compile(r"(?<![\d.,])\d(?:,|\{,\})\d{3}(?![\d,]|\{,\})")


@pytest.mark.parametrize("path", PROSE_PAGES, ids=[str(p.relative_to(ROOT)) for p in PROSE_PAGES])
def test_english_numbers_grouped_one_way(path):
    """English groups numbers of five or more digits with commas (10,000), none of four (4096)."""
    for block in EN_BLOCK.findall("\n".join(markdown_sources(path))):
        prose = re.sub(r"`[^`]*`", "", block)
        for pattern in (SPACE_GROUPED, FOUR_DIGITS_GROUPED):
            assert not pattern.search(prose), pattern.search(prose).group(0)


# Words about the test suite, not about attention. Prose and the comments a reader meets
# (outside folded check cells) never use them; book/checks.md explains how the book checks itself.
APPARATUS = re.compile(r"nbval|\bbench/|\btests/|\btest_\w+\(|\(asserted\)|\basserts?\b"
                       r"|CPU settings"
                       r"|portable kernels?|native kernels?|ATEN_CPU|OMP_NUM_THREADS|spread\.py"
                       r"|断言|可移植(?:内核|算子)|原生(?:内核|算子)|CPU 设置", re.I)


def folded(cell) -> bool:
    return "hide-input" in cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_prose_talks_about_attention_not_the_test_suite(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        src = "".join(cell["source"])
        if cell["cell_type"] == "code":
            if folded(cell):
                continue
            src = "\n".join(re.findall(r"#(.*)", src))  # the comments a reader meets
        hit = APPARATUS.search(src)
        assert not hit, \
            f"cell {i} mentions test apparatus: {src[max(0, hit.start() - 60):hit.end() + 40]!r}"


ASSERTS = re.compile(r"^\s*assert\b|\bassert_close\(|\bassert_equal\(|\btesting\.assert", re.M)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_check_cells_are_folded_under_a_bilingual_claim(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [(i, c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    for i, cell in code:
        src = "".join(cell["source"])
        if i == code[0][0] or ASSERTS.search(src):
            assert folded(cell), f"cell {i} checks (or imports) and is not folded (tag hide-input)"
        if folded(cell):
            label = cell["metadata"].get("mystnb", {}).get("code_prompt_show", "")
            en, _, zh = label.partition(" · ")
            assert LATIN.search(en) and CJK.search(zh), \
                f"cell {i}: a folded cell needs mystnb.code_prompt_show 'English · 中文', " \
                f"got {label!r}"
