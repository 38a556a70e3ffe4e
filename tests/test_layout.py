"""The package's layout: lessonkit's modules import along the flows, never in a circle or upward.

Every module of lessonkit/ is read with `ast`; every import counts, at module level, inside a
function or under `if TYPE_CHECKING:`. The layers, lowest first:

- base: lessonkit itself, errors, textio, cache, repo;
- evidence: lessonkit.evidence.* (runs.toml, manifest, transcripts, evidence sets, refresh);
- pages: lessonkit.pages.* (scanning, claims, queries, rendering, the page and its rules);
- site: lessonkit.site.* (the whole-site check, its cache, the engine's config, verify, mdext);
- cli: lessonkit.cli.* and lessonkit.__main__ (the command line).

A module may import its own layer and lower ones only; no module imports another's private
(`_`-prefixed) name; every module belongs to a layer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

PACKAGE = "lessonkit"
LAYERS = ("base", "evidence", "pages", "site", "cli")
BASE = frozenset({"lessonkit", "lessonkit.errors", "lessonkit.textio", "lessonkit.jsonkeys", "lessonkit.cache",
                  "lessonkit.repo"})
SUBPACKAGE_LAYERS = {"evidence": "evidence", "pages": "pages", "site": "site", "cli": "cli"}


@dataclass(frozen=True)
class Import:
    """One import of a lessonkit module by another: where it is written, and the names it takes."""

    importer: str
    target: str
    line: int
    name: str | None = None  # the name a `from X import name` takes, when it is not a module


def layer_of(module: str) -> str | None:
    """The layer `module` belongs to, or None when it belongs to none."""
    if module in BASE:
        return "base"
    if module == f"{PACKAGE}.__main__":
        return "cli"
    parts = module.split(".")
    if len(parts) >= 2 and parts[0] == PACKAGE:
        return SUBPACKAGE_LAYERS.get(parts[1])
    return None


def read_package(root: Path) -> dict[str, tuple[str, bool]]:
    """Every module under `root` (the package folder): name -> (source, is a package's __init__)."""
    sources = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        is_package = rel.name == "__init__"
        name = ".".join(rel.parts[:-1] if is_package else rel.parts)
        sources[name] = (path.read_text(encoding="utf-8"), is_package)
    return sources


def imports_of(module: str, source: str, is_package: bool, modules: set[str]) -> list[Import]:
    """Every import of a module in `modules` that `source` makes, wherever it is written."""
    found = []
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, a.name, node.lineno) for a in node.names if a.name in modules]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.append(Import(module, f"{base}.{alias.name}", node.lineno))
                elif base in modules:
                    found.append(Import(module, base, node.lineno, alias.name))
        elif (isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict)
              and "COMMANDS" in [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                                 if isinstance(t, ast.Name)]):
            # the command line's table names a command's module, imported when that command runs
            found += [Import(module, v.value, v.lineno) for v in node.value.values
                      if isinstance(v, ast.Constant) and v.value in modules]
    return found


def import_graph(sources: dict[str, tuple[str, bool]]) -> list[Import]:
    """Every import between the modules of `sources` (as `read_package` gives them)."""
    modules = set(sources)
    return [imp for name, (source, is_package) in sources.items()
            for imp in imports_of(name, source, is_package, modules)]


def circles(imports: list[Import]) -> list[list[str]]:
    """Each import circle, as the modules around it (first repeated last); none when the graph is acyclic."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.target)
    found, done, path = [], set(), []

    def visit(module: str) -> None:
        if module in path:
            found.append(path[path.index(module):] + [module])
            return
        if module in done:
            return
        path.append(module)
        for target in sorted(graph.get(module, ())):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
    return found


def upward(imports: list[Import]) -> list[str]:
    """Each import of a higher layer's module, as 'importer (layer) -> target (layer), line N'."""
    rank = {layer: k for k, layer in enumerate(LAYERS)}
    return [f"{imp.importer} ({layer_of(imp.importer)}) imports {imp.target} ({layer_of(imp.target)}), "
            f"line {imp.line}" for imp in imports
            if layer_of(imp.importer) in rank and layer_of(imp.target) in rank
            and rank[layer_of(imp.target)] > rank[layer_of(imp.importer)]]


