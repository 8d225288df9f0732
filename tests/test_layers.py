"""The import graph runs one way: train_entry <- sweep (the core) <- sweep.promote <- reports <- cli.

A module may import its own layer and the layers below it, never one above: imports inside
functions count, imports only for type checking (under `if TYPE_CHECKING:`) do not. Within and
across layers no two modules import each other, even through a chain, type-only imports counted:
a loop closed only for the type checker is still two concepts that cannot be read apart.

Inside sweep/ the packages are layers too (SWEEP_LAYERS): no two of them import each other, but the spec, which
assembles the owners' configs, imports those configs from the packages above it that own them. Inside sweep/promote/
the rooms by job are layers the same way (PROMOTE_LAYERS).
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
    assert [
        layer(name) for name in ("train_entry.loop", "sweep.spec.spec", "sweep.promote.plan.plan", "reports.plots")
    ] == [
        0,
        1,
        2,
        3,
    ]
    assert layer("cli.run") == 4 and layer("optuna") is None


# ------------------------------------------------------------------------------------- inside sweep/

SWEEP_LAYERS = (
    "sweep",
    "sweep.files",
    "sweep.target",
    "sweep.study",
    "sweep.choice",
    "sweep.law",
    "sweep.spec",
    "sweep.run",
    "sweep.ladder",
    "sweep.promote",
)
"""sweep/'s own layers, bottom to top: the leaves directly in sweep/ (scale, address, the search space), the run
directory and its formats, the target (its model families and presets, its scale and the full run's schedule), the
Optuna study, the choice among its trials, the loss law, the spec that assembles the owners' configs, running a
sweep, the ladder of sweeps, promotion."""
ASSEMBLER = "sweep.spec"
"""May import an owner's config (a pydantic model class) from a layer above it, and nothing else from there."""


PROMOTE_LAYERS = (
    "sweep.promote",
    "sweep.promote.estimate",
    "sweep.promote.request",
    "sweep.promote.point",
    "sweep.promote.plan",
    "sweep.promote.launch",
)
"""promote/'s rooms, bottom to top: its error directly in promote/, estimating the full run on a cluster (cluster,
counts, memory, step time, layout), what a promotion asks for (PromotionConfig, the verb's request), choosing the
promoted point, writing the plan, launching and tracking the job."""


def room(module: str, package: str, root: Path) -> str | None:
    """The layer of a module inside `package`: the subpackage it is in, or `package` for the modules directly in it;
    None for a module outside it."""
    if not module.startswith(f"{package}."):
        return None
    first = module.removeprefix(f"{package}.").split(".")[0]
    return f"{package}.{first}" if root.joinpath(*package.split("."), first).is_dir() else package


def sweep_layer(module: str, root: Path) -> str | None:
    """The layer of a module of sweep/: its subpackage, or "sweep" for the modules directly in sweep/."""
    return room(module, "sweep", root)


def sweep_imports(root: Path) -> list[tuple[str, str, str]]:
    """(importer, imported module, imported name) for every import of a sweep module by another, type-only imports and
    imports inside functions included; the name is "" for `import sweep.study`."""
    modules = {
        ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted((root / "sweep").rglob("*.py"))
    }
    found = []
    for importer, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    if submodule in modules:
                        found.append((importer, submodule, ""))
                    elif node.module in modules:
                        found.append((importer, node.module, alias.name))
            elif isinstance(node, ast.Import):
                found += [(importer, alias.name, "") for alias in node.names if alias.name in modules]
    return found


def is_config_class(root: Path, module: str, name: str) -> bool:
    """Whether `name` is a class defined in `module` as a pydantic model (a StrictConfig or BaseModel subclass)."""
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    if not name or not path.is_file():
        return False
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return any(ast.unparse(base) in ("StrictConfig", "BaseModel") for base in node.bases)
    return False


def upward_imports_among(root: Path, package: str, layers: tuple[str, ...], assembler: str | None = None) -> list[str]:
    """ "importer -> module:name" for every import of a higher layer among `package`'s `layers`, but the assembler's
    of owners' configs."""
    found = set()
    for importer, module, name in sweep_imports(root):
        own, other = room(importer, package, root), room(module, package, root)
        if own is None or other is None or layers.index(other) <= layers.index(own):
            continue
        if own == assembler and is_config_class(root, module, name):
            continue
        found.add(f"{importer} -> {module}:{name}")
    return sorted(found)


def upward_sweep_imports(root: Path) -> list[str]:
    """ "importer -> module:name" for every import of a higher layer of sweep/, but the assembler's of owners' configs."""
    return upward_imports_among(root, "sweep", SWEEP_LAYERS, ASSEMBLER)


def test_sweep_subpackages_import_only_the_layers_below_them():
    """No two packages of sweep/ import each other: every import goes down, but the spec's of its owners' configs."""
    assert upward_sweep_imports(REPO) == []


def test_a_new_pair_inside_sweep_is_found(tmp_path):
    """The check itself: the choice importing the run is caught, even inside a function; the spec importing a run
    config is allowed, the spec importing a run function is not."""
    for package in ("choice", "run", "spec"):
        (tmp_path / "sweep" / package).mkdir(parents=True)
    (tmp_path / "sweep" / "run" / "tracking.py").write_text(
        "class TrackingConfig(StrictConfig):\n    mode: str\n\ndef start(config):\n    return config\n"
    )
    (tmp_path / "sweep" / "run" / "driver.py").write_text("from sweep.choice.best import write_best\n")
    (tmp_path / "sweep" / "choice" / "best.py").write_text("def write_best():\n    from sweep.run.driver import run\n")
    (tmp_path / "sweep" / "spec" / "spec.py").write_text("from sweep.run.tracking import TrackingConfig, start\n")
    assert upward_sweep_imports(tmp_path) == [
        "sweep.choice.best -> sweep.run.driver:run",
        "sweep.spec.spec -> sweep.run.tracking:start",
    ]


def test_promote_rooms_import_only_the_rooms_below_them():
    assert upward_imports_among(REPO, "sweep.promote", PROMOTE_LAYERS) == []


def test_every_room_is_a_listed_layer():
    """A new subpackage of sweep/ or of promote/ takes its place in the layers by being listed."""
    for package, layers in (("sweep", SWEEP_LAYERS), ("sweep.promote", PROMOTE_LAYERS)):
        folder = REPO.joinpath(*package.split("."))
        rooms = {f"{package}.{path.parent.name}" for path in folder.glob("*/__init__.py")}
        assert rooms | {package} == set(layers)


def test_an_upward_import_among_promote_rooms_is_found(tmp_path):
    """The check itself: an estimator importing the plan is caught, the plan importing an estimator is not."""
    for folder in ("estimate", "plan"):
        (tmp_path / "sweep" / "promote" / folder).mkdir(parents=True)
    (tmp_path / "sweep" / "promote" / "errors.py").write_text("class PromotionError(ValueError):\n    pass\n")
    (tmp_path / "sweep" / "promote" / "estimate" / "memory.py").write_text(
        "from sweep.promote.errors import PromotionError\n\ndef fits():\n    from sweep.promote.plan.plan import Plan\n"
    )
    (tmp_path / "sweep" / "promote" / "plan" / "plan.py").write_text(
        "from sweep.promote.estimate.memory import fits\n\nclass Plan:\n    pass\n"
    )
    assert upward_imports_among(tmp_path, "sweep.promote", PROMOTE_LAYERS) == [
        "sweep.promote.estimate.memory -> sweep.promote.plan.plan:Plan"
    ]


# ------------------------------------------------------------------------------------- the target's one home

TARGET = "sweep.target"
TARGET_USERS = ("sweep.law", "sweep.ladder", "cli")
"""The law, the ladder and the CLI reach the target (its model, presets, scale and full-run schedule) only through
sweep.target, never through promotion (issue 53: they had assembled it from three promote modules, twice)."""
WITHOUT_PROMOTION = ("sweep.law", "sweep.ladder", "cli.law", "cli.run")
"""The law, the ladder and their verbs (`sweep law fit`, `sweep run` of a ladder) import nothing of sweep.promote."""


def module_path(root: Path, module: str) -> Path:
    """The file of a module, or its package's __init__.py."""
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    return path if path.is_file() else root.joinpath(*module.split("."), "__init__.py")


def target_names_in(root: Path, module: str) -> set[str]:
    """The names `module` binds by importing them from sweep.target (what it would re-export)."""
    path = module_path(root, module)
    if not path.is_file():
        return set()
    return {
        alias.asname or alias.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(TARGET)
        for alias in node.names
    }


def target_reached_through_promote(root: Path) -> list[str]:
    """ "importer -> module:name" for every import by the law, the ladder or the CLI of a target name from a
    sweep.promote module that imported it from sweep.target, and for every import of sweep.promote by the law, the
    ladder and their verbs; imports inside functions and type-only imports count."""
    found = set()
    for package in TARGET_USERS:
        for path in sorted(root.joinpath(*package.split(".")).rglob("*.py")):
            importer = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            alone = any(importer == name or importer.startswith(f"{name}.") for name in WITHOUT_PROMOTION)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
                if not module.startswith("sweep.promote"):
                    continue
                passed_on = target_names_in(root, module)
                found |= {f"{importer} -> {module}:{a.name}" for a in node.names if alone or a.name in passed_on}
    return sorted(found)


def test_the_law_the_ladder_and_the_cli_reach_the_target_only_through_its_package():
    assert target_reached_through_promote(REPO) == []


def test_a_target_reached_through_promote_is_found(tmp_path):
    """The check itself: promote's verb importing the target's loader as promotion's config passes it on is caught,
    and so is the ladder's verb importing promotion's config at all; promote's verb importing its config is not."""
    for folder in ("sweep/target", "sweep/promote/request", "cli"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "sweep" / "target" / "load.py").write_text("def load_target(name):\n    pass\n")
    (tmp_path / "sweep" / "promote" / "request" / "config.py").write_text(
        "from sweep.target.load import load_target\n\nclass PromotionConfig:\n    pass\n"
    )
    (tmp_path / "cli" / "promote.py").write_text(
        "from sweep.promote.request.config import PromotionConfig\n\n"
        "def run():\n    from sweep.promote.request.config import load_target\n"
    )
    (tmp_path / "cli" / "run.py").write_text("from sweep.promote.request.config import PromotionConfig\n")
    assert target_reached_through_promote(tmp_path) == [
        "cli.promote -> sweep.promote.request.config:load_target",
        "cli.run -> sweep.promote.request.config:PromotionConfig",
    ]
