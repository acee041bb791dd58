"""Search that finds Chinese words as well as English ones.

Sphinx's default (English) splitter cuts text at non-letters, so a whole Chinese sentence
becomes one "word" and a search for 编码 finds nothing. With ``html_search_language: zh``
Sphinx segments the text with jieba (installed from requirements.txt) and still indexes the
Latin words, stemmed. This extension refines that language in three ways:

1. The book's own terms are jieba words. The glossary's Chinese column (book/glossary.md) and
   a few terms that jieba's dictionary lacks (束搜索) are added before indexing, so 位置编码 is
   indexed as one word as well as 位置 and 编码 (``cut_for_search`` emits both). A term inside
   a longer one is indexed too: ``cut_for_search`` emits only the 2- and 3-character parts of
   正弦位置编码, so ``split`` adds the book's terms that a word contains (位置编码).
2. English stems agree between the index and the browser. Sphinx's Chinese language stems with
   Snowball's "english" in Python but ships the older Porter stemmer to JavaScript; the two
   disagree on some words. We stem with Porter on both sides, as Sphinx's English language does.
3. The query is segmented in the browser. A reader types 位置编码的公式 without spaces;
   ``splitQuery`` below cuts each run of Chinese characters into the longest words that the
   index holds (forward maximum matching against the index that jieba built), and leaves
   Latin words to Sphinx's usual rule.
4. Ranking and snippets: search_results.js, beside this file (a page whose title holds the
   query ranks first; snippets are the article's prose, formulas as plain text).
"""
from __future__ import annotations

import re
from pathlib import Path

import snowballstemmer
from sphinx.search.zh import SearchChinese

# Terms of the book that jieba's dictionary splits; the glossary adds the rest.
EXTRA_WORDS = ["束搜索", "贪心搜索", "位置编码", "注意力头", "加性注意力", "缩放点积注意力",
               "点积注意力", "词元", "掩蔽", "核回归", "相对位置", "旋转位置编码"]
BOOK_WORDS: set[str] = set()  # filled at builder-inited: EXTRA_WORDS and the glossary's terms
HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}")

JS_SPLITTER = r"""
/* book/_ext/zh_search.py: Latin words as Sphinx splits them; each run of Chinese characters
   cut into the longest words that the search index holds (it was segmented with jieba). */
function splitQuery(query) {
  var index = (typeof Search !== "undefined" && Search._index) || {};
  var terms = index.terms || {}, titles = index.titleterms || {};
  var known = function (w) {
    var l = w.toLowerCase();
    return Object.prototype.hasOwnProperty.call(terms, l) ||
           Object.prototype.hasOwnProperty.call(titles, l);
  };
  var out = [];
  query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).forEach(function (part) {
    var re = /(\p{Script=Han}+)|(\P{Script=Han}+)/gu, m;
    while ((m = re.exec(part)) !== null) {
      if (m[2]) { out.push(m[2]); continue; }
      var run = m[1], words = [], i = 0;
      while (i < run.length) {
        var j = Math.min(run.length, i + 12);
        while (j > i + 1 && !known(run.slice(i, j))) j--;
        if (j > i + 1 || known(run.charAt(i))) words.push(run.slice(i, j));
        i = j;
      }
      // nothing of it is in the index: keep the run, so the search honestly finds nothing
      Array.prototype.push.apply(out, words.length ? words : [run]);
    }
  });
  return out.filter(function (t) { return t; });
}
"""


class BookSearch(SearchChinese):
    """Sphinx's Chinese search with the book's terms, Porter stems and a segmenting query."""

    js_splitter_code = JS_SPLITTER

    def init(self, options):
        super().init(options)
        self.stemmer = snowballstemmer.stemmer("porter")  # what the browser's Stemmer does

    def split(self, input: str) -> list[str]:
        words = super().split(input)
        inside = [term for word in words if len(word) > 3
                  for term in BOOK_WORDS if term != word and term in word]
        return words + inside


def add_book_words(app):
    try:
        import jieba
    except ImportError:  # Sphinx then indexes Latin words only; requirements.txt installs it
        return
    import logging

    jieba.setLogLevel(logging.WARNING)
    words = set(EXTRA_WORDS)
    glossary = Path(app.srcdir) / "book" / "glossary.md"
    if glossary.exists():
        for line in glossary.read_text(encoding="utf-8").splitlines():
            cells = line.split("|")
            if line.startswith("|") and len(cells) > 2:
                words.update(HAN_RUN.findall(cells[2]))
    for word in sorted(words):
        jieba.add_word(word)
    BOOK_WORDS.clear()
    BOOK_WORDS.update(words)


def use_book_scorer(app, config):
    """Ranking and snippets (search_results.js), as Sphinx's html_search_scorer: a path Sphinx
    opens from the working directory, so an absolute one."""
    config.html_search_scorer = str(Path(__file__).with_name("search_results.js"))


def setup(app):
    app.add_search_language(BookSearch)
    app.connect("config-inited", use_book_scorer)
    app.connect("builder-inited", add_book_words)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
