"""The LR schedule as a pure function of the optimizer recipe: warmup, peak, decay to the floor; the peak LR of a
point as one function of its lr_fraction and the base's max_lr."""

import ast
import itertools
from pathlib import Path

import pytest
import torch

from train_entry.optimizer import OptimizerConfig, peak_lr

REPO = Path(__file__).resolve().parents[2]

RECIPE = OptimizerConfig(warmup_steps=10, min_lr_ratio=0.1)
KW = {"peak_lr": 1e-3, "total_steps": 110}


def test_linear_warmup_reaches_peak_at_the_last_warmup_step():
    assert RECIPE.lr_at(0, **KW) == pytest.approx(1e-4)
    assert RECIPE.lr_at(9, **KW) == pytest.approx(1e-3)


@pytest.mark.parametrize("schedule", ["cosine", "linear"])
def test_decay_falls_monotonically_to_the_floor(schedule):
    recipe = RECIPE.model_copy(update={"schedule": schedule})
    lrs = [recipe.lr_at(step, **KW) for step in range(10, 110)]
    assert lrs[0] == pytest.approx(1e-3)
    assert lrs[-1] == pytest.approx(1e-4)
    assert all(a >= b for a, b in itertools.pairwise(lrs))


def test_cosine_is_halfway_at_the_middle_of_decay():
    middle = 10 + (110 - 1 - 10) / 2
    assert RECIPE.lr_at(int(middle), **KW) == pytest.approx(1e-4 + 0.5 * 9e-4, rel=0.02)


def test_constant_holds_peak_after_warmup():
    assert RECIPE.model_copy(update={"schedule": "constant"}).lr_at(100, **KW) == 1e-3


def test_adamw_decays_matrices_only():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    optimizer = RECIPE.adamw(model, peak_lr=1e-3)
    decayed, kept = optimizer.param_groups
    assert [p.dim() for p in decayed["params"]] == [2] and decayed["weight_decay"] == 0.1
    assert all(p.dim() == 1 for p in kept["params"]) and kept["weight_decay"] == 0.0
    assert optimizer.defaults["betas"] == (0.9, 0.95)


def test_peak_lr_is_the_fraction_of_the_bases_own_peak():
    assert peak_lr(0.25, max_lr=3e-4) == pytest.approx(7.5e-5)
    assert peak_lr(1.0, max_lr=3e-4) == 3e-4


def _names(node: ast.expr) -> str:
    """The last name of an operand: `point.lr_fraction` -> "lr_fraction", `max_lr` -> "max_lr"."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def test_no_module_multiplies_lr_fraction_by_max_lr_but_peak_lr():
    """Every trial, table, report and plan shows or trains at the peak LR through the one function, so a change to
    the rule lands everywhere at once."""
    found = []
    for package in ("cli", "sweep", "reports", "train_entry", "benchmarks"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                    operands = {_names(node.left), _names(node.right)}
                    if any(name.endswith("lr_fraction") or name.endswith("LR_FRACTION") for name in operands) and any(
                        name.endswith("max_lr") for name in operands
                    ):
                        found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == ["train_entry/optimizer.py:25"], found
