"""The forgetting budget has one name: every object that holds it calls it `forgetting_budget`, as the spec's
objective.forgetting_budget does, so a reader never wonders whether `budget` is another one (a token budget, a
trial budget)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("train_entry", "sweep", "reports", "cli", "benchmarks")


def fields_named_budget(root: Path) -> list[str]:
    """ "module:Class" for every class field (an annotated class attribute, a pydantic or dataclass field) or instance
    attribute set in a method (self.budget = ...) named `budget`."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef):
                    continue
                targets = [item.target for item in node.body if isinstance(item, ast.AnnAssign)]
                targets += [
                    target
                    for item in ast.walk(node)
                    if isinstance(item, ast.Assign | ast.AnnAssign)
                    for target in (item.targets if isinstance(item, ast.Assign) else [item.target])
                    if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self"
                ]
                names = {
                    target.id if isinstance(target, ast.Name) else getattr(target, "attr", "") for target in targets
                }
                if "budget" in names:
                    found.append(f"{path.relative_to(root).with_suffix('')}:{node.name}")
    return found


def test_no_object_holds_the_forgetting_budget_under_another_name():
    assert fields_named_budget(REPO) == []


def test_a_field_or_attribute_named_budget_is_found(tmp_path):
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "law.py").write_text(
        "class Answer:\n    budget: float\n\nclass Bench:\n    def __init__(self):\n        self.budget = 0.01\n\n"
        "class Fine:\n    forgetting_budget: float\n    within_budget: float\n"
    )
    assert fields_named_budget(tmp_path) == ["sweep/law:Answer", "sweep/law:Bench"]
