"""The book tooling is a layer above the library: the mechanisms and the worlds import nothing
of it, and everything it imports is torch, the package itself, the standard library, or
declared in the ``book`` extra of pyproject.toml."""
import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "attention_core"
# imported only where it is there: inside Jupyter (use_house_style's retina figures)
OPTIONAL = {"matplotlib_inline"}


def imports(path: Path) -> set[str]:
    """The modules a file imports, relative ones as written (".book.plot", "..contracts")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


def test_the_library_imports_nothing_of_the_book_tooling():
    below = [*PACKAGE.glob("*.py"), *(PACKAGE / "worlds").glob("*.py")]
    assert len(below) > 20
    reaching_up = {p.relative_to(ROOT).as_posix(): sorted(m for m in imports(p) if re.match(
        r"(attention_core\.book|\.+book)(\.|$)", m)) for p in below}
    assert not {p: m for p, m in reaching_up.items() if m}


def test_every_import_of_the_book_tooling_is_declared_in_its_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {re.split(r"[<>=!~ \[;]", r)[0].lower().replace("_", "-")
                for r in project["dependencies"] + project["optional-dependencies"]["book"]}
    distributions = packages_distributions()
    undeclared = {}
    for path in sorted((PACKAGE / "book").glob("*.py")):
        for module in imports(path):
            top = module.split(".")[0]
            if not top or top == "attention_core" or top in sys.stdlib_module_names \
                    or top in OPTIONAL or top == "__future__":
                continue
            names = {d.lower().replace("_", "-") for d in distributions.get(top, [top])}
            if not names & declared:
                undeclared.setdefault(path.name, []).append(module)
    assert not undeclared, f"imports missing from the book extra: {undeclared}"
