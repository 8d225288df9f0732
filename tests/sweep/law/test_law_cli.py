"""`sweep law fit RUNS.csv --target T`: fits the documented example without training, prints the law, the
prediction or its refusal and the trend beside the published one, writes a versioned report, and turns a bad
file into one line and exit 2."""

from __future__ import annotations

import json
import math

import pytest

from cli import main
from cli.law import target_scale
from sweep.files.compat import FORMAT_KEY, LAW_FIT
from sweep.ladder.rungs import ladder_target
from sweep.law.config import LawSettings
from sweep.law.lines import carried_lines, discrepancy_lines
from sweep.law.runs import LawFitReport, fit_runs
from sweep.scale import non_embedding_params
from sweep.spec.spec import load_spec
from sweep.study.config import PickConfig
from sweep.target.families.llama import LLAMA_3_1_70B
from sweep.target.full_run import TOKENS
from tests.conftest import REPO
from tests.hostile import tree
from tests.sweep.ladder.synthetic import as_csv, draw
from train_entry.optimizer import OptimizerConfig

EXAMPLE = REPO / "docs" / "examples" / "law_runs.csv"


def test_the_example_is_the_documented_synthetic_draw():
    assert EXAMPLE.read_text() == as_csv(draw())


def test_the_target_is_counted_as_promotion_counts_it():
    scale = target_scale("llama3.1-70b", tokens=None, lr_mean=None)
    assert scale.parameters == non_embedding_params(LLAMA_3_1_70B)
    assert scale.tokens == TOKENS
    assert 0.54 < scale.lr_mean < 0.56  # 1 % warmup, then cosine to a tenth: about (1 + 0.1) / 2
    assert target_scale("llama3.1-70b", tokens=10**9, lr_mean=0.3).lr_mean == 0.3


def test_law_fit_gives_the_target_a_ladder_gives_whose_proxy_decays_as_its_flags_say(capsys):
    """A ladder's target (cli.run, and its plan: sweep.target.full_run.full_run_target with the spec's proxy) and
    sweep law fit's are one recipe: the full run's warmup, then the proxy's decay and floor. A proxy decaying
    linearly to nothing gives the full run a mean LR of about a half, where law fit's defaults (cosine to a tenth)
    give 0.55: the flags bring law fit to the ladder's."""
    spec = load_spec(REPO / "search_spaces" / "lr_mix_ladder.yaml")
    proxy = spec.proxy.model_copy(update={"schedule": "linear", "min_lr_ratio": 0.0})
    linear = spec.model_copy(update={"proxy": proxy})
    ladder = ladder_target(linear).scale
    flags = ["--schedule", "linear", "--min-lr-ratio", "0"]
    fitted = target_scale(
        spec.ladder.target, tokens=spec.ladder.full_run_tokens, lr_mean=None,
        recipe=OptimizerConfig(warmup_steps=0, schedule="linear", min_lr_ratio=0.0),
    )  # fmt: skip
    assert fitted == ladder and 0.49 < ladder.lr_mean < 0.51
    default = target_scale(spec.ladder.target, tokens=spec.ladder.full_run_tokens, lr_mean=None)
    assert default == ladder_target(spec).scale != ladder
    args = ["law", "fit", str(EXAMPLE), "--target", spec.ladder.target, "--refits", "0", *flags]
    assert main(args) == 0
    assert f"mean LR {ladder.lr_mean:.3g} of the peak" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main([*args[:-1], "1.5"])
    assert refused.value.code == 2
    assert "--min-lr-ratio: must be a fraction of the peak LR in [0, 1], got '1.5'" in capsys.readouterr().err


def test_a_target_without_published_pretraining_tokens_takes_them_from_the_flag_its_error_names(capsys):
    """Mistral does not publish its pretraining tokens: the refusal names --pretrain-tokens, which sweep law fit
    takes as sweep promote does (the flag was promote's alone, so the advice could not be followed here)."""
    assert main(["law", "fit", str(EXAMPLE), "--target", "mistral-7b"]) == 2
    assert "give them with --pretrain-tokens" in capsys.readouterr().err
    scale = target_scale("mistral-7b", tokens=None, lr_mean=None, pretrain_tokens=8 * 10**12)
    assert scale.pretrain_tokens == 8e12


