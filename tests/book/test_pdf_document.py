"""book.pdf_document: the pages joined in reading order under a title page and contents."""
from pathlib import Path

from attention_core.book.bilingual import join
from attention_core.book.pdf_document import TEXT, build_document, toc_entries

ROOT = Path(__file__).resolve().parents[2]

PAGE = """<html><body><article class="bd-article"><section id="{id}">
<h1>{title}<a class="headerlink" href="#{id}">#</a></h1>
<section id="part"><h2>{section}</h2><p>See <a href="{link}">there</a>.</p></section>
</section></article></body></html>"""


def test_toc_entries_follow_the_books_reading_order():
    entries = toc_entries(ROOT / "_toc.yml")
    assert entries[0] == (None, "book/intro")
    chapters = [doc for _, doc in entries if doc.startswith("chapters/")]
    assert chapters == sorted(chapters) and len(chapters) >= 10
    assert [c for c, _ in entries if c][:2] == ["Front matter · 前言", "Chapters · 章节"]


def test_one_language_document_with_contents_and_running_heads(tmp_path):
    html, out = tmp_path / "html", tmp_path / "pdf"
    (html / "chapters").mkdir(parents=True)
    (html / "intro.html").write_text(PAGE.format(
        id="intro", title=join("Introduction", "引言"), section=join("Why", "为什么"),
        link="chapters/01.html#part"), encoding="utf-8")
    (html / "chapters" / "01.html").write_text(PAGE.format(
        id="cues", title=join("1. Cues", "提示"), section=join("Queries", "查询"),
        link="../intro.html"), encoding="utf-8")
    toc = tmp_path / "_toc.yml"
    toc.write_text("root: intro\nparts:\n  - caption: Chapters · 章节\n    chapters:\n"
                   "      - file: chapters/01\n", encoding="utf-8")
    document, contents = build_document(html, out, "zh", {"chapters-01": 7}, toc)
    assert contents == [(1, "intro", "引言"), (0, None, "章节"), (1, "chapters-01", "1. 提示"),
                        (2, "chapters-01--part", "查询")]
    assert '<html lang="zh-Hans" class="pdf-zh">' in document
    assert TEXT["zh"]["title"] in document and "Introduction" not in document
    assert '<a href="#chapters-01"><span class="pdf-toc-text">1. 提示</span>' in document
    assert '<span class="pdf-toc-page">7</span>' in document  # from the previous printing
    assert '@page p1 { @top-right { content: "1. 提示"; } }' in document
    assert 'href="#chapters-01--part"' in document and 'href="#intro"' in document
