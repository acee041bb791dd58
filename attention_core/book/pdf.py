"""The book as two PDFs, one per language, printed by Chromium from the built site.

    python -m attention_core.book.pdf [--html _build/html] [--out _build/pdf]

reads the pages that ``jupyter-book build`` wrote (the notebooks' committed outputs, nothing is
executed), keeps one language of every bilingual block and heading, joins the pages in the order
of ``_toc.yml`` into one HTML document per language (``pdf_document``, each page by
``pdf_page``), and prints it with Chromium under the print stylesheet
``book/_static/pdf.css``: a title page, a table of contents with page numbers, bookmarks from
the headings, running heads and page numbers (CSS page-margin boxes), links between chapters
and to the bibliography as links inside the PDF. The page numbers of the table of contents
come from a first printing: Chromium writes a named destination for every link target, and
``pdfinfo -dests`` (poppler-utils) says on which page each one landed.

Writes ``<out>/attention-en.pdf`` and ``<out>/attention-zh.pdf`` and copies both into
``<html>/pdf/``, where the site's header links to them.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import pdf_fonts
from .bilingual import LANGS
from .pdf_document import build_document

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


def named_destinations(pdf: Path) -> dict[str, int]:
    """{destination name: page number} from poppler's pdfinfo."""
    out = subprocess.run(["pdfinfo", "-dests", str(pdf)], check=True, capture_output=True,
                         text=True).stdout
    dests = {}
    for line in out.splitlines():
        m = re.match(r'\s*(\d+)\s+\[.*\]\s+"(.*)"\s*$', line)
        if m:
            dests.setdefault(m.group(2), int(m.group(1)))
    return dests


PREPARE_JS = """async () => {
  await document.fonts.ready;
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await Promise.all([...document.images].map(img => img.complete ? null :
      new Promise(r => { img.onload = img.onerror = r; })));
  // what is wider than the text block is scaled down to fit (display math, tables)
  const width = document.querySelector('.pdf-page').clientWidth;
  for (const el of document.querySelectorAll('mjx-container[display="true"], table')) {
    if (el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().width > width + 1) {
      const w = Math.max(el.scrollWidth, el.getBoundingClientRect().width);
      el.style.zoom = Math.max(0.5, (width - 2) / w);
    }
  }
  // Chinese text that reached the CJK face through a fallback list while the face was loading
  // keeps the primary font's empty boxes (the first Chinese words of the English document):
  // a fresh text node is shaped again, now with the face loaded.
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const cjk = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode())
    if (/[\u3400-\u9fff]/.test(n.data)) cjk.push(n);
  for (const n of cjk) n.replaceWith(document.createTextNode(n.data));
  await document.fonts.ready;
  return document.images.length;
}"""


def print_pdfs(documents: dict[str, Path], pdfs: dict[str, Path]) -> None:
    from playwright.sync_api import sync_playwright
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or \
        shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("no Chromium: apt-get install chromium (see README.md)")
    import tempfile
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True, args=CHROMIUM_FLAGS,
            offline=True)
        try:
            page = browser.new_page()
            for lang, document in documents.items():
                page.goto(document.resolve().as_uri(), wait_until="load", timeout=180_000)
                page.emulate_media(media="print")
                page.evaluate(PREPARE_JS)
                page.pdf(path=str(pdfs[lang]), prefer_css_page_size=True, outline=True,
                         tagged=True, print_background=True)
        finally:
            browser.close()


def build(html_dir: Path, out_dir: Path, toc_path: Path, langs=LANGS) -> dict[str, Path]:
    if not (html_dir / "_static" / "pdf.css").exists():
        raise SystemExit(f"{html_dir} holds no built site with pdf.css: run `make book` first")
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out_dir / "fonts", ignore_errors=True)  # an earlier build's characters
    documents = {lang: out_dir / f"attention-{lang}.html" for lang in langs}
    pdfs = {lang: out_dir / f"attention-{lang}.pdf" for lang in langs}
    numbers: dict[str, dict[str, int]] = {lang: {} for lang in langs}
    for _ in range(3):
        tocs = {}
        for lang in langs:
            text, tocs[lang] = build_document(html_dir, out_dir, lang, numbers[lang], toc_path)
            documents[lang].write_text(text, encoding="utf-8")
        if not (out_dir / "fonts").exists():  # the characters do not change with the numbers
            pdf_fonts.prepare(html_dir, out_dir, [d.read_text(encoding="utf-8")
                                                  for d in documents.values()])
        print_pdfs(documents, pdfs)
        found = {lang: named_destinations(pdfs[lang]) for lang in langs}
        wanted = {lang: {target: found[lang].get(target) for _, target, _ in tocs[lang]
                         if target} for lang in langs}
        if wanted == numbers:
            break  # the numbers printed are the pages the entries landed on
        numbers = wanted
    else:
        raise SystemExit("the table of contents' page numbers did not settle")
    site_copy = html_dir / "pdf"
    site_copy.mkdir(exist_ok=True)
    for pdf in pdfs.values():
        shutil.copy2(pdf, site_copy / pdf.name)
    return pdfs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # paths from the repository root, where make runs
    parser.add_argument("--html", type=Path, default=Path("_build") / "html")
    parser.add_argument("--out", type=Path, default=Path("_build") / "pdf")
    parser.add_argument("--toc", type=Path, default=Path("_toc.yml"))
    parser.add_argument("--lang", choices=LANGS, action="append")
    parser.add_argument("--if-possible", action="store_true",
                        help="without Chromium or poppler-utils, say so and stop (make book)")
    args = parser.parse_args(argv)
    missing = [tool for tool, found in
               [("chromium", os.environ.get("CHROMIUM") or shutil.which("chromium")
                 or shutil.which("chromium-browser")), ("poppler-utils", shutil.which("pdfinfo"))]
               if not found]
    if missing:
        message = (f"no PDFs: this machine lacks {' and '.join(missing)} "
                   f"(apt-get install chromium poppler-utils; see README.md)")
        if args.if_possible:
            print(message)
            return 0
        raise SystemExit(message)
    start = time.perf_counter()
    pdfs = build(args.html, args.out, args.toc, tuple(args.lang or LANGS))
    for pdf in pdfs.values():
        print(f"{pdf} ({pdf.stat().st_size / 1e6:.1f} MB)")
    print(f"PDFs in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
