"""The site search's Chinese splitter (book/_ext/zh_search.py), without a browser."""
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
pytest.importorskip("jieba")
zh_search = pytest.importorskip("zh_search")


@pytest.fixture(scope="module")
def splitter():
    zh_search.add_book_words(SimpleNamespace(srcdir=str(ROOT)))  # the glossary's terms
    search = zh_search.BookSearch.__new__(zh_search.BookSearch)
    search.latin_terms = []
    return search


def test_a_term_inside_a_longer_glossary_term_is_indexed(splitter):
    assert "正弦位置编码" in zh_search.BOOK_WORDS and "位置编码" in zh_search.BOOK_WORDS
    words = splitter.split("正弦位置编码表及其第 i 行")
    assert "位置编码" in words and "正弦" in words


def test_every_glossary_term_is_found_in_every_longer_term_that_holds_it(splitter):
    for long in zh_search.BOOK_WORDS:
        words = splitter.split(long)
        missing = [t for t in zh_search.BOOK_WORDS if t in long and t not in words]
        assert not missing, f"{long}: the index would miss {missing}"


def test_latin_words_still_come_through(splitter):
    assert "softmax" in splitter.split("softmax 的权重")
