"""`sweep promote plan` end to end through the CLI: the files it writes, user-defined targets,
clusters and promotion files, and exit code 2 with a message naming the constraint for every
request that has no valid plan."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli import main
from sweep.promote.plan.plan import Plan
from sweep.promote.request.config import PromotionConfig
from sweep.spec.spec import load_config
from sweep.target.load import TARGET_FORMS
from tests.conftest import REPO
from train_entry.file_format import FULL_RUN
from train_entry.megatron.config import FullRunConfig

SHIPPED_PROMOTIONS = sorted((REPO / "search_spaces" / "promotion").glob("*.yaml"))


def cluster_yaml(tmp_path: Path, *, gpus_per_node: int, nodes: int = 60) -> Path:
    path = tmp_path / f"c{gpus_per_node}x{nodes}.yaml"
    path.write_text(
        f"name: c{gpus_per_node}x{nodes}\nnodes: {nodes}\ngpus_per_node: {gpus_per_node}\ngpu_memory_gb: 80\n"
        "peak_bf16_tflops: 989\nintra_node_gb_per_s: 450\ninter_node_gb_per_s: 50\n"
    )
    return path


def promote(run_dir: Path, *flags: str) -> int:
    return main(["promote", "plan", str(run_dir), *flags])


@pytest.mark.parametrize("target", ["llama3.1-70b", "llama3.1-8b"])
def test_dry_run_prints_the_plan_and_writes_its_files(finished_run, capsys, target):
    run_dir = finished_run()
    assert promote(run_dir, "--target", target) == 0
    out = capsys.readouterr().out
    for shown in ("peak LR", "Blend (Megatron --data-path)", "chosen", "memory/GPU", "wall clock", "GPU-hours"):
        assert shown in out
    [directory] = (run_dir / "promotion").iterdir()
    assert directory.name.startswith(f"{target}-h100-480-")
    assert {path.name for path in directory.iterdir()} == {
        "plan.json", "full_run.json", "summary.md", "pretrain_gpt_args.txt", "pretrain_gpt.sh"
    }  # fmt: skip
    plan = Plan.read(directory)
    assert FULL_RUN.read(directory / "full_run.json", FullRunConfig) == plan.run  # the entry's input
    assert f"plan {plan.id} written to" in out
    assert plan.chosen.memory.total_gb < 80


def test_user_defined_target_and_cluster_files(finished_run, capsys):
    run_dir = finished_run()
    target, cluster = (REPO / "search_spaces/targets/llama2-7b.yaml", REPO / "search_spaces/clusters/h200-256.yaml")
    assert promote(run_dir, "--target", str(target), "--cluster", str(cluster)) == 0
    [directory] = (run_dir / "promotion").iterdir()
    plan = Plan.read(directory)
    assert (plan.target.name, plan.cluster.name, plan.cluster.gpus) == ("llama2-7b", "h200-256", 256)
    assert plan.run.optimization.lr == pytest.approx(0.1 * 3e-4)
    assert plan.run.parallelism.global_batch_size == 1440 * 8192 // 4096  # same tokens per step at 4K sequences
    assert "--use-rope-scaling" not in (directory / "pretrain_gpt_args.txt").read_text()


def test_a_cluster_without_transformer_engine_plans_without_its_settings_and_the_flag_overrides_it(
    finished_run, tmp_path
):
    cluster = cluster_yaml(tmp_path, gpus_per_node=8)
    cluster.write_text(cluster.read_text() + "transformer_engine: false\n")
    run_dir = finished_run()
    assert promote(run_dir, "--target", "llama3.1-8b", "--cluster", str(cluster)) == 0
    assert promote(run_dir, "--target", "llama3.1-8b", "--cluster", str(cluster), "--transformer-engine") == 0
    plans = {plan.cluster.transformer_engine: plan for plan in map(Plan.read, (run_dir / "promotion").iterdir())}
    assert plans.keys() == {False, True}
    assert not plans[False].run.parallelism.sequence_parallel and plans[False].run.parallelism.context == 1
    assert plans[True].run.parallelism.sequence_parallel
    assert "without TE" in (run_dir / "promotion" / plans[False].id / "summary.md").read_text()


@pytest.mark.parametrize("path", SHIPPED_PROMOTIONS, ids=lambda p: p.name)
def test_every_shipped_promotion_file_plans_with_its_real_inputs(finished_run, capsys, path):
    config = load_config(path, PromotionConfig, kind="promotion config")
    run_dir = finished_run()
    assert promote(run_dir, "--config", str(path), "--tokens", "2e12") == 0
    [directory] = (run_dir / "promotion").iterdir()
    plan = Plan.read(directory)
    assert plan.target.name == config.target and plan.tokens == 2 * 10**12  # the flag overrides the file
    assert plan.placeholders == []
    assert "placeholders for" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--target", "llama3.1-70b", "--tensor-parallel", "8", "--cluster", "{c7}"],
            "tensor parallel size 8 is invalid: TP must not exceed the GPUs per node (7)",
        ),
        (
            # PP pinned: unpinned, an uneven 15-stage pipeline at DP 1 takes any global batch.
            ["--target", "llama3.1-70b", "--global-batch-tokens", str(1441 * 8192), "--pipeline-parallel", "4"],
            "global batch size 1441 sequences is not a multiple of micro-batch x DP for any layout",
        ),
        (
            ["--target", "llama3.1-70b", "--global-batch-tokens", "10000000"],
            "global batch of 10000000 tokens is not a whole number of 8192-token sequences",
        ),
        (["--target", "llama3.1-405b", "--cluster", "{c8x1}"], "the model fits no layout in 80 GB per GPU on 8 GPUs"),
        (
            ["--target", "llama3.1-70b", "--no-transformer-engine", "--context-parallel", "2"],
            "context parallel size 2 needs Transformer Engine's layers, and the cluster's image has none",
        ),
        (["--target", "llama9"], "unknown target 'llama9'; presets: llama3.1-8b, llama3.1-70b, llama3.1-405b"),
        ([], "no target: --target is required"),
    ],
    ids=[
        "tp8-on-7-gpu-nodes",
        "indivisible-batch",
        "partial-sequence",
        "405b-on-8-gpus",
        "cp-without-te",
        "unknown-target",
        "no-target",
    ],
)
def test_impossible_requests_exit_2_naming_the_constraint(finished_run, capsys, tmp_path, flags, message):
    clusters = {
        "{c7}": cluster_yaml(tmp_path, gpus_per_node=7),
        "{c8x1}": cluster_yaml(tmp_path, gpus_per_node=8, nodes=1),
    }
    flags = [str(clusters.get(flag, flag)) for flag in flags]
    run_dir = finished_run()
    assert promote(run_dir, *flags) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert not (run_dir / "promotion").exists()  # nothing written for a refused request


def test_no_optimum_and_no_mode_exit_2(finished_run, tmp_path, capsys):
    assert promote(finished_run(feasible=False), "--target", "llama3.1-8b") == 2
    assert "has no point to promote" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["promote", str(finished_run()), "--target", "llama3.1-8b"])
    assert exited.value.code == 2 and "choose from 'plan', 'submit', 'rehearse'" in capsys.readouterr().err


def test_the_0_1_form_is_refused_by_argparse_naming_the_modes(finished_run, capsys):
    run_dir = finished_run()
    with pytest.raises(SystemExit) as exited:
        main(["promote", str(run_dir), "--target", "llama3.1-8b", "--dry-run"])
    assert exited.value.code == 2 and "choose from 'plan', 'submit', 'rehearse'" in capsys.readouterr().err
    assert not (run_dir / "promotion").exists()


def test_a_malformed_data_prefix_is_an_argument_error(finished_run, capsys):
    with pytest.raises(SystemExit) as exit_:
        promote(finished_run(), "--target", "llama3.1-8b", "--data-prefix", "english=/d/x")
    assert exit_.value.code == 2
    assert "SIDE one of general, non_english, domain" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        promote(finished_run(), "--target", "llama3.1-8b", "--valid-prefix", "english=/d/x")
    assert exit_.value.code == 2
    assert "must be SIDE=PREFIX with SIDE one of general, non_english, domain, got 'english=/d/x'" in (
        capsys.readouterr().err
    )


def test_data_prefixes_from_the_command_line(finished_run):
    run_dir = finished_run()
    flags = ["--data-prefix", "general=/d/en@3e11", "--data-prefix", "general=/d/wiki@1e11"]
    flags += ["--data-prefix", "domain=/d/shop", "--tokenizer", "/m/tok", "--save-dir", "/c/run"]
    flags += ["--valid-prefix", "general=/d/en_valid", "--valid-prefix", "domain=/d/shop_valid"]
    assert promote(run_dir, "--target", "llama3.1-8b", *flags) == 0
    [directory] = (run_dir / "promotion").iterdir()
    plan = Plan.read(directory)
    weights = {source.prefix: source.weight for source in plan.run.data.blend}
    assert weights["/d/en"] == pytest.approx(0.45 * 0.75) and weights["/d/wiki"] == pytest.approx(0.45 * 0.25)
    assert weights["/d/shop"] == pytest.approx(0.5)
    assert plan.placeholders == ["data prefix non_english", "base checkpoint", "validation prefix non_english"]
    assert [item.prefix for item in plan.validation[:2]] == ["/d/en_valid", "/d/shop_valid"]


def test_a_promotion_file_names_target_files_relative_to_itself(finished_run, tmp_path):
    (tmp_path / "targets").mkdir()
    (tmp_path / "targets" / "llama2-7b.yaml").write_text((REPO / "search_spaces/targets/llama2-7b.yaml").read_text())
    config = tmp_path / "promote.yaml"
    config.write_text("target: targets/llama2-7b.yaml\ntokens: 1.0e+11\n")
    run_dir = finished_run()
    assert promote(run_dir, "--config", str(config)) == 0
    [directory] = (run_dir / "promotion").iterdir()
    assert Plan.read(directory).target.name == "llama2-7b"


def test_a_bad_promotion_file_names_the_file_key_and_value(finished_run, tmp_path, capsys):
    config = tmp_path / "promote.yaml"
    config.write_text("target: llama3.1-8b\ntokens: -5\nlayout: {tensr: 8}\n")
    assert promote(finished_run(), "--config", str(config)) == 2
    err = capsys.readouterr().err
    assert f"{config}: 2 problem(s) in the promotion config:" in err
    assert "tokens = -5: Input should be greater than 0" in err
    assert "layout.tensr = 8: unknown key; valid keys here: tensor, pipeline" in err


def test_a_bad_split_in_a_promotion_file_is_one_line_naming_the_file_and_the_key(finished_run, capsys, tmp_path):
    """It was pydantic's multi-line dump of the plan's Data, naming neither."""
    path = tmp_path / "promotion.yaml"
    path.write_text("target: llama3.1-8b\ndata:\n  split: '99,1'\n")
    run_dir = finished_run()
    assert promote(run_dir, "--config", str(path)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: data.split = '99,1': split must be three non-negative numbers")
    assert len(err.strip().splitlines()) == 1 and not (run_dir / "promotion").exists()


def test_a_run_too_short_to_warm_up_is_refused_naming_the_tokens_it_needs(finished_run, capsys):
    """--tokens 1 planned a run of one iteration at the peak LR without a word."""
    run_dir = finished_run()
    assert promote(run_dir, "--target", "llama3.1-8b", "--tokens", "1") == 2
    err = capsys.readouterr().err
    assert "tokens = 1 (--tokens) is 1 iteration(s) of 11,796,480 tokens" in err
    assert "needs at least 51 iterations, 601,620,480 tokens" in err and not (run_dir / "promotion").exists()
    assert promote(run_dir, "--target", "llama3.1-8b", "--tokens", "601620480") == 0


@pytest.mark.parametrize(
    ("flag", "value", "most"), [("--tokens", "1e30", "1e+15"), ("--global-batch-tokens", "1e12", "1.07e+09")]
)
def test_a_size_past_any_run_is_argparses_own_error_before_the_run_is_read(flag, value, most, tmp_path, capsys):
    """--tokens 1e30 was planned as a run of 3.4e18 days."""
    with pytest.raises(SystemExit) as exited:
        promote(tmp_path / "no-run", "--target", "llama3.1-8b", flag, value)
    assert exited.value.code == 2
    assert f"argument {flag}: must be at most {most}, got '{value}'" in capsys.readouterr().err
    assert not (tmp_path / "no-run").exists()


def test_a_promotion_file_past_any_run_is_refused_naming_the_key(finished_run, tmp_path, capsys):
    config = tmp_path / "promote.yaml"
    config.write_text("target: llama3.1-8b\ntokens: 10000000000000000\n")
    run_dir = finished_run()
    assert promote(run_dir, "--config", str(config)) == 2
    error = capsys.readouterr().err
    assert "tokens = 10000000000000000: Input should be less than or equal to 1000000000000000" in error
    assert not (run_dir / "promotion").exists()


def test_the_default_and_the_shipped_70b_plans_get_their_own_ids_and_neither_overwrites_another(finished_run, capsys):
    # Seen by a user: the second of these two plans silently replaced the first in the same directory.
    run_dir = finished_run()
    assert promote(run_dir, "--target", "llama3.1-70b") == 0
    assert promote(run_dir, "--config", str(REPO / "search_spaces" / "promotion" / "lr_mix_70b.yaml")) == 0
    default, shipped = sorted((run_dir / "promotion").iterdir(), key=lambda d: Plan.read(d).run.data.tokenizer)
    assert default.name != shipped.name
    # A plan.json of another request under this id (as an older cpt-sweep wrote them) is refused, not replaced.
    other = (shipped / "plan.json").read_text().replace(shipped.name, default.name)
    (default / "plan.json").write_text(other)
    capsys.readouterr()
    assert promote(run_dir, "--target", "llama3.1-70b") == 2
    assert f"holds another plan under id {default.name}" in capsys.readouterr().err
    assert (default / "plan.json").read_text() == other


def test_a_request_without_a_target_is_exit_2_naming_its_three_forms_before_any_work(tmp_path):
    """Before the run is read or torch, Ray and megatron-core load (it took ~10 s to say, and named two forms)."""
    probe = (
        "import sys\nfrom cli import main\nrc = main(['promote', 'plan', sys.argv[1]])\n"
        "print(rc, sorted({'torch', 'ray', 'megatron'} & {name.split('.')[0] for name in sys.modules}))"
    )
    missing = tmp_path / "runs" / "no-such-run"
    done = subprocess.run([sys.executable, "-c", probe, str(missing)], cwd=REPO, capture_output=True, text=True)
    assert done.stdout.strip() == "2 []", done.stderr
    assert done.stderr == (
        f"error: no target: --target is required (or target: in the --config file): {TARGET_FORMS}\n"
    )


def test_a_promotion_config_without_a_target_is_the_same_error(finished_run, tmp_path, capsys):
    config = tmp_path / "promotion.yaml"
    config.write_text("cluster: h100-480\n")
    assert promote(finished_run(), "--config", str(config)) == 2
    assert "no target: --target is required (or target: in the --config file): a preset (" in capsys.readouterr().err


def test_a_promotion_folder_linked_out_of_the_run_is_not_written_into(finished_run, tmp_path, capsys):
    """A plan is written only inside its run (issue 52): promotion/ linked elsewhere is exit 2, its target untouched."""
    run_dir = finished_run()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run_dir / "promotion").symlink_to(elsewhere, target_is_directory=True)
    capsys.readouterr()
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {run_dir / 'promotion'}/llama3.1-8b-") and "leads outside the run directory" in line
    assert not any(elsewhere.iterdir())
