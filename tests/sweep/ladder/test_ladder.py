"""The proxy ladder: its spec section, each rung's sweep spec, the fit across sizes with its interval, and the
driver's order (the largest rung predicted, written and enqueued before its trials run), all with scripted
rungs and no training; one slow end-to-end ladder trains a micro ladder."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import optuna
import pytest
from scipy import stats

from sweep.choice.best import best_summary_with
from sweep.choice.observed import select
from sweep.choice.pick import Pick, PickedPoint, PickSource, Prediction
from sweep.files.config_file import SpecError
from sweep.files.rundir import RunDir, RunRecord, open_run
from sweep.ladder.config import PRESETS, LadderConfig
from sweep.ladder.driver import RungStart, run_ladder
from sweep.ladder.fit import Quantity, fit_line
from sweep.ladder.record import LadderMismatch, read_ladder
from sweep.ladder.rungs import RungSpec, rung_specs
from sweep.promote.targets import load_target
from sweep.run.driver import SweepOutcome
from sweep.spec.spec import load_spec
from sweep.study.study import SweepPlan, open_study
from sweep.study.trial import run_study_trial
from tests.sweep.scripted import STEPS, scripted, trial_row
from train_entry.builtin_base import BuiltinBaseConfig
from train_entry.megatron.config import LLAMA_3_1_8B
from train_entry.mix import MixRatio

LADDER = {"rungs": ["xs", "s", "m"]}
ODD = {"name": "odd", "hidden_size": 100, "num_layers": 4, "num_heads": 3, "num_kv_heads": 1, "intermediate_size": 300}
"""A shape whose heads do not divide its width."""


# ----------------------------------------------------------------------------------------------- the spec


def test_the_presets_grow_and_m_is_todays_builtin_base(write_tiny_spec):
    default = BuiltinBaseConfig()
    m = PRESETS["m"]
    assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.intermediate_size) == (
        default.hidden_size, default.num_layers, default.num_heads, default.num_kv_heads, default.intermediate_size
    )  # fmt: skip
    assert [rung.parameters for rung in PRESETS.values()] == [92_480, 302_496, 738_432]
    spec = load_spec(write_tiny_spec("ladder.yaml", ladder=LADDER))
    assert [rung.name for rung in spec.ladder.rungs] == ["xs", "s", "m"]


def test_the_shipped_ladder_pretrains_m_as_today_and_scales_tokens_with_n():
    spec = load_spec("search_spaces/lr_mix_ladder.yaml")
    rungs = rung_specs(spec)
    m = rungs[-1]
    assert m.spec.base.builtin.pretrain_steps == BuiltinBaseConfig().pretrain_steps == 1200
    assert m.spec.proxy == spec.proxy  # the largest rung runs the spec's own proxy
    ratios = [rung.trial_tokens / rung.parameters for rung in rungs]
    assert max(ratios) / min(ratios) < 1.01  # D proportional to N
    pretrain = [rung.spec.base.builtin.pretrain_steps / rung.parameters for rung in rungs]
    assert max(pretrain) / min(pretrain) < 1.01
    assert all(rung.spec.ladder is None and rung.spec.space == spec.space for rung in rungs)
    assert [rung.spec.search.pruner.n_warmup_steps for rung in rungs] == [12, 41, 100]  # shrunk with the steps


@pytest.mark.parametrize(
    ("ladder", "message"),
    [
        ({"rungs": ["xs", "m"]}, "List should have at least 3 items"),
        ({"rungs": ["xs", "xl", "m"]}, "unknown built-in preset 'xl'; valid: xs, s, m"),
        ({"rungs": ["m", "s", "xs"]}, "rungs must grow, smallest first; non-embedding parameters: m 738,432"),
        ({"rungs": ["xs", "s", "s"]}, "rung names must differ"),
        ({"rungs": ["xs", "s", "m"], "pretrain_tokens_per_parameter": 0}, "ladder.pretrain_tokens_per_parameter = 0"),
        ({"rungs": ["xs", "s", ODD]}, "num_heads must divide hidden_size"),
    ],
)
def test_a_bad_ladder_is_one_message_naming_the_key(write_tiny_spec, ladder, message):
    path = write_tiny_spec("bad_ladder.yaml", ladder=ladder)
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(path) in str(error.value) and message in str(error.value)
    assert "ladder" in str(error.value)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        (
            {"lr_fraction": 0.5, "mix": "2:1"},
            "ladder.reference.lr_fraction = 0.5 lies outside the searched space.lr_fraction, 0.05 to 0.3",
        ),
        (
            {"lr_fraction": 0.1, "mix": "16:1"},
            "ladder.reference.mix = '16:1' lies outside the searched space.mix, 8:1 to 1:2",
        ),
    ],
)
def test_a_reference_point_outside_the_space_is_one_message_naming_the_key_and_the_range(
    write_tiny_spec, reference, message
):
    space = {"lr_fraction": {"low": 0.05, "high": 0.3}, "mix": ["8:1", "2:1", "1:2"]}
    path = write_tiny_spec("far_reference.yaml", ladder=LADDER | {"reference": reference}, space=space)
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(path) in str(error.value) and message in str(error.value)
    assert len(str(error.value).splitlines()) == 1
    edge = write_tiny_spec("edge_reference.yaml", ladder=LADDER | {"reference": {"lr_fraction": 0.3, "mix": "1:2"}},
                           space=space)  # fmt: skip
    assert load_spec(edge).ladder.reference.lr_fraction == 0.3  # bounds are inclusive


def test_a_target_file_resolves_against_the_spec_folder_not_the_working_directory(
    write_tiny_spec, tmp_path, monkeypatch
):
    spec_path = write_tiny_spec("targeted_ladder.yaml", ladder=LADDER | {"target": "targets/mine.yaml"})
    target_file = spec_path.parent / "targets" / "mine.yaml"
    target_file.parent.mkdir(exist_ok=True)
    model = LLAMA_3_1_8B.model_dump(mode="json")
    target_file.write_text(json.dumps({"name": "mine", "model": model, "max_lr": 3e-4}))  # JSON is YAML
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    ladder = load_spec(spec_path).ladder
    assert ladder.target == str(target_file.resolve())
    assert load_target(ladder.target).name == "mine"
    preset = load_spec(write_tiny_spec("preset_ladder.yaml", ladder=LADDER | {"target": "llama3.1-8b"})).ladder
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
    for name, hidden, layers in (("a", 64, 2), ("b", 128, 4), ("c", 256, 8)):
        folder = tmp_path / name
        folder.mkdir()
        config = {"model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": hidden * 3}  # fmt: skip
        (folder / "config.json").write_text(json.dumps(config))
        rungs.append({"name": name, "model": str(folder), "max_lr": 3e-4})
    ladder = LadderConfig.model_validate({"rungs": rungs})
    assert not ladder.builtin
    h, kv = 64, 2 * 16
    assert ladder.rungs[0].parameters == 2 * (2 * h * h + 2 * h * kv + 3 * h * 3 * h + 2 * h) + h


# ------------------------------------------------------------------------------------------------ the fit


def test_the_fit_is_least_squares_on_log_n_with_a_t_prediction_interval():
    sizes, values = [1e5, 3e5, 1e6, 3e6], [0.30, 0.21, 0.17, 0.10]
    fit = fit_line(sizes, values)
    x = np.log(sizes)
    slope, intercept = np.polyfit(x, values, 1)
    assert (fit.slope, fit.intercept, fit.dof) == (pytest.approx(slope), pytest.approx(intercept), 2)
    at = 7e10
    residual = np.sqrt(np.sum((np.array(values) - intercept - slope * x) ** 2) / 2)
    half = (
        stats.t.ppf(0.95, 2)
        * residual
        * np.sqrt(1 + 1 / 4 + (np.log(at) - x.mean()) ** 2 / np.sum((x - x.mean()) ** 2))
    )
    interval = fit.predict(at)
    assert interval.mean == pytest.approx(intercept + slope * np.log(at))
    assert (interval.low, interval.high) == (pytest.approx(interval.mean - half), pytest.approx(interval.mean + half))


def test_three_rungs_leave_one_degree_of_freedom_and_two_none():
    three = fit_line([1e5, 3e5, 1e6], [0.3, 0.2, 0.16])
    assert three.dof == 1 and three.predict(1e6).low is not None
    wide = three.predict(7e10)
    assert wide.high - wide.low > 5 * (three.predict(1e6).high - three.predict(1e6).low) / 5  # wider far out
    two = fit_line([1e5, 3e5], [0.3, 0.2]).predict(1e6)
    assert (two.low, two.high, two.dof) == (None, None, 0)
    assert fit_line([1e5], [0.3]) is None and fit_line([1e5, 1e5], [0.3, 0.2]) is None


# --------------------------------------------------------------------------------------------- the driver


def law_lr(parameters: float) -> float:
    """The scripted optimum: lr_fraction falls as N^-0.2, the mix grows more domain-heavy with N."""
    return 0.25 * (parameters / 1e5) ** -0.2


def law_log_mix(parameters: float) -> float:
    return math.log(4.0) - 0.4 * math.log(parameters / 1e5)


def _pick(parameters: int) -> Pick:
    lr, mix = law_lr(parameters), MixRatio(math.exp(law_log_mix(parameters)), 1.0)
    estimate = Prediction(
        mean=0.2, sd=0.01, noise_sd=0.01, low=0.18, high=0.22, remeasured_low=0.17, remeasured_high=0.23
    )
    forgetting = Prediction(mean=0.001 * math.log(parameters), sd=0.001, noise_sd=0.001, low=0.0, high=0.03,
                          remeasured_low=0.0, remeasured_high=0.03)  # fmt: skip
    point = PickedPoint(lr_fraction=lr, mix=str(mix), domain_share=mix.domain_share, trials=[], measured_gain=None,
                        measured_forgetting=None)  # fmt: skip
    return Pick(source=PickSource.SURROGATE, point=point, reason="scripted", rule="scripted", gain=estimate,
                forgetting=forgetting, probability_within_budget=0.95)  # fmt: skip


class ScriptedRungs:
    """A RungRunner with no training: it opens the rung's real study (enqueueing what the ladder asks), records
    what it saw when it started, and ends with rows around the scripted optimum."""

    def __init__(self, ladder_dir: RunDir) -> None:
        self.ladder = ladder_dir
        self.started: list[dict] = []

    def __call__(self, rung: RungSpec, run: RunDir, start: RungStart) -> SweepOutcome:
        run.path.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{run.path / 'optuna.db'}"
        sweep = open_study(rung.spec, url=url, name=start.study_name, first=start.first_points)
        prediction = read_ladder(self.ladder).prediction if self.ladder.ladder_json.exists() else None
        first = sweep.ask()
        self.started.append({"rung": rung.name, "prediction": prediction, "first": first.params})
        rows = [
            trial_row(k, lr, mix, 0.1 + 0.02 * k, 0.002 * k)
            for k, (lr, mix) in enumerate([(0.05, "8:1"), (0.3, "1:2"), (0.1, "2:1"), (0.2, "4:1"), (0.07, "1:1")])
        ]
        point = rung.spec.space.point(first.params)
        row = trial_row(5, point.lr_fraction, str(point.mix), 0.19, 0.004)
        rows.append(row.model_copy(update={"domain_share": point.mix.domain_share}))  # as the table reads params
        plan = SweepPlan.from_spec(rung.spec)
        selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
        summary = best_summary_with(None, selection, rows, plan).model_copy(update={"pick": _pick(rung.parameters)})
        return SweepOutcome(rows=rows, selection=selection, summary=summary, planned=len(rows))


class Quiet:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)

    def start(self) -> None: ...

    def update(self, rows, *, planned, trial_ended, at_once) -> None: ...

    def stop(self) -> None: ...


@pytest.fixture
def ladder_spec(write_tiny_spec):
    return load_spec(write_tiny_spec("ladder.yaml", ladder=LADDER, space={
        "lr_fraction": {"low": 0.05, "high": 0.3}, "mix": {"low": "8:1", "high": "1:2"}}))  # fmt: skip


def test_the_largest_rung_is_predicted_written_and_enqueued_before_its_trials_run(ladder_spec, tmp_path):
    run = RunDir(tmp_path / "runs" / "ladder")
    rungs = ScriptedRungs(run)
    view = Quiet()
    outcome = run_ladder(ladder_spec, run, fresh=False, view=view, run_rung=rungs)

    assert [start["rung"] for start in rungs.started] == ["xs", "s", "m"]
    assert rungs.started[0]["prediction"] is None and rungs.started[1]["prediction"] is None
    prediction = rungs.started[2]["prediction"]  # on disk when the largest rung started
    m = PRESETS["m"].parameters
    assert prediction.from_rungs == ["xs", "s"] and prediction.parameters == m
    assert math.exp(prediction.estimates[Quantity.LOG_LR_FRACTION].mean) == pytest.approx(law_lr(m), rel=0.02)
    assert prediction.estimates[Quantity.LOG_MIX_RATIO].mean == pytest.approx(law_log_mix(m), abs=0.02)
    assert prediction.estimates[Quantity.LOG_LR_FRACTION].low is None  # two rungs: no degree of freedom
    assert rungs.started[2]["first"] == prediction.enqueued  # the largest rung's first trial is the prediction
    assert rungs.started[0]["first"] != prediction.enqueued

    summary = outcome.summary
    assert summary.finished and read_ladder(run) == summary
    assert summary.fits[Quantity.LOG_LR_FRACTION].dof == 1
    assert summary.validation.trial == 5 and summary.validation.at_predicted_point[Quantity.GAIN] == 0.19
    assert summary.validation.within_interval[Quantity.LOG_LR_FRACTION] is None
    assert any("rung m (3 of 3)" in line for line in view.lines)
    assert (run.rung("m").path / "optuna.db").is_file()


def test_a_rerun_keeps_the_prediction_it_finds_and_enqueues_nothing_twice(ladder_spec, tmp_path):
    run = RunDir(tmp_path / "runs" / "ladder")
    first = run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=ScriptedRungs(run))
    again = ScriptedRungs(run)
    second = run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=again)
    assert second.summary.prediction == first.summary.prediction  # written_at included: not made again
    assert again.started[2]["first"] != first.summary.prediction.enqueued  # already asked: not enqueued again


def test_a_ladder_of_other_rungs_is_refused(ladder_spec, tmp_path):
    run = RunDir(tmp_path / "runs" / "ladder")
    run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=ScriptedRungs(run))
    other = ladder_spec.model_copy(update={"ladder": LadderConfig.model_validate({"rungs": ["xs", "m", {
        "name": "l", "hidden_size": 192, "num_layers": 6, "num_heads": 6, "num_kv_heads": 2,
        "intermediate_size": 528}]})})  # fmt: skip
    with pytest.raises(LadderMismatch, match="rerun with --fresh"):
        run_ladder(other, run, fresh=False, view=Quiet(), run_rung=ScriptedRungs(run))
    fresh = run_ladder(other, run, fresh=True, view=Quiet(), run_rung=ScriptedRungs(run))
    assert fresh.summary.planned == ["xs", "m", "l"]


def test_a_corrupt_ladder_json_is_exit_2_naming_it(ladder_spec, tmp_path, capsys, monkeypatch):
    from cli import main

    run = RunDir(tmp_path / "runs" / "ladder")
    run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=ScriptedRungs(run))
    run.ladder_json.write_text('{"target": 3}')
    for argv in (["report", str(run.path)], ["promote", "plan", str(run.path), "--target", "llama3.1-70b"]):
        assert main(argv) == 2
        assert f"{run.ladder_json} is not a ladder summary cpt-sweep wrote" in capsys.readouterr().err


class RecordedRungs(ScriptedRungs):
    """ScriptedRungs whose rungs are run directories `sweep status` reads: a run record, and in the study one
    completed scripted trial (the rung's first); `stop_at` leaves that rung unfinished, so the ladder stops."""

    def __init__(self, ladder_dir: RunDir, *, stop_at: str | None = None) -> None:
        super().__init__(ladder_dir)
        self.stop_at = stop_at

    def __call__(self, rung: RungSpec, run: RunDir, start: RungStart) -> SweepOutcome:
        outcome = super().__call__(rung, run, start)
        run.write_record(RunRecord(study_name=start.study_name))
        _, sweep = open_run(run)
        run_study_trial(sweep, sweep.trials()[0].number, scripted([0.01 * k for k in range(len(STEPS))]))
        if rung.name == self.stop_at:
            return SweepOutcome(rows=outcome.rows, selection=outcome.selection, summary=outcome.summary,
                                planned=outcome.planned + 1)  # fmt: skip
        return outcome


def snapshot(root) -> list:
    """Every file with its mtime, but SQLite's: any reader of a WAL-mode study makes its -wal and -shm, and the
    last connection to close folds the WAL into the database file and removes them (whether the ladder's own
    connections are closed by then is up to the GC). The studies are compared by their trials instead."""
    sqlite = (".db", ".db-wal", ".db-shm")
    files = sorted((path, path.stat().st_mtime_ns) for path in root.rglob("*") if path.is_file())
    studies = {
        path: [(t.number, t.state, t.params, t.values) for t in optuna.load_study(
            study_name=None, storage=f"sqlite:///{path}").get_trials()]
        for path in sorted(root.rglob("*.db"))
    }  # fmt: skip
    return [entry for entry in files if not entry[0].name.endswith(sqlite)] + sorted(studies.items())


def test_status_of_a_ladder_shows_each_rung_in_order_and_the_prediction_against_the_measurement(
    ladder_spec, tmp_path, capsys
):
    from cli import main

    run = RunDir(tmp_path / "runs" / "ladder")
    run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=RecordedRungs(run))
    capsys.readouterr()
    before = snapshot(tmp_path)
    assert main(["status", str(run.path)]) == 0
    out = capsys.readouterr().out
    assert snapshot(tmp_path) == before  # read-only: nothing created or rewritten
    lines = out.splitlines()
    heads = [line for line in lines if line.startswith("rung ")]
    assert [head.split(" (")[0] for head in heads] == ["rung xs", "rung s", "rung m"]
    for head, preset in zip(heads, ("xs", "s", "m")):
        assert f"N {PRESETS[preset].parameters:,}" in head and "1 completed" in head and "0 running" in head
    assert sum(line.strip().startswith("pick (best observed trial)") for line in lines) == 3  # each rung finished
    assert "prediction of m: written" in out and "enqueued as its first trial" in out
    assert "m lr_fraction: predicted" in out and ", measured " in out and "inside the interval: —" in out


