"""book.pdf_code: code lines broken to the printed width under their own indentation, printed
output set smaller where that keeps a table's columns."""
from bs4 import BeautifulSoup

from attention_core.book.pdf_code import WRAP_COLUMNS, columns, fit_to_page, wrap_code


def test_long_code_lines_wrap_under_their_own_indentation():
    long = "        return torch.stack([" + ", ".join(f"item_{i}" for i in range(40)) + "])"
    html = f'<pre><span class="k">def</span> f(x):\n{long}\nshort\n' + "x" * 150 + "</pre>"
    pre = BeautifulSoup(html, "html.parser").pre
    wrap_code(pre, 60)
    lines = pre.get_text().split("\n")
    assert lines[0] == "def f(x):" and pre.span.get_text() == "def"  # markup kept
    assert all(len(line) <= 60 for line in lines), lines
    body = [line for line in lines if "item_" in line]
    assert body[0].startswith("        return") and all(
        line.startswith("          ↪ item_") for line in body[1:])  # indent + 2, then the mark
    assert "".join(line.replace("↪", "").strip() for line in body).replace(" ", "") == \
        long.replace(" ", "")  # nothing lost, breaks only at spaces here
    assert "short" in lines and lines[-2].startswith("  ↪ x")  # no space: a hard break


def test_chinese_characters_take_wider_columns():
    assert columns("abc") == 3 and columns("注意力") == 3 * 1.7


def test_printed_output_a_little_too_wide_is_set_smaller_and_code_wraps():
    row = "x" * (WRAP_COLUMNS + 10)
    output = BeautifulSoup(f'<div class="stream"><pre>{row}</pre></div>', "html.parser").pre
    fit_to_page(output)
    assert output["style"].startswith("font-size:") and output.get_text() == row
    code = BeautifulSoup(f"<pre>{row}</pre>", "html.parser").pre
    fit_to_page(code)
    assert "style" not in code.attrs and "↪" in code.get_text()
