"""One version for the package, the site and the PDFs; make release's zip."""
import re
import zipfile
from pathlib import Path

import pytest

import attention_core
from attention_core.book import pdf_document
from attention_core.book.release import write_release

ROOT = Path(__file__).resolve().parents[2]


def test_the_changelog_names_the_current_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (\d+\.\d+\.\d+)", text, re.M)
    assert versions and versions[0] == attention_core.__version__


def test_the_pdfs_title_pages_print_the_version():
    for lang, word in (("en", "Version"), ("zh", "版本")):
        page = pdf_document._title_page(lang)
        assert f"{word} {attention_core.__version__}" in page


def _pieces(tmp_path):
    site, pdfs, wheels = tmp_path / "html", tmp_path / "pdf", tmp_path / "wheel"
    for folder in (site / "chapters", pdfs, wheels):
        folder.mkdir(parents=True)
    (site / "index.html").write_text("<meta>", encoding="utf-8")
    (site / "chapters" / "01.html").write_text("<p>", encoding="utf-8")
    for name in ("attention-en.pdf", "attention-zh.pdf"):
        (pdfs / name).write_bytes(b"%PDF")
    version = attention_core.__version__
    (wheels / f"attention_core-{version}-py3-none-any.whl").write_bytes(b"PK")
    return site, pdfs, wheels


def test_the_release_zip_holds_the_site_both_pdfs_the_wheel_and_the_changelog(tmp_path):
    site, pdfs, wheels = _pieces(tmp_path)
    target = write_release(site, pdfs, wheels, ROOT / "CHANGELOG.md", tmp_path / "dist")
    name = f"attention-book-{attention_core.__version__}"
    assert target.name == f"{name}.zip"
    names = set(zipfile.ZipFile(target).namelist())
    assert names == {f"{name}/site/index.html", f"{name}/site/chapters/01.html",
                     f"{name}/attention-en.pdf", f"{name}/attention-zh.pdf",
                     f"{name}/attention_core-{attention_core.__version__}-py3-none-any.whl",
                     f"{name}/CHANGELOG.md", f"{name}/README.txt"}


def test_a_release_without_a_piece_names_what_is_missing(tmp_path):
    site, pdfs, wheels = _pieces(tmp_path)
    (pdfs / "attention-zh.pdf").unlink()
    for wheel in wheels.iterdir():
        wheel.unlink()
    with pytest.raises(FileNotFoundError, match=r"attention-zh\.pdf.*one wheel attention_core-"):
        write_release(site, pdfs, wheels, ROOT / "CHANGELOG.md", tmp_path / "dist")


def test_the_wheel_lists_every_subpackage():
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(project["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "attention_core").rglob("__init__.py")}
    assert listed == found