def test_status_of_an_unfinished_ladder_says_which_rungs_have_not_started(ladder_spec, tmp_path, capsys):
    from cli import main

    run = RunDir(tmp_path / "runs" / "ladder")
    run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=RecordedRungs(run, stop_at="s"))
    capsys.readouterr()
    before = snapshot(tmp_path)
    assert main(["status", str(run.path)]) == 0
    out = capsys.readouterr().out
    assert snapshot(tmp_path) == before
    assert "1 of 3 rungs finished" in out
    assert f"rung m (3 of 3), N {PRESETS['m'].parameters:,}: not started" in out
    assert "rung s (2 of 3)" in out and out.count("pick (") == 1  # s is not finished: no pick shown for it
    assert "prediction of m: not written yet" in out


@pytest.mark.slow
def test_a_micro_ladder_trains_end_to_end(write_tiny_spec, tmp_path):
    """Three tiny built-in shapes, 2 trials each one after the other and no replicates, on one Ray per rung:
    the run directory holds each rung's sweep and ladder.json with its prediction and fits, and the report
    is written."""
    micro = [
        {"name": f"r{k}", "hidden_size": 16 * k, "num_layers": k, "num_heads": k, "num_kv_heads": 1,
         "intermediate_size": 44 * k}
        for k in (1, 2, 3)
    ]  # fmt: skip
    spec = write_tiny_spec(
        "micro_ladder.yaml",
        ladder={"rungs": micro, "pretrain_tokens_per_parameter": 1.0},  # r3: 148 steps of 8 x 64
        proxy={"steps": 24, "eval_interval": 12, "warmup_steps": 2},
        search={"num_trials": 2, "sampler": "random", "replicates": {"top": 0}},
        execution={"concurrency": 1},  # one trial process per rung: its start (imports) costs more than the trials
    )
    done = subprocess.run(
        [sys.executable, "-m", "cli", "run", str(spec)], cwd=tmp_path, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    run = RunDir(tmp_path / "runs" / "micro_ladder")
    summary = read_ladder(run)
    assert summary.planned == ["r1", "r2", "r3"] and "rung r3 (3 of 3)" in done.stdout
    for name in summary.planned:
        assert (run.rung(name).best_json).is_file()
    assert (run.report / "index.html").is_file()
