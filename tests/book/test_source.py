"""book.source: a chapter shows the package's real source, the code that is tested."""
import pytest

import attention_core as ac
from attention_core.book.source import show_source


def test_show_source_shows_the_real_code():
    md = show_source(ac.masked_softmax, ac.DotProductAttention)
    assert "def masked_softmax(scores" in md.data and "class DotProductAttention" in md.data
    assert "`attention_core.masking.masked_softmax`, line" in md.data
    method = show_source(ac.MultiHeadAttention.forward).data
    assert method.startswith("`attention_core.multihead.MultiHeadAttention.forward`, line")
    with pytest.raises(TypeError, match="show_source needs"):
        show_source(3)


def test_a_function_with_a_contract_is_shown_with_it():
    """The reader sees the contract above the body, where the function declares it."""
    from attention_core.book.plot import show_heatmaps

    shown = show_source(show_heatmaps).data
    assert "`attention_core.book.plot.show_heatmaps`, line" in shown
    assert "@contract(" in shown and "def show_heatmaps(" in shown
