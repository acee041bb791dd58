"""The Chromium that the browser tests drive (Debian's `chromium`; Playwright downloads none).

Without one these tests skip, except in CI (CI=true), where `.ci/run` installs it and a missing
browser is an error rather than a silent skip.
"""
import os
import shutil

import pytest

CHROMIUM = (os.environ.get("CHROMIUM") or shutil.which("chromium")
            or shutil.which("chromium-browser"))
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic"]

if os.environ.get("CI") == "true" and not CHROMIUM:  # in CI the browser checks must run
    raise RuntimeError("CI=true but no Chromium found: .ci/run installs Debian's chromium")

needs_chromium = pytest.mark.skipif(not CHROMIUM, reason="no Chromium: apt-get install chromium")


def browser_test(test):
    """Marks a test that drives Chromium (marker ``browser``), skipped where there is none."""
    return pytest.mark.browser(needs_chromium(test))
