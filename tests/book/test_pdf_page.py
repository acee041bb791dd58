"""book.pdf_page: a built page made ready for paper in one language."""
from pathlib import Path

import pytest

from attention_core.book.bilingual import join, label_html, spans
from attention_core.book.pdf_page import TEXT, page_article, slug

ARTICLE = f"""<html><body><article class="bd-article">
<section id="pooling"><h1>2. Pooling · 汇聚<a class="headerlink" href="#pooling">#</a></h1>
<div class="lang-en" lang="en"><p>Attention pools the values.</p></div>
<div class="lang-zh" lang="zh-Hans"><p>注意力汇聚各个值。</p></div>
<table><thead><tr><th>symbol</th><th>meaning</th><th>含义</th></tr></thead>
<tbody><tr><td>q</td><td>a query</td><td>查询</td></tr><tr><td>{join("scalar", "标量")}</td>
<td>x</td><td>y</td></tr></tbody></table>
<details class="hide above-input"><summary>
<p class="collapsed admonition-title">{label_html(join("✓ Rows sum to one", "✓ 每行之和为一"))}</p>
</summary><div class="cell_input"><pre>assert True</pre></div></details>
<div class="ac-slider-figure"><img src="../_images/frame.png" loading="lazy">
<div class="ac-slider-controls"><label for="f-in0">{spans("bandwidth", "带宽")}</label></div>
<p class="ac-slider-note">{spans("Precomputed frames.", "预先计算的帧。")}</p></div>
<div class="ac-playground" id="play"></div>
<p><a href="03_scoring.html#dot">chapter 3</a> <a href="#pooling">up</a>
<a href="https://example.org/">out</a> <a href="../_sources/x.ipynb">source</a></p>
</section></article></body></html>"""


@pytest.fixture
def site(tmp_path):
    page = tmp_path / "html" / "chapters" / "02_pooling.html"
    page.parent.mkdir(parents=True)
    page.write_text(ARTICLE, encoding="utf-8")
    root = tmp_path / "html"
    pages = {"__root__": str(root.resolve()), "chapters/02_pooling.html": "chapters/02_pooling",
             "chapters/03_scoring.html": "chapters/03_scoring"}
    return page, pages, tmp_path / "pdf"


@pytest.mark.parametrize("lang, kept, gone", [("en", "Attention pools", "注意力"),
                                              ("zh", "注意力汇聚各个值", "Attention pools")])
def test_one_language_of_every_block_heading_label_and_column(site, lang, kept, gone):
    page, pages, out = site
    article, title = page_article(page, "chapters/02_pooling", lang, pages, out)
    text = article.get_text()
    assert kept in text and gone not in text and "·" not in text
    assert title == {"en": "2. Pooling", "zh": "2. 汇聚"}[lang]
    heads = [th.get_text() for th in article.select("th")]
    assert heads == ["symbol", {"en": "meaning", "zh": "含义"}[lang]]
    assert article.select("td")[2].get_text() == {"en": "scalar", "zh": "标量"}[lang]


def test_paper_gets_a_sentence_for_what_only_a_browser_shows(site):
    page, pages, out = site
    article, _ = page_article(page, "chapters/02_pooling", "en", pages, out)
    folded = article.select_one("p.pdf-folded").get_text()
    assert folded == f"{TEXT['en']['folded']} ✓ Rows sum to one {TEXT['en']['folded_tail']}"
    assert not article.select("details, .ac-slider-controls, .ac-playground, a.headerlink")
    notes = [p.get_text() for p in article.select(".ac-slider-note")]
    assert notes == [TEXT["en"]["interactive"], TEXT["en"]["playground"]]
    img = article.select_one("img")
    assert "loading" not in img.attrs and Path(img["src"]).parts[-2:] == ("_images", "frame.png")


def test_ids_and_links_are_made_document_wide(site):
    page, pages, out = site
    article, _ = page_article(page, "chapters/02_pooling", "en", pages, out)
    prefix = slug("chapters/02_pooling") + "--"
    assert prefix == "chapters-02_pooling--"
    assert article.select_one("section")["id"] == prefix + "pooling"
    links = {a.get_text(): a["href"] for a in article.select("a[href]")}
    assert links == {"chapter 3": "#chapters-03_scoring--dot", "up": "#" + prefix + "pooling",
                     "out": "https://example.org/"}
    assert "source" in article.get_text()  # a file of the site, not of the book: the words stay
