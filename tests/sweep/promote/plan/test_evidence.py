"""The plan names its evidence: the proxy base its lr_fraction was measured on (model, non-embedding parameters,
tokenizer, max_lr) and how the fraction reached the target (here: unchanged from the proxy, unvalidated at the
target's size; a ladder's law is tests/sweep/promote/point/test_ladder_promotion.py's), in plan.json and in every
sentence of the summary, each computed from the record."""

from __future__ import annotations

import json

import yaml

from sweep.files.rundir import RunDir
from sweep.promote.launch.promotion import write_plan
from sweep.promote.plan.evidence import Carried, ProxyBase
from sweep.promote.plan.plan import Plan, make_plan
from sweep.promote.plan.summary import summary_markdown
from sweep.promote.request.config import PromotionConfig
from sweep.run.tracking import TrackingConfig
from sweep.scale import non_embedding_params
from sweep.spec.shapes import builtin_shape
from sweep.target.families.registry import PRESETS
from tests.sweep.promote.promote_runs import MAX_LR, surrogate_pick, write_run
from tests.sweep.scripted import spec_with
from tests.sweep.target.families.released_configs import CONFIGS

TARGET = PromotionConfig(target="llama3.1-70b")
TARGET_N = non_embedding_params(PRESETS["llama3.1-70b"].model)


def _text(plan: Plan) -> str:
    return " ".join(summary_markdown(plan).replace("│", " ").split())  # the table's cells wrap over lines


def test_a_builtin_proxy_is_named_with_its_size_and_the_fraction_unvalidated_at_the_target(tmp_path):
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    spec = spec_with().model_copy(update={"tracking": TrackingConfig()})
    RunDir(run_dir).write_spec_copy(spec)
    plan = make_plan(run_dir, TARGET)

    proxy_n = non_embedding_params(builtin_shape(spec.base.builtin, vocab_size=1, seq_len=1))
    assert plan.sweep.proxy == ProxyBase(
        model="builtin:tiny-llama", parameters=proxy_n, tokenizer="/cache/tokenizer", max_lr=MAX_LR
    )
    assert plan.sweep.carried == Carried(by="unchanged", target_parameters=TARGET_N)
    written = json.loads(write_plan(plan, run_dir).plan_json.read_text())
    assert written["sweep"]["proxy"]["parameters"] == proxy_n and written["sweep"]["carried"]["by"] == "unchanged"

    text = _text(plan)
    assert f"proxy base builtin:tiny-llama: {proxy_n:,} non-embedding parameters, tokenizer /cache/tokenizer, " in text
    assert f"max_lr {MAX_LR:g} (its own pretraining peak LR" in text
    assert (
        f"lr_fraction 0.13, unchanged from the proxy ({proxy_n:,} non-embedding parameters): UNVALIDATED at "
        f"llama3.1-70b's {TARGET_N / 1e9:.2f} B non-embedding parameters, no law carried it there"
    ) in text
    # The pick's intervals are the surrogate's over proxy trials: the row says so.
    assert f"certainty the proxy's ({proxy_n:,} non-embedding parameters), not llama3.1-70b's: 90 % intervals" in text
    assert f"P(proxy re-run within budget) {plan.sweep.promoted.probability_within_budget:.2f}" in text
    assert "x llama3.1-70b's max_lr 0.00015" in text  # the target's max_lr, not the proxy's


def test_a_hugging_face_proxy_is_counted_from_its_config_json(tmp_path):
    """A spec whose base is a Hugging Face directory (Qwen2.5 0.5B's config.json here): its N as a ladder's law counts
    a Hugging Face rung's (sweep.spec.shapes: layers and final norm, the QKV biases' 27,648 not among them)."""
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    base = tmp_path / "Qwen2.5-0.5B"
    base.mkdir()
    (base / "config.json").write_text(json.dumps(CONFIGS["qwen2.5-0.5b"]))
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text())  # the run's own copy, its base replaced
    spec["base"] = {"model": str(base), "max_lr": MAX_LR}
    (run_dir / "spec.yaml").write_text(yaml.safe_dump(spec))
    plan = make_plan(run_dir, TARGET)
    assert (plan.sweep.proxy.model, plan.sweep.proxy.parameters) == (str(base), 357_870_464)
    assert f"proxy base {base}: 357,870,464 non-embedding parameters" in _text(plan)


def test_a_proxy_whose_base_is_gone_is_named_by_its_directory_and_its_size_said_unread(tmp_path):
    """No spec copy, and the trials' base directory (/cache/base) holds no config.json any more."""
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    (run_dir / "spec.yaml").unlink()
    plan = make_plan(run_dir, TARGET)
    assert (plan.sweep.proxy.model, plan.sweep.proxy.parameters) == ("/cache/base", None)
    text = _text(plan)
    assert "proxy base /cache/base: non-embedding parameters not read, tokenizer /cache/tokenizer" in text
    # The best observed trial: one trial's measurement, without an interval, and the proxy's.
    assert (
        "certainty the proxy's (non-embedding parameters not read), not llama3.1-70b's: domain_gain and forgetting "
        "above are one proxy trial's measurement (trial 7), without an interval"
    ) in text
