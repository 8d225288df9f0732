"""The proxy ladder: its spec section, each rung matched to the others and to the target, and the driver (every rung's
evaluations read from its study, the law fitted over all of them and a team's earlier runs, its prediction at the
target or its refusal, each rung predicted from the others), all with scripted rungs and no training; one slow
end-to-end ladder trains a micro ladder."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys

import pytest

from sweep.files import compat
from sweep.files.config_file import SpecError
from sweep.files.rundir import RunDir
from sweep.ladder.config import PRESETS, LadderConfig
from sweep.ladder.record import LadderMismatch, LadderSummary, read_ladder
from sweep.ladder.rungs import MAX_LR_EXPONENT, rung_specs
from sweep.law.optimum import constrained_optimum
from sweep.spec.spec import load_spec
from sweep.target.load import load_target
from tests.sweep.ladder.ladder_runs import (
    GENTLE,
    LADDER,
    STOPPED,
    LawRungs,
    Quiet,
    scripted_ladder,
    write_ladder_spec,
)
from sweep.target.families.llama import LLAMA_3_1_8B
from tests.sweep.ladder.synthetic import TRUTH, as_csv, draw
from tests.sweep.ladder.test_ladder_files import snapshot
from train_entry.builtin_base import BuiltinBaseConfig

NARROW = {"name": "s2", "hidden_size": 128, "num_layers": 3, "num_heads": 4, "num_kv_heads": 2,
          "intermediate_size": 352}  # fmt: skip
"""Between s and m: with xs, s and m a ladder spanning 8x in N."""
ODD = {"name": "odd", "hidden_size": 100, "num_layers": 4, "num_heads": 3, "num_kv_heads": 1, "intermediate_size": 300}
"""A shape whose heads do not divide its width."""


# ----------------------------------------------------------------------------------------------- the spec


def test_the_presets_grow_and_m_is_todays_builtin_base(write_tiny_spec):
    default = BuiltinBaseConfig()
    m = PRESETS["m"]
    assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.intermediate_size) == (
        default.hidden_size, default.num_layers, default.num_heads, default.num_kv_heads, default.intermediate_size
    )  # fmt: skip
    assert [rung.parameters for rung in PRESETS.values()] == [46_272, 92_480, 302_496, 738_432]
    spec = load_spec(write_ladder_spec(write_tiny_spec, "presets.yaml"))
    assert [rung.name for rung in spec.ladder.rungs] == ["xxs", "xs", "s", "m"]


def test_the_shipped_ladder_matches_its_rungs_to_each_other_and_to_the_target():
    """The same steps, warmup, schedule and evaluations at every rung; a batch in proportion to N; every rung's
    trials read 1/15 of their base's pretraining tokens (Llama 3.1 70B's 1 T of 15 T); every base pretrains on the
    same tokens per parameter within 8 %, at its own peak LR by the stated rule; the m rung's base is today's
    builtin:tiny-llama."""
    spec = load_spec("search_spaces/lr_mix_ladder.yaml")
    target = load_target(spec.ladder.target)
    share = spec.ladder.full_run_tokens / target.pretrain_tokens
    rungs = rung_specs(spec, share)
    assert [rung.design.batch_size for rung in rungs] == [1, 2, 7, 16]
    for rung in rungs:
        proxy = rung.spec.proxy
        assert proxy == spec.proxy.model_copy(update={"batch_size": rung.design.batch_size})
        assert rung.spec.ladder is None and rung.spec.space == spec.space and rung.spec.search == spec.search
        assert rung.design.trial_tokens / rung.design.pretrain_tokens == pytest.approx(1 / 15)
    per_parameter = [rung.design.pretrain_tokens / rung.parameters for rung in rungs]
    assert max(per_parameter) / min(per_parameter) < 1.08
    m = rungs[-1]
    assert m.spec.base.builtin == BuiltinBaseConfig() and m.spec.base.max_lr == spec.base.max_lr == 3e-3
    for rung in rungs:
        compute = rung.parameters * rung.design.pretrain_tokens / (m.parameters * m.design.pretrain_tokens)
        assert rung.spec.base.max_lr == pytest.approx(3e-3 * compute**-MAX_LR_EXPONENT, rel=1e-3)
    assert rungs[0].spec.base.max_lr == pytest.approx(6.0e-3, rel=0.01)


@pytest.mark.parametrize(
    ("ladder", "message"),
    [
        ({"rungs": ["xs", "s", "m"]}, "List should have at least 4 items"),
        ({"rungs": ["xxs", "xs", "xl", "m"]}, "unknown built-in preset 'xl'; valid: xxs, xs, s, m"),
        ({"rungs": ["m", "s", "xs", "xxs"]}, "rungs must grow, smallest first; non-embedding parameters: m 738,432"),
        ({"rungs": ["xxs", "xs", "s", "s"]}, "rung names must differ"),
        ({"rungs": ["xs", "s", NARROW, "m"]}, "rungs must span at least a decade of N (the largest 10 x the smallest)"),
        ({"rungs": ["xxs", "xs", "s", ODD]}, "num_heads must divide hidden_size"),
        ({"full_run_tokens": 0}, "ladder.full_run_tokens = 0"),
    ],
)
def test_a_bad_ladder_is_one_message_naming_the_key(write_tiny_spec, ladder, message):
    name = hashlib.sha256(repr(ladder).encode()).hexdigest()[:12]  # a file per case: workers share the folder
    path = write_ladder_spec(write_tiny_spec, f"bad_ladder_{name}.yaml", **ladder)
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(path) in str(error.value) and message in str(error.value)
    assert "ladder" in str(error.value)


def test_a_ladder_runs_a_fixed_design(write_tiny_spec):
    path = write_tiny_spec("sampled_ladder.yaml", ladder=LADDER)  # the tiny spec samples with TPE
    with pytest.raises(SpecError, match="a ladder runs the same fixed design at every rung: set search.sampler grid"):
        load_spec(path)


def test_earlier_runs_are_checked_with_the_spec(write_tiny_spec, tmp_path):
    runs = tmp_path / "earlier.csv"
    runs.write_text(as_csv(draw(rungs={"m": 738_432})))
    with pytest.raises(SpecError, match="names rung.s. m of the ladder itself"):
        load_spec(write_ladder_spec(write_tiny_spec, "earlier.yaml", runs=str(runs)))
    runs.write_text(as_csv(draw(rungs={"prior": 2_367_360})).replace(",8:1,", ",8-1,", 1))
    with pytest.raises(SpecError, match=r"earlier.csv: line 2, column 'mix': mix ratio must be"):
        load_spec(write_ladder_spec(write_tiny_spec, "earlier.yaml", runs=str(runs)))
    # rows that validate one by one but would break the fit after every rung trained: refused with the spec
    # (a loss below its floor, 0.01, is refused as the row is read: sweep/law/csv.py's tests)
    runs.write_text(as_csv(draw(rungs={"prior": 2_367_360})).replace(",3.200000,", ",0.2,", 1))
    with pytest.raises(SpecError, match=r"earlier.csv: line 2: general_loss .* times base_general_loss 0.2"):
        load_spec(write_ladder_spec(write_tiny_spec, "earlier.yaml", runs=str(runs)))


def test_a_target_file_resolves_against_the_spec_folder_not_the_working_directory(
    write_tiny_spec, tmp_path, monkeypatch
):
    spec_path = write_ladder_spec(write_tiny_spec, "targeted_ladder.yaml", target="targets/mine.yaml")
    target_file = spec_path.parent / "targets" / "mine.yaml"
    target_file.parent.mkdir(exist_ok=True)
    model = LLAMA_3_1_8B.model_dump(mode="json")
    target = {"name": "mine", "model": model, "max_lr": 3e-4, "pretrain_tokens": 1e12}
    target_file.write_text(json.dumps(target))  # JSON is YAML
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    ladder = load_spec(spec_path).ladder
    assert ladder.target == str(target_file.resolve())
    assert load_target(ladder.target).name == "mine"
    preset = load_spec(write_ladder_spec(write_tiny_spec, "preset_ladder.yaml", target="llama3.1-8b")).ladder
    assert preset.target == "llama3.1-8b"  # a preset name is not a path


def test_built_in_rungs_need_the_built_in_base(tmp_path):
    with pytest.raises(ValueError, match="ladder.rungs are built-in shapes"):
        raw = load_spec("search_spaces/lr_mix_ladder.yaml").model_dump(mode="json")
        model = tmp_path / "hf"
        model.mkdir()
        (model / "config.json").write_text("{}")
        (model / "model.safetensors").write_bytes(b"")  # a base directory holds weights; these are never read
        raw["base"] = {"model": str(model), "max_lr": 1e-4}
        type(load_spec("search_spaces/lr_mix_ladder.yaml")).model_validate(raw)


def test_hugging_face_rungs_are_counted_from_their_config(tmp_path):
    rungs = []
    for name, hidden, layers in (("a", 64, 2), ("b", 128, 4), ("c", 256, 8), ("d", 512, 8)):
        folder = tmp_path / name
        folder.mkdir()
        config = {"model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": hidden * 3}  # fmt: skip
        (folder / "config.json").write_text(json.dumps(config))
        rungs.append({"name": name, "model": str(folder), "max_lr": 3e-4, "pretrain_tokens": 1e9})
    ladder = LadderConfig.model_validate({"rungs": rungs})
    assert not ladder.builtin
    h, kv = 64, 2 * 16
    assert ladder.rungs[0].parameters == 2 * (2 * h * h + 2 * h * kv + 3 * h * 3 * h + 2 * h) + h


# --------------------------------------------------------------------------------------------- the driver


def test_every_rung_runs_in_order_and_the_law_is_fitted_over_every_evaluation(scripted_ladder_run):
    """4 rungs x 9 grid trials x 3 evaluations enter the law; its optimum at Llama 3.1 70B is the known law's within
    the ladder's own tolerances (x1.3 in lr_fraction, 0.07 in share), and every rung is predicted from the others."""
    run = RunDir(scripted_ladder_run)
    summary = read_ladder(run)
    assert [rung.name for rung in summary.finished] == ["xxs", "xs", "s", "m"] and summary.is_finished
    assert json.loads(run.ladder_json.read_text())["format_version"] == 4
    assert [(rung.trials, rung.evaluations) for rung in summary.finished] == [(9, 27)] * 4
    fit = summary.fit
    assert fit.laws.rows == 108 and fit.laws.rungs == ["xxs", "xs", "s", "m"]
    law = fit.laws.best.law
    assert law.general_quality.r2 > 0.95 and law.domain_quality.r2 > 0.95
    prediction = fit.prediction
    assert prediction.credible and prediction.target == summary.at_target.scale
    truth = constrained_optimum(GENTLE, summary.at_target.scale, summary.box, summary.forgetting_budget).point
    assert abs(math.log(prediction.optimum.lr_fraction / truth.lr_fraction)) < math.log(1.3)
    assert abs(prediction.optimum.domain_share - truth.domain_share) < 0.07
    assert [fold.rung for fold in fit.validation.folds] == ["xxs", "xs", "s", "m"]


