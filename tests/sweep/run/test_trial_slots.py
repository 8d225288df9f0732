"""What Ray Tune books for a trial and how many run at once: a one-process trial books its own CPUs and GPUs, a
sharded trial only its driver's (its Ray Train job books the workers'), and trials at once are no more than the
cluster's GPUs and CPUs hold; a trial larger than the cluster is refused with the figures, by `sweep run` before it
prepares anything. Scripted clusters, and this machine's Ray."""

from __future__ import annotations

import pytest
import ray
import torch

from cli import main
from sweep.run.trial_slots import DRIVER_CPUS, ClusterTooSmall, trial_cpus, trial_slots
from sweep.spec.trial_scale import TrialScale

NODE_OF_8 = {"CPU": 96.0, "GPU": 8.0}


@pytest.mark.parametrize(
    ("settings", "concurrency", "resources", "at_once"),
    [
        ({"gpus": 1}, 16, {"cpu": 1, "gpu": 1}, 8),
        ({"gpus": 0.5}, 32, {"cpu": 1, "gpu": 0.5}, 16),
        ({"gpus": 2}, 8, {"cpu": DRIVER_CPUS, "gpu": 0}, 4),  # the job books each worker's GPU
        ({"gpus": 4, "cpus": 8}, 8, {"cpu": DRIVER_CPUS, "gpu": 0}, 2),
        ({"gpus": 4, "cpus": 16}, 8, {"cpu": DRIVER_CPUS, "gpu": 0}, 1),  # 65 CPUs a trial: one fits 96
        ({"gpus": 1}, 3, {"cpu": 1, "gpu": 1}, 3),  # concurrency is the upper bound
        ({"workers": 2}, 8, {"cpu": DRIVER_CPUS, "gpu": 0}, 8),  # CPU workers: 3 CPUs a trial, 32 fit
    ],
)  # fmt: skip
def test_trials_at_once_are_what_the_clusters_gpus_and_cpus_hold(settings, concurrency, resources, at_once):
    slots = trial_slots(TrialScale(**settings), concurrency=concurrency, cluster=NODE_OF_8)
    assert (slots.resources, slots.at_once) == (resources, at_once)


def test_a_sharded_trial_takes_its_drivers_cpu_and_each_workers():
    assert trial_cpus(TrialScale(workers=2, cpus=3)) == DRIVER_CPUS + 6
    assert trial_cpus(TrialScale(gpus=1, cpus=3)) == 3
    slots = trial_slots(TrialScale(workers=2), concurrency=4, cluster={"CPU": 6.0})
    assert slots.at_once == 2
    assert slots.line(TrialScale(workers=2)) == (
        "trials: 2 at once, each a Ray Train job of 2 CPU workers (gloo), its model sharded with FSDP2; the Ray "
        "cluster has 0 GPU(s) and 6 CPU(s)"
    )


def test_a_trial_larger_than_the_cluster_is_refused_with_the_figures():
    with pytest.raises(ClusterTooSmall, match=r"gpus = 4: a trial takes 4 GPU\(s\) and the Ray cluster has 2;"):
        trial_slots(TrialScale(gpus=4), concurrency=2, cluster={"CPU": 64.0, "GPU": 2.0})
    with pytest.raises(ClusterTooSmall, match=r"gpus = 1: a trial takes 1 GPU\(s\) and the Ray cluster has 0;"):
        trial_slots(TrialScale(gpus=1), concurrency=2, cluster={"CPU": 64.0})
    with pytest.raises(ClusterTooSmall, match=r"a trial takes 9 CPU\(s\) \(execution.cpus = 4 per worker, 2 worker"):
        trial_slots(TrialScale(workers=2, cpus=4), concurrency=2, cluster={"CPU": 8.0})


def test_sweep_run_asking_for_more_gpus_than_ray_finds_stops_before_preparing_anything(
    write_tiny_spec, tmp_path, monkeypatch, capsys
):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU for the trial")
    path = write_tiny_spec("one_gpu.yaml", execution={"concurrency": 1, "cpus": 1, "gpus": 1})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CPT_SWEEP_CACHE", str(tmp_path / "cache"))

    assert main(["run", str(path)]) == 2

    error = capsys.readouterr().err
    assert "execution.gpus = 1: a trial takes 1 GPU(s) and the Ray cluster has 0" in error
    assert not (tmp_path / "cache").exists()  # refused before the tokenizer, the corpora and the base
    assert not ray.is_initialized()
