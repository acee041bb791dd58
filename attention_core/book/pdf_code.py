"""Code and printed output on paper, where a line cannot scroll sideways.

Code and printed output are set in DejaVu Sans Mono at 7.8 pt (book/_static/pdf.css), which
advances 4.7 pt a character, so a <pre> in the 170 mm text block holds 99 of them. A longer
line of code is broken here, at a space where it can, and goes on under its own indentation
plus two, after a "↪"; Chromium's own wrapping (pre-wrap) would restart it at the left edge,
where it reads as a dedent. Printed output a little wider than the block (a table, as a rule)
is set smaller instead, so that its columns stay aligned.
"""
from __future__ import annotations

import unicodedata

from bs4 import BeautifulSoup, NavigableString, Tag

WRAP_COLUMNS = 97
FONT_PT = 7.8       # the size pdf.css sets code in
SHRINK_UP_TO = 1.3  # printed output up to this much wider than the block is set smaller


def columns(text: str) -> float:
    """The width of ``text`` in character columns (a Chinese character takes 1.7)."""
    return sum(1.7 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cuts(line: str, width: int) -> list[tuple[int, int]]:
    """Where to break one long line: [(offset in the line, indentation of what follows)]."""
    indent = len(line) - len(line.lstrip(" "))
    follow = min(indent + 2, width // 2)
    cuts, start, available = [], 0, width
    while columns(line[start:]) > available:
        end = start
        while columns(line[start:end + 1]) <= available:
            end += 1
        space = line.rfind(" ", start + 1, end)
        cut = space + 1 if space > start + indent + 8 else end  # after a space, else hard
        cuts.append((cut, follow))
        start, available = cut, width - follow - 2
    return cuts


def wrap_code(pre: Tag, width: int = WRAP_COLUMNS) -> None:
    """Break the long lines of a <pre> in place (its markup kept)."""
    nodes = list(pre.find_all(string=True))
    text = "".join(nodes)
    if max((columns(line) for line in text.split("\n")), default=0) <= width:
        return
    inserts, offset = [], 0
    for line in text.split("\n"):
        inserts += [(offset + cut, follow) for cut, follow in _cuts(line, width)]
        offset += len(line) + 1
    starts, position = [], 0
    for node in nodes:
        starts.append(position)
        position += len(node)
    for at, follow in reversed(inserts):
        i = max(k for k, start in enumerate(starts) if start <= at)  # the node holding `at`
        node, start = nodes[i], starts[i]
        before, after = str(node)[:at - start], str(node)[at - start:]
        marker = BeautifulSoup(f'<span class="pdf-wrap">{" " * follow}↪ </span>',
                               "html.parser").span
        new_before = NavigableString(before.rstrip(" ") + "\n")
        node.replace_with(new_before)
        new_before.insert_after(marker)
        rest = NavigableString(after)
        marker.insert_after(rest)
        nodes[i] = new_before  # later (earlier-offset) cuts fall in `before`


def fit_to_page(pre: Tag) -> None:
    """Printed output a little wider than the block is set smaller; code, and wider output,
    are wrapped."""
    longest = max(columns(line) for line in pre.get_text().split("\n"))
    if pre.find_parent(class_=["stream", "text_plain"]) and \
            WRAP_COLUMNS < longest <= SHRINK_UP_TO * WRAP_COLUMNS:
        pre["style"] = f"font-size: {FONT_PT * (WRAP_COLUMNS - 1) / longest:.2f}pt"
    else:
        wrap_code(pre)