def test_ladder_json_is_written_as_each_rung_finishes_and_a_rerun_reads_the_rungs_again(scripted_ladder_run):
    """Stopped in its third rung, the ladder held the first two rungs' evaluations and no law; run again, it read
    them again from their studies (every trial once) and fitted the law over all four."""
    stopped = compat.LADDER.read(scripted_ladder_run.parents[1] / STOPPED, LadderSummary)
    assert [rung.name for rung in stopped.finished] == ["xxs", "xs"] and stopped.fit is None
    assert {row.rung for row in stopped.observations} == {"xxs", "xs"}
    assert stopped.planned == ["xxs", "xs", "s", "m"] and stopped.rungs[-1].batch_size == 16
    finished = read_ladder(RunDir(scripted_ladder_run))
    assert [row for row in finished.observations if row.rung in ("xxs", "xs")] == stopped.observations
    assert len({(row.rung, row.trial) for row in finished.observations}) == 36


def test_the_driver_says_each_rung_and_stops_at_an_unfinished_one(write_tiny_spec, tmp_path):
    view = Quiet()
    outcome = scripted_ladder(write_ladder_spec(write_tiny_spec, "said.yaml"), tmp_path, LawRungs(stop_at="xxs"),
                              view=view)  # fmt: skip
    assert outcome.unfinished == 1 and not outcome.summary.is_finished
    line = next(line for line in view.lines if line.startswith("rung xxs"))
    assert "rung xxs (1 of 4): 46,272 non-embedding parameters" in line and "30 steps x 1 x 64 = 1,920 tokens" in line
    assert "rung xxs: 1 trial(s) unfinished; stopping" in view.lines


