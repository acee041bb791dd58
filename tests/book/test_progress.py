"""book.progress: a bar while a slow cell runs, nothing of it in the saved notebook."""
import nbformat
import pytest
from nbclient import NotebookClient

from attention_core.book.progress import WIDGET_VIEW, progress


def test_outside_a_kernel_it_only_iterates(capsys):
    assert list(progress(range(5), "timing")) == [0, 1, 2, 3, 4]
    assert list(progress(iter("ab"), "timing", total=2)) == ["a", "b"]
    assert capsys.readouterr() == ("", "")
    with pytest.raises(TypeError, match="desc must be a str, got int"):
        list(progress(range(2), 3))


class _Recording(NotebookClient):
    """Keeps every output message the kernel sent, as a front end receives them."""

    def output(self, outs, msg, display_id, cell_index):
        self.messages.append((cell_index, msg["msg_type"], dict(msg["content"])))
        return super().output(outs, msg, display_id, cell_index)

    def clear_output(self, outs, msg, cell_index):
        self.messages.append((cell_index, msg["msg_type"], dict(msg["content"])))
        return super().clear_output(outs, msg, cell_index)


@pytest.mark.slow  # starts a kernel
def test_in_a_kernel_the_bar_is_shown_then_gone_from_the_saved_outputs(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from attention_core.book.progress import progress\n"
                                  "total = sum(i for i in progress(range(4), 'timing'))\n"
                                  "print('total', total)"),
        nbformat.v4.new_code_cell("print('before')\n"
                                  "for i in progress(range(3), 'failing'):\n"
                                  "    if i == 1:\n"
                                  "        raise RuntimeError('stop')"),
    ]
    client = _Recording(nb, timeout=120, kernel_name="python3", allow_errors=True,
                        resources={"metadata": {"path": str(tmp_path)}})
    client.messages = []
    client.execute()
    shown = [(i, content["data"]) for i, kind, content in client.messages if kind == "display_data"]
    # the bar was displayed in both cells, as a widget view only (no text to compare)
    assert [i for i, _ in shown] == [0, 1] and all(set(data) == {WIDGET_VIEW} for _, data in shown)
    assert [kind for i, kind, _ in client.messages if i == 0].count("clear_output") == 1
    # the finished loop left only what the cell printed after it
    assert [o.get("text") for o in nb.cells[0].outputs] == ["total 6\n"]
    # a loop that raised keeps everything (the bar shows where it stopped), nothing is cleared
    kinds = [o["output_type"] for o in nb.cells[1].outputs]
    assert kinds == ["stream", "display_data", "error"]
    assert nb.cells[1].outputs[0]["text"] == "before\n"


def test_best_times_with_a_bar_times_as_without(capsys):
    from attention_core.book.timing import best_times
    times = best_times({"sum": lambda: sum(range(100)), "max": lambda: max(range(100))},
                       rounds=2, min_run_time=0.001, desc="timing")
    assert set(times) == {"sum", "max"} and all(0 < t < 1 for t in times.values())
    assert capsys.readouterr() == ("", "")
