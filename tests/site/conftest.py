"""What the tests of the built site share: Playwright, one headless Chromium, and the site
served over HTTP."""
import functools
import http.server
import threading

import pytest
from browser import CHROMIUM, FLAGS
from built_site import HTML


@pytest.fixture(scope="module")
def playwright():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright):
    b = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
    yield b
    b.close()


@pytest.fixture(scope="module")
def served():
    """The site over HTTP on the loopback address, as a host serves it: the search page
    fetches pages for its snippets, which a file:// page may not do."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()