def test_a_ladder_of_other_rungs_is_refused(write_tiny_spec, tmp_path):
    scripted_ladder(write_ladder_spec(write_tiny_spec, "these.yaml"), tmp_path, LawRungs(stop_at="xxs"))
    other = write_ladder_spec(write_tiny_spec, "other.yaml", rungs=["xxs", "xs", "m", {
        "name": "l", "hidden_size": 192, "num_layers": 6, "num_heads": 6, "num_kv_heads": 2,
        "intermediate_size": 528}])  # fmt: skip
    with pytest.raises(LadderMismatch, match="rerun with --fresh"):
        scripted_ladder(other, tmp_path, LawRungs(stop_at="xxs"))
    fresh = scripted_ladder(other, tmp_path, LawRungs(stop_at="xxs"), fresh=True)
    assert fresh.summary.planned == ["xxs", "xs", "m", "l"]


def test_earlier_runs_enter_the_law_and_an_optimum_beyond_the_box_is_refused_with_the_direction(
    write_tiny_spec, tmp_path
):
    """A team's earlier runs at 2.4 M parameters enter the law beside the rungs and are held out in turn. Forgetting
    that shrinks as N^-0.2 lets Llama 3.1 70B take lr_fraction 0.77, beyond the grid's 0.4: refused, with the
    direction to extend the space in."""
    runs = tmp_path / "earlier.csv"
    runs.write_text(as_csv(draw(TRUTH, rungs={"prior": 2_367_360}, seed=3)))
    spec = write_ladder_spec(write_tiny_spec, "earlier_runs.yaml", runs=str(runs))
    summary = scripted_ladder(spec, tmp_path, LawRungs(TRUTH)).summary
    fit = summary.fit
    assert fit.laws.rungs == ["xxs", "xs", "s", "m", "prior"] and fit.laws.rows == 108 + 108
    assert summary.runs == str(runs) and fit.source.endswith(f"and {runs}")
    assert [fold.rung for fold in fit.validation.folds][-1] == "prior"
    refusal = fit.prediction.refusal
    assert (
        refusal.kind == "extend_space" and "extend the space toward higher lr_fraction (above 0.4)" in refusal.message
    )