def private_names(imports: list[Import]) -> list[str]:
    """Each `from X import _name` of another module's private name."""
    return [f"{imp.importer} imports {imp.target}.{imp.name}, line {imp.line}" for imp in imports
            if imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__")
            and imp.target != imp.importer]


def unlayered(modules) -> list[str]:
    """Each module that belongs to no layer."""
    return sorted(m for m in modules if layer_of(m) is None)


SOURCES = read_package(REPO / PACKAGE)
IMPORTS = import_graph(SOURCES)


def test_the_graph_holds_every_kind_of_import():
    edges = {(imp.importer, imp.target) for imp in IMPORTS}
    assert ("lessonkit.cli.commands", "lessonkit.site.config") in edges  # written inside a function
    assert ("lessonkit.site.check", "lessonkit.site.verdict") in edges  # `from package import module`
    assert ("lessonkit.cli.commands", "lessonkit.cli.accept") in edges  # named in the command table
    assert ("lessonkit.cli.commands", "lessonkit.site.verify") in edges
    assert ("lessonkit.pages.tables", "lessonkit.pages.claimcheck") in edges
    assert len(SOURCES) >= 25 and len(IMPORTS) >= 60


def test_no_import_circle():
    assert circles(IMPORTS) == []


def test_no_upward_import():
    assert upward(IMPORTS) == []


def test_no_private_name_crosses_a_module():
    assert private_names(IMPORTS) == []


def test_every_module_belongs_to_a_layer():
    assert unlayered(SOURCES) == []


# The checker itself, on synthetic packages: each rule reports what it exists for.

def _graph(modules: dict[str, str]) -> list[Import]:
    return import_graph({name: (source, "." not in name)
                         for name, source in modules.items()})


def test_a_circle_is_named_even_through_type_checking_and_functions():
    imports = _graph({
        "lessonkit": "",
        "lessonkit.pages.a": "from lessonkit.pages.b import f\n",
        "lessonkit.pages.b": "def g():\n    from lessonkit.pages.c import h\n",
        "lessonkit.pages.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lessonkit.pages.a import X\n",
    })
    assert circles(imports) == [["lessonkit.pages.a", "lessonkit.pages.b", "lessonkit.pages.c", "lessonkit.pages.a"]]


def test_an_upward_import_is_reported_with_its_layers_and_line():
    imports = _graph({
        "lessonkit": "",
        "lessonkit.errors": "",
        "lessonkit.evidence.sets": "import os\nfrom lessonkit.errors import LessonError\nimport lessonkit.pages.page\n",
        "lessonkit.pages.page": "from lessonkit.evidence.sets import EvidenceSet\n",
    })
    assert upward(imports) == ["lessonkit.evidence.sets (evidence) imports lessonkit.pages.page (pages), line 3"]
    assert circles(imports) == [["lessonkit.evidence.sets", "lessonkit.pages.page", "lessonkit.evidence.sets"]]


def test_a_private_name_from_another_module_is_reported():
    imports = _graph({
        "lessonkit": "",
        "lessonkit.pages.page": "class _Page: ...\n",
        "lessonkit.pages.rules": "from lessonkit.pages.page import ShownClaim, _Page\n",
    })
    assert private_names(imports) == ["lessonkit.pages.rules imports lessonkit.pages.page._Page, line 1"]


def test_relative_imports_resolve_to_the_module_they_name():
    imports = _graph({
        "lessonkit": "",
        "lessonkit.pages.page": "from .claimcheck import _x\nfrom ..evidence import sets\n",
        "lessonkit.pages.claimcheck": "",
        "lessonkit.evidence.sets": "",
    })
    assert {(i.target, i.name) for i in imports} == {("lessonkit.pages.claimcheck", "_x"), ("lessonkit.evidence.sets", None)}


def test_a_module_outside_every_layer_is_reported():
    assert unlayered(["lessonkit.errors", "lessonkit.helpers", "lessonkit.tools.x", "lessonkit.cli.commands"]) == [
        "lessonkit.helpers", "lessonkit.tools.x"]
