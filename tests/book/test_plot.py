"""book.plot: the house style, heatmaps and the head view."""
import warnings

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from attention_core.book.plot import draw_head_view, show_heatmaps, use_house_style  # noqa: E402


def test_chinese_text_renders_without_missing_glyphs(tmp_path):
    use_house_style()
    fig, ax = plt.subplots()
    ax.set_title("注意力汇聚 · attention pooling：键、查询、值")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s)" is a UserWarning
        fig.savefig(tmp_path / "zh.png")
    plt.close(fig)


@pytest.mark.parametrize("shape, panels", [((3, 4), 1), ((2, 3, 4), 2), ((2, 3, 3, 4), 6)])
def test_show_heatmaps_grid(shape, panels):
    fig = show_heatmaps(torch.rand(shape), "keys", "queries", colorbar=False)
    assert sum(bool(ax.images) for ax in fig.axes) == panels
    plt.close(fig)


def test_show_heatmaps_bad_input():
    with pytest.raises(ValueError, match=r"got shape \(5,\)"):
        show_heatmaps(torch.rand(5), "k", "q")
    with pytest.raises(ValueError, match="titles has 1 entries but matrices has 2 columns"):
        show_heatmaps(torch.rand(2, 3, 4), "k", "q", titles=["a"])
    with pytest.raises(ValueError, match=r"got shape \(2, 2, 2, 2, 2\)"):  # an array too
        show_heatmaps(torch.rand(2, 2, 2, 2, 2).numpy(), "k", "q")


def test_head_view_draws_one_line_per_visible_weight_and_checks_its_input():
    w = torch.zeros(3, 2, 4)
    w[0, :, 0] = 1.0          # head 1: both queries on key 1
    w[1, 0, 1] = w[1, 1, 2] = 1.0
    w[2] = 0.25               # head 3: uniform
    fig, ax = plt.subplots()
    draw_head_view(ax, w, ["q1", "q2"], list("abcd"))
    drawn = [line for line in ax.get_lines() if len(line.get_xdata())]
    assert len(drawn) == 2 + 2 + 8
    assert len(ax.get_lines()) - len(drawn) == 3  # one swatch per head
    ax.clear()
    draw_head_view(ax, w, ["q1", "q2"], list("abcd"), heads=1)
    drawn = [line for line in ax.get_lines() if len(line.get_xdata())]
    assert [line.get_alpha() for line in ax.get_lines()[2:]] == [0.2, 1.0, 0.2]  # swatches
    ends = [y for line in drawn for y in line.get_ydata()]  # query 1 -> key 2, query 2 -> key 3
    assert ends == pytest.approx([1.0, 2 / 3, 0.0, 1 / 3])
    with pytest.raises(ValueError, match="need 2 query labels and 4 key labels"):
        draw_head_view(ax, w, ["q1"], list("abcd"))
    with pytest.raises(ValueError, match=r"heads must be 'all' or a head index in 0..2"):
        draw_head_view(ax, w, ["q1", "q2"], list("abcd"), heads=3)
    with pytest.raises(ValueError, match=r"weights must be \(heads, n_queries, n_keys\)"):
        draw_head_view(ax, w[0], ["q1", "q2"], list("abcd"))
    plt.close(fig)