# ------------------------------------------------------------------------------------------------- status


def test_status_of_a_ladder_shows_each_rung_in_order_and_the_law(scripted_ladder_run, capsys):
    from cli import main

    before = snapshot(scripted_ladder_run)
    assert main(["status", str(scripted_ladder_run)]) == 0
    out = capsys.readouterr().out
    assert snapshot(scripted_ladder_run) == before  # read-only: nothing created or rewritten
    heads = [line for line in out.splitlines() if line.startswith("rung ")]
    assert [head.split(" (")[0] for head in heads] == ["rung xxs", "rung xs", "rung s", "rung m"]
    for head, preset in zip(heads, ("xxs", "xs", "s", "m")):
        assert f"N {PRESETS[preset].parameters:,}" in head and "9 completed" in head
    assert "law: fitted to 108 evaluations of 36 trials on 4 rung(s) (xxs, xs, s, m)" in out
    assert "matched to llama3.1-70b only in part: pretrain_tokens_per_parameter" in out
    assert "leave-one-rung-out:" in out


def test_status_of_an_unfinished_ladder_says_which_rungs_have_not_started(scripted_ladder_run, tmp_path, capsys):
    from cli import main

    run = RunDir(tmp_path / "ladder")
    shutil.copytree(scripted_ladder_run, run.path)
    shutil.copy(scripted_ladder_run.parents[1] / STOPPED, run.ladder_json)
    shutil.rmtree(run.rung("m").path)
    assert main(["status", str(run.path)]) == 0
    out = capsys.readouterr().out
    assert "2 of 4 rungs finished" in out
    assert f"rung m (4 of 4), N {PRESETS['m'].parameters:,}: not started" in out
    assert "law: fitted once every rung has finished (2 of 4)" in out


@pytest.mark.slow
def test_a_micro_ladder_trains_end_to_end(write_tiny_spec, tmp_path):
    """Four tiny built-in shapes over more than a decade of N, a 2-point grid each, one trial at a time: the run
    directory holds each rung's sweep and ladder.json with every rung's evaluations, and the report is written."""
    micro = [
        {"name": f"r{k}", "hidden_size": 16 * k, "num_layers": k, "num_heads": k, "num_kv_heads": 1,
         "intermediate_size": 44 * k}
        for k in (1, 2, 3, 4)
    ]  # fmt: skip
    spec = write_tiny_spec(
        "micro_ladder.yaml",
        # A third of the target's pretraining, not the reference's 1/15: each rung's base pretrains on 3x its trials'
        # tokens (a few hundred steps in all), which is all this test needs of them.
        ladder={"rungs": micro, "law": {"starts": 2, "refits": 2}, "full_run_tokens": 5 * 10**12},
        proxy={"steps": 24, "eval_interval": 8, "warmup_steps": 2, "batch_size": 4},
        space={"lr_fraction": [0.1, 0.2], "mix": ["1:1"]},
        search={"sampler": "grid", "num_trials": 2, "replicates": {"top": 0}},
        execution={"concurrency": 1},  # one trial process per rung: its start (imports) costs more than the trials
    )
    done = subprocess.run(
        [sys.executable, "-m", "cli", "run", str(spec)], cwd=tmp_path, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    run = RunDir(tmp_path / "runs" / "micro_ladder")
    summary = read_ladder(run)
    assert summary.planned == ["r1", "r2", "r3", "r4"] and "rung r4 (4 of 4)" in done.stdout
    assert {row.rung for row in summary.observations} == {"r1", "r2", "r3", "r4"}
    for name in summary.planned:
        assert run.rung(name).best_json.is_file()
    assert (run.report / "index.html").is_file()
