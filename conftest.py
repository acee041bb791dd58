"""pytest settings for nbval over chapters/ (tests/ has its own conftest).

nbval waits a fixed 5 seconds for each output message of a cell after the cell has run. With
both cores busy, a kernel that has just finished a long training cell can take longer than
that to send its output, and nbval then fails the cell although it ran and printed what the
notebook holds (seen with chapter 4 under load). The cell's own limit (--nbval-cell-timeout)
still catches a cell that hangs.
"""
OUTPUT_TIMEOUT_S = 60


def pytest_collection_modifyitems(items):
    for item in items:
        if hasattr(item, "output_timeout"):  # an nbval notebook cell
            item.output_timeout = OUTPUT_TIMEOUT_S
