"""Every module a docstring names exists: a path (`sweep/promote/plan/validation.py`, `tests/sweep/ladder/`) is a
file or folder of the repository, a dotted name (`sweep.run.driver.run_sweep`) is a module of the project and, where
it goes on, a name that module (or a class in it) defines. A module moved or renamed leaves no docstring pointing
at where it was."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("cli", "sweep", "reports", "train_entry")
TREES = (*PACKAGES, "benchmarks", "tests")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\w)" % "|".join(TREES))
"""A repository path: a tree's name, a slash, and on to its last word character (a sentence's full stop is not in it)."""
DOTTED = re.compile(r"(?<![\w./-])((?:%s)(?:\.[A-Za-z_]\w*)+)" % "|".join(PACKAGES))
"""A dotted name in a project package: `sweep.target.families.registry.PRESETS`."""
BROKEN_NAME = re.compile(r"(?<![\w./-])((?:%s)(?:\.\w+)*)\.\n[ \t]*([a-z_])" % "|".join(PACKAGES))
"""A dotted name wrapped after one of its dots (`sweep.ladder.` / `law_table.Observation`): joined before reading."""


def docstrings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every docstring of a source: its module's, its classes' and functions', and the string
    after an assignment that documents the name (an attribute docstring)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                if isinstance(statement.value.value, str):
                    found.append((statement.lineno, BROKEN_NAME.sub(r"\1.\2", statement.value.value)))
    return found


def defined(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a module or class body defines: functions, classes, assignments, imports (under `if` and `try`)."""
    names: dict[str, ast.stmt] = {}
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[statement.name] = statement
        elif isinstance(statement, ast.Assign):
            names.update({target.id: statement for target in statement.targets if isinstance(target, ast.Name)})
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names[statement.target.id] = statement
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            names.update({(alias.asname or alias.name).split(".")[0]: statement for alias in statement.names})
        elif isinstance(statement, (ast.If, ast.Try)):
            names.update(defined(statement.body))
    return names


def module_file(root: Path, parts: list[str]) -> Path | None:
    base = root.joinpath(*parts)
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


def resolves(root: Path, dotted: str) -> bool:
    """Whether the longest module prefix of `dotted` exists and each further name is defined where it is looked up:
    in the module, then in the class the previous name is (a function's or a value's own attributes are not read)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        path = module_file(root, parts[:end])
        if path is None:
            continue
        scope = defined(ast.parse(path.read_text(encoding="utf-8")).body)
        for name in parts[end:]:
            if name not in scope:
                return False
            if not isinstance(scope[name], ast.ClassDef):
                return True
            scope = defined(scope[name].body)
        return True
    return False


def missing_names(root: Path) -> list[str]:
    """ "file:line name" for every path or dotted name in a docstring under root that leads nowhere."""
    missing = []
    for tree in TREES:
        for path in sorted((root / tree).rglob("*.py")):
            for line, text in docstrings(path.read_text(encoding="utf-8")):
                where = f"{path.relative_to(root)}:{line}"
                missing += [f"{where} {name}" for name in PATH.findall(text) if not (root / name).exists()]
                missing += [f"{where} {name}" for name in DOTTED.findall(text) if not resolves(root, name)]
    return missing


def test_every_module_a_docstring_names_exists():
    assert missing_names(REPO) == []


def test_a_moved_module_or_a_missing_name_is_found(tmp_path):
    """The check itself, on a made-up tree: a path and a module that moved, a name the module lacks and a class
    attribute it lacks are found; what exists, a wrapped name and a sentence's full stop are not."""
    (tmp_path / "sweep" / "run").mkdir(parents=True)
    (tmp_path / "sweep" / "__init__.py").write_text("")
    (tmp_path / "sweep" / "run" / "__init__.py").write_text("")
    (tmp_path / "sweep" / "run" / "driver.py").write_text(
        "class Plan:\n    size: int = 1\n\n\ndef run_sweep():\n    pass\n"
    )
    (tmp_path / "sweep" / "record.py").write_text(
        '"""Written by sweep.run.driver.run_sweep (sweep/run/driver.py), sized by sweep.run.driver.Plan.size; see\n'
        "sweep.run.\n    driver.Plan and sweep/run/.\n\nStale: sweep.driver.run_sweep, sweep/ladder/driver.py,\n"
        'sweep.run.driver.stop_sweep, sweep.run.driver.Plan.width."""\n'
    )
    assert missing_names(tmp_path) == [
        "sweep/record.py:1 sweep/ladder/driver.py",
        "sweep/record.py:1 sweep.driver.run_sweep",
        "sweep/record.py:1 sweep.run.driver.stop_sweep",
        "sweep/record.py:1 sweep.run.driver.Plan.width",
    ]