def test_sweep_law_fit_prints_the_law_its_answer_and_the_trend(capsys, tmp_path):
    output = tmp_path / "law.json"
    args = ["law", "fit", str(EXAMPLE), "--target", "llama3.1-70b", "--refits", "2", "--output", str(output)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "law: fitted to 432 evaluations of 108 trials on 4 rung(s) (xs, s, m, l)" in printed
    assert "forgetting = (N / " in printed and "R2 0.99" in printed
    assert "target llama3.1-70b: N 6.845e+10, 1e+12 tokens" in printed
    assert "refused (" not in printed  # answered inside the box (docs/ladder.md)
    assert "critical domain share with N (at LR area" in printed and "published: grows" in printed
    report = LAW_FIT.read(output, LawFitReport)
    assert json.loads(output.read_text())[FORMAT_KEY] == LAW_FIT.version == 4
    assert json.loads(output.read_text())["prediction"]["forgetting_budget"] == 0.01  # the budget's one name
    assert report.prediction.refusal is None and report.validation is None
    prediction, rule = report.prediction, "highest lower-confidence domain_gain with P(forgetting <= budget) >= 0.9"
    chance = prediction.optimum
    said = f"lr_fraction {chance.lr_fraction:.4g}, mix {chance.mix}" if chance else "none"
    assert f"chance-constrained optimum ({rule}" in printed and said in printed
    mean = prediction.mean_optimum
    assert (
        f"mean-constrained optimum (predicted forgetting at most the budget; never promoted): lr_fraction "
        f"{mean.lr_fraction:.4g}, mix {mean.mix}; at it domain_gain {mean.domain_gain:.4g}" in printed
    )
    for fit in report.laws.forms:  # each form side by side: its weight and its own optimum
        assert f"    {fit.form}: weight {fit.weight:.2f}; CV rmse" in printed
    assert [fit.form for fit in report.laws.forms] == ["dcpt-area", "replay-area", "split-power", "size-curve"]
    assert "\n".join(carried_lines(prediction, report.laws.discrepancy)) in printed
    assert "\n".join(discrepancy_lines(report.laws.discrepancy)) in printed


def test_the_form_error_and_the_intervals_sources_are_said_as_the_record_has_them():
    """Every figure of the sentences on the form's error and on what makes each interval is the record's."""
    report = fit_runs(
        EXAMPLE, target_scale("llama3.1-70b", tokens=None, lr_mean=None), budget=0.01,
        settings=LawSettings(starts=4, refits=10), pick=PickConfig(),
    )  # fmt: skip
    laws, prediction = report.laws, report.prediction
    carried, discrepancy, target = prediction.discrepancy, laws.discrepancy, prediction.target
    lines = carried_lines(prediction, discrepancy)
    forgetting = discrepancy.forgetting
    assert lines[0].startswith(f"form error carried at {target.name} (each refit times exp(e)")
    assert (
        f"forgetting sd {carried.forgetting:.2g} ({forgetting.within:.2g} at the rungs, growing "
        f"{forgetting.growth:.2g} a decade over {carried.distance:.1f} decades, and "
        f"{forgetting.bend(target.parameters):.2g} for how far the rungs' levels may bend" in lines[0]
    )
    assert f"domain_gain sd {carried.domain_gain:.2g} ({discrepancy.domain_gain.within:.2g} at the rungs" in lines[0]
    sources = prediction.intervals.forgetting.sources
    assert f"forgetting {sources.noise:.0%} / {sources.forms:.0%} / {sources.discrepancy:.0%}" in lines[1] and lines[
        1
    ].startswith("what makes each interval (shares of its variance: noise / form spread / form error)")
    rungs = discrepancy_lines(discrepancy)
    first = forgetting.rungs[0]
    assert f"forgetting: {forgetting.within:.2g} at the rungs ({first.rung} {first.fitted:.2g} / " in rungs[1]
    assert carried.distance == pytest.approx(math.log10(target.parameters) - discrepancy.sizes[-1])


def test_a_bad_runs_file_is_one_line_and_exit_2_and_touches_nothing(capsys, tmp_path):
    bad = tmp_path / "runs.csv"
    bad.write_text(EXAMPLE.read_text().replace("5132.64", "many", 1))
    (tmp_path / "law.json").write_text("an earlier report\n")
    before = tree(tmp_path)
    argv = ["law", "fit", str(bad), "--target", "llama3.1-70b", "--output", str(tmp_path / "law.json"), "--force"]
    assert main(argv) == 2  # --force: the file is checked first, and the earlier report is left as it was
    assert tree(tmp_path) == before
    error = capsys.readouterr().err
    assert (
        error
        == f"error: {bad}: line 2, column 'tokens': Input should be a valid number, unable to parse string as a number (got 'many')\n"
    )
    assert main(["law", "fit", str(EXAMPLE), "--target", "gpt-5"]) == 2
    assert "unknown target 'gpt-5'" in capsys.readouterr().err
