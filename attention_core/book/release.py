"""``make release``: one zip of what a reader needs offline, named by the book's one version.

``attention-book-<version>.zip`` holds, under ``attention-book-<version>/``: the built site
(``site/``, open ``site/index.html``), both PDFs, the package's wheel, the changelog and a
README that says what is where. ``python -m attention_core.book.release --help``.
"""
from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

from .. import __version__

PDFS = ("attention-en.pdf", "attention-zh.pdf")
README = """Attention Mechanisms · 注意力机制, version {version}

site/index.html    the book's site: open it in a browser; it needs no network
                   本书网站：用浏览器打开，无需联网
attention-en.pdf   the book in English · 英文版 PDF
attention-zh.pdf   the book in Chinese · 中文版 PDF
{wheel}
                   the package: pip install {wheel} · 本书的 Python 包
CHANGELOG.md       what each version changed · 各版本的更新记录
"""


def write_release(site: Path, pdfs: Path, wheels: Path, changelog: Path, out: Path) -> Path:
    """Write out/attention-book-<version>.zip from the built site, the folder of the two PDFs,
    the folder holding the package's wheel of this version, and the changelog; return its path.
    Raises FileNotFoundError naming whatever is missing."""
    missing = [str(p) for p in [site / "index.html", *(pdfs / name for name in PDFS), changelog]
               if not p.is_file()]
    found = sorted(wheels.glob(f"attention_core-{__version__}-*.whl")) if wheels.is_dir() else []
    if len(found) != 1:
        missing.append(f"one wheel attention_core-{__version__}-*.whl in {wheels} "
                       f"(found {len(found)})")
    if missing:
        raise FileNotFoundError("the release needs: " + "; ".join(missing))
    name = f"attention-book-{__version__}"
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{name}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in site.rglob("*") if p.is_file()):
            archive.write(path, f"{name}/site/{path.relative_to(site).as_posix()}")
        for pdf in PDFS:
            archive.write(pdfs / pdf, f"{name}/{pdf}")
        archive.write(found[0], f"{name}/{found[0].name}")
        archive.write(changelog, f"{name}/CHANGELOG.md")
        archive.writestr(f"{name}/README.txt",
                         README.format(version=__version__, wheel=found[0].name))
    return target


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=Path("_build/html"))
    parser.add_argument("--pdfs", type=Path, default=Path("_build/pdf"))
    parser.add_argument("--wheels", type=Path, default=Path("dist/wheel"))
    parser.add_argument("--changelog", type=Path, default=Path("CHANGELOG.md"))
    parser.add_argument("--out", type=Path, default=Path("dist"))
    args = parser.parse_args(argv)
    target = write_release(args.site, args.pdfs, args.wheels, args.changelog, args.out)
    print(f"{target} ({target.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
