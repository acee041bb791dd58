"""Chinese typography: no ASCII quotes and no italics in the book's Chinese prose.

Chinese quotes a phrase with “” (or 「」), not with ASCII " or '; and Chinese has no italic, so
emphasis in Chinese prose is bold. The Chinese prose of the book is: the `lang-zh` blocks of
every notebook's markdown cells and of the front matter, the Chinese half of bilingual
headings (``## English · 中文``), the Chinese half of the fold labels, and the table cells of
the front matter that contain Chinese characters. Code blocks, code spans and math are not
prose and are left out before checking.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = (sorted((ROOT / "chapters").glob("*.ipynb"))
            + sorted((ROOT / "solutions").glob("*.ipynb")))
FRONT_MATTER = sorted((ROOT / "book").glob("*.md"))

CJK = re.compile(r"[\u3400-\u9fff]")
ZH_BLOCK = re.compile(r'<div class="lang-zh"[^>]*>(.*?)</div>', re.S)
FENCE = re.compile(r"```.*?```", re.S)
CODE = re.compile(r"`[^`\n]*`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)  # inline math may span a line break
ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")  # {cite:p}`key`, {ref}`label`
LINK_TARGET = re.compile(r"\]\([^)]*\)")  # [text](target): the target is not prose
HTML_TAG = re.compile(r"<[^>]+>")
ASCII_QUOTE = re.compile(r"[\"']")
# *text* or _text_ as emphasis, but not **bold**, and not a list bullet "* item"
ITALIC = re.compile(r"(?<![*A-Za-z0-9\\])\*(?![*\s])[^*\n]+?(?<![*\s\\])\*(?![*A-Za-z0-9])"
                    r"|(?<![_A-Za-z0-9\\])_(?![_\s])[^_\n]+?(?<![_\s\\])_(?![_A-Za-z0-9])")


def prose(text: str) -> str:
    """Text with code blocks, roles, code spans, math, link targets and HTML tags removed."""
    for pattern in (FENCE, ROLE, CODE, MATH, LINK_TARGET, HTML_TAG):
        text = pattern.sub(" ", text)
    return text


def chinese_segments(markdown: str):
    """The Chinese prose of one markdown text: lang-zh blocks, Chinese halves of headings,
    and table cells with Chinese characters (outside the blocks)."""
    segments = [block for block in ZH_BLOCK.findall(markdown)]
    outside = ZH_BLOCK.sub("", markdown)
    outside = re.sub(r'<div class="lang-en"[^>]*>.*?</div>', "", outside, flags=re.S)
    for line in outside.splitlines():
        if line.startswith("#") and " · " in line:
            segments.append(line.split(" · ", 1)[1])
        elif line.startswith("|"):
            segments.extend(cell for cell in line.split("|") if CJK.search(prose(cell)))
    return segments


def chinese_label(label: str) -> str:
    """The Chinese half of a bilingual fold label 'English · 中文'."""
    return label.split(" · ", 1)[1] if " · " in label else ""


def problems(segment: str):
    text = prose(segment)
    found = [f"ASCII quote in: {line.strip()[:80]!r}"
             for line in text.splitlines() if ASCII_QUOTE.search(line)]
    found += [f"italics {m.group(0)!r}" for m in ITALIC.finditer(text)]
    return found


def notebook_problems(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for index, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            segments = chinese_segments(source)
        else:
            label = cell.get("metadata", {}).get("mystnb", {}).get("code_prompt_show", "")
            segments = [chinese_label(label)]
        found += [f"cell {index}: {p}" for segment in segments for p in problems(segment)]
    return found


def test_patterns():
    assert problems('他说"好"') and problems("它*就是*平均汇聚") and problems("the *global* one")
    assert not problems("“好”与**粗体**，`code \"x\"` 和 $a*b*c$")
    assert not problems("- 列表\n* 列表项\n2 * 3 = 6")
    assert chinese_segments("## Notation · 记号\n| a | 查询 |") == ["记号", " 查询 "]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_chapter_chinese_typography(path):
    found = notebook_problems(path)
    assert not found, f"{path.name}:\n" + "\n".join(found)


@pytest.mark.parametrize("path", FRONT_MATTER, ids=lambda p: p.name)
def test_front_matter_chinese_typography(path):
    found = [p for segment in chinese_segments(path.read_text(encoding="utf-8"))
             for p in problems(segment)]
    assert not found, f"{path.name}:\n" + "\n".join(found)
