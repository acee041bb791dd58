"""Chinese typography: no space between two Chinese characters.

Markdown turns a line break into a space, which English needs and Chinese does not: a
paragraph wrapped after "输入。" shows "输入。 本书". A space typed between two Chinese words
("把 键值缓存", often left where an English term was replaced) is just as stray. Before each
page is written we remove, in prose only (never in code, math or raw HTML), any white space
between a CJK character (ideograph or CJK punctuation) and the next CJK character. The spaces
around Latin words, numbers and math stay ("用 softmax 归一化", "第 $i$ 个", "第 1 章"). Curly
quotes are Chinese punctuation on their inner side: "译为 “2021”" and "“four” 在英文里" lose their
space, while English prose keeps "the word “key” is". The rule works across inline markup:
"斯坦福、\n**微软**" and "这就是 *键值缓存*" lose their space too.

A closing mark (，。）…) never begins a line: after inline math or code it is glued to them.
"""
from __future__ import annotations

import re

from docutils import nodes

IDEO = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
PUNCT = "\u3000-\u303f\uff00-\uffef"
CJK = f"[{IDEO}{PUNCT}]"
OPENING, CLOSING = "\u201c\u2018", "\u201d\u2019"  # “‘ and ”’
# the white space to remove, seen in the text of a run of neighbouring prose nodes: between two
# CJK characters, before an opening quote that follows one, after a closing quote before one
STRAY = [re.compile(rf"(?<={CJK})\s+(?={CJK})"),
         re.compile(rf"(?<={CJK})\s+(?=[{OPENING}])"),
         re.compile(rf"(?<=[{CLOSING}])\s+(?={CJK})")]
# text in these is not prose: keep it byte for byte
VERBATIM = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw, nodes.comment)


def _prose(text_node) -> bool:
    parent = text_node.parent
    while parent is not None:
        if isinstance(parent, VERBATIM):
            return False
        parent = parent.parent
    return True


def tighten(text: str) -> str:
    """The text without its stray spaces (for one string; pages go through the doctree)."""
    for pattern in STRAY:
        text = pattern.sub("", text)
    return text


def _runs(doctree):
    """Neighbouring prose Text nodes in reading order; code, math or raw HTML ends a run."""
    run = []
    for text in doctree.findall(nodes.Text):
        if _prose(text):
            run.append(text)
        elif run:
            yield run
            run = []
    if run:
        yield run


def remove_stray_cjk_spaces(app, doctree, docname):
    for run in _runs(doctree):
        joined = "".join(str(t) for t in run)  # so "、\n" + "" + "<strong>微软" is seen whole
        drop = set()
        for pattern in STRAY:
            for m in pattern.finditer(joined):
                drop.update(range(m.start(), m.end()))
        if not drop:
            continue
        start = 0
        for node in run:
            old = str(node)
            new = "".join(ch for k, ch in enumerate(old, start) if k not in drop)
            start += len(old)
            if new != old:
                parent = node.parent  # by identity: Element.replace finds an *equal* Text
                position = next(k for k, child in enumerate(parent.children) if child is node)
                parent[position] = nodes.Text(new)


# marks that must not begin a line (GB/T 15834): the browser breaks between an inline box
# (a formula, inline code) and the text after it, so "$x$，" could leave "，" to start a line
CLOSING_MARKS = "，。；：、！？）》」』】”’"


def _child_index(parent, node) -> int:
    return next(k for k, child in enumerate(parent.children) if child is node)  # by identity


def glue_closing_marks(app, doctree, docname):
    """Inline math or code and the Chinese closing mark right after it go into one span that
    does not wrap (``cjk-glue``, book.css and pdf.css), so the mark ends the line with it."""
    for node in list(doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.literal)))):
        parent = node.parent
        if parent is None or isinstance(parent, nodes.FixedTextElement):
            continue
        position = _child_index(parent, node)
        after = parent[position + 1] if position + 1 < len(parent) else None
        if not isinstance(after, nodes.Text) or str(after)[:1] not in CLOSING_MARKS:
            continue
        text = str(after)
        glue = nodes.inline(classes=["cjk-glue"])
        parent[position] = glue
        glue += node
        glue += nodes.Text(text[0])
        if len(text) > 1:
            parent[position + 1] = nodes.Text(text[1:])
        else:
            del parent[position + 1]


def setup(app):
    app.connect("doctree-resolved", remove_stray_cjk_spaces)
    app.connect("doctree-resolved", glue_closing_marks, priority=600)  # after the spaces go
    return {"parallel_read_safe": True, "parallel_write_safe": True}
