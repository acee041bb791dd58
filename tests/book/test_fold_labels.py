"""A folded cell's label on the site (book/_ext/fold_labels.py): both languages as spans, with
the separator the both-languages mode shows."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
fold_labels = pytest.importorskip("fold_labels")

from attention_core.book.bilingual import spans  # noqa: E402


class Writer:
    def __init__(self):
        self.body = []


def test_the_label_is_rendered_in_both_languages_with_its_separator():
    writer = Writer()
    fold_labels.visit_fold(writer, {"classes": ["above-input"],
                                    "prompt_show": "✓ Rows sum to one · ✓ 每行之和为一",
                                    "prompt_hide": "Hide the code · 收起代码"})
    html = "".join(writer.body)
    assert f'<p class="collapsed admonition-title">{spans("✓ Rows sum to one", "✓ 每行之和为一")}' \
           f"</p>" in html
    assert f'<p class="expanded admonition-title">{spans("Hide the code", "收起代码")}</p>' in html
    assert html.count('class="lang-sep"') == 2


def test_a_label_in_one_language_stays_as_it_is():
    writer = Writer()
    fold_labels.visit_fold(writer, {"classes": [], "prompt_show": "Show <code>",
                                    "prompt_hide": "Hide"})
    assert "Show &lt;code&gt;" in "".join(writer.body) and "lang-" not in "".join(writer.body)
