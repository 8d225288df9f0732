"""The import graph runs one way: train_entry <- sweep (the core) <- sweep.promote <- reports <- cli.

A module may import its own layer and the layers below it, never one above: imports inside
functions count, imports only for type checking (under `if TYPE_CHECKING:`) do not. Within and
across layers no two modules import each other, even through a chain, type-only imports counted:
a loop closed only for the type checker is still two concepts that cannot be read apart.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("train_entry", "sweep", "sweep.promote", "reports", "cli")
"""Bottom to top."""


def layer(module: str) -> int | None:
    """The layer of a project module (the most specific prefix that names one); None for other packages."""
    matches = [index for index, name in enumerate(LAYERS) if module == name or module.startswith(f"{name}.")]
    return max(matches, key=lambda index: len(LAYERS[index])) if matches else None


def imports(source: str, *, type_only_too: bool = False) -> set[str]:
    """Modules a source imports at run time (with `type_only_too`, those under `if TYPE_CHECKING:` too)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if not type_only_too and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def upward_imports(root: Path) -> list[str]:
    """ "importer -> imported" for every import of a higher layer under root."""
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts).removesuffix(".__init__")
        own = layer(module)
        if own is None:
            continue
        for imported in imports(path.read_text(encoding="utf-8")):
            other = layer(imported)
            if other is not None and other > own:
                found.append(f"{module} -> {imported} ({LAYERS[own]} imports {LAYERS[other]})")
    return sorted(set(found))


def module_cycle(root: Path) -> tuple[str, ...] | None:
    """A chain of project modules that leads back to its start, type-only imports counted; None if there is none."""
    paths = {
        ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted(root.rglob("*.py"))
    }
    graph = {
        module: {name for name in imports(path.read_text(encoding="utf-8"), type_only_too=True) if name in paths}
        - {module}
        for module, path in paths.items()
        if layer(module) is not None
    }
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return tuple(exc.args[1])
    return None


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(REPO) == []


def test_an_upward_import_is_found(tmp_path):
    """The check itself: a core module importing reports, even inside a function, is caught; a
    type-checking import is not."""
    (tmp_path / "sweep" / "run").mkdir(parents=True)
    (tmp_path / "sweep" / "run" / "driver.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from cli import main\n"
        "def finish():\n    from reports.report import write_run_report\n"
    )
    assert upward_imports(tmp_path) == [
        "sweep.run.driver -> reports.report (sweep imports reports)",
        "sweep.run.driver -> reports.report.write_run_report (sweep imports reports)",
    ]


def test_no_modules_import_each_other_even_for_type_checking():
    assert module_cycle(REPO) is None


def test_a_cycle_closed_only_for_the_type_checker_is_found(tmp_path):
    (tmp_path / "sweep" / "study").mkdir(parents=True)
    (tmp_path / "sweep" / "study" / "record.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sweep.study.forecast import Forecast\n"
    )
    (tmp_path / "sweep" / "study" / "forecast.py").write_text("from sweep.study.record import history_of\n")
    assert set(module_cycle(tmp_path)) == {"sweep.study.record", "sweep.study.forecast"}
    (tmp_path / "sweep" / "study" / "record.py").write_text("")
    assert module_cycle(tmp_path) is None


def test_the_layers_are_the_packages_they_name():
    assert [layer(name) for name in ("train_entry.loop", "sweep.spec.spec", "sweep.promote.plan", "reports.plots")] == [
        0,
        1,
        2,
        3,
    ]
    assert layer("cli.run") == 4 and layer("optuna") is None
