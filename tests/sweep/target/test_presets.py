"""Targets and clusters, named the one way sweep.target.presets reads (a preset or a YAML file): the presets carry the
published numbers; every shipped YAML loads; bad files fail naming the file, key and value."""

import pytest

from sweep.files.config_file import SpecError
from sweep.promote.estimate.clusters import PRESETS as CLUSTERS
from sweep.promote.estimate.clusters import Cluster, load_cluster
from sweep.scale import total_params
from sweep.target.errors import TargetError
from sweep.target.families.registry import PRESETS as TARGETS
from sweep.target.load import load_target
from sweep.target.target import Target
from tests.conftest import REPO

# (layers, hidden, FFN, heads, KV heads, peak LR, parameters in billions): Llama 3 paper, Table 3;
# parameter counts as Meta publishes them for the released checkpoints.
LLAMA_3_1 = {
    "llama3.1-8b": (32, 4096, 14336, 32, 8, 3e-4, 8.03),
    "llama3.1-70b": (80, 8192, 28672, 64, 8, 1.5e-4, 70.55),
    "llama3.1-405b": (126, 16384, 53248, 128, 8, 8e-5, 405.85),
}


@pytest.mark.parametrize("name", sorted(LLAMA_3_1))
def test_llama_presets_have_the_published_shapes_and_peak_lrs(name):
    layers, hidden, ffn, heads, kv, max_lr, billions = LLAMA_3_1[name]
    target = load_target(name)
    model = target.model
    got = (
        model.num_layers,
        model.hidden_size,
        model.ffn_hidden_size,
        model.num_attention_heads,
        model.num_query_groups,
    )
    assert got == (layers, hidden, ffn, heads, kv)
    assert (model.vocab_size, model.rotary_base, model.seq_length) == (128256, 500_000, 8192)
    assert target.max_lr == max_lr
    assert total_params(model) / 1e9 == pytest.approx(billions, abs=0.01)


def test_h100_preset_is_the_reference_cluster():
    cluster = load_cluster("h100-480")
    assert (cluster.nodes, cluster.gpus_per_node, cluster.gpus) == (60, 8, 480)
    assert (cluster.gpu_memory_gb, cluster.peak_bf16_tflops) == (80, 989)
    assert (cluster.intra_node_gb_per_s, cluster.inter_node_gb_per_s) == (450, 50)  # 900 GB/s NVLink, 400 Gb/s IB


SHIPPED = [
    (load, presets, path)
    for folder, load, presets in (("targets", load_target, TARGETS), ("clusters", load_cluster, CLUSTERS))
    for path in sorted((REPO / "search_spaces" / folder).glob("*.yaml"))
]


@pytest.mark.parametrize(("load", "presets", "path"), SHIPPED, ids=[f"{p.parent.name}/{p.name}" for *_, p in SHIPPED])
def test_every_shipped_target_and_cluster_yaml_loads(load, presets, path):
    config = load(str(path))
    assert isinstance(config, (Target, Cluster))
    assert config.name == path.stem and config.name not in presets


def test_unknown_names_list_the_presets():
    with pytest.raises(
        TargetError, match="unknown target 'llama9'; presets: llama3.1-8b, llama3.1-70b, llama3.1-405b"
    ):
        load_target("llama9")
    with pytest.raises(TargetError, match="unknown cluster 'dgx'; presets: h100-480"):
        load_cluster("dgx")


def test_a_bad_cluster_file_names_the_file_key_and_value(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\nnodes: 2\ngpus_per_node: 0\ngpu_memory_gb: 80\npeak_bf16_tflops: 989\n"
        "intra_node_gb_per_s: 450\ninter_node_gb_per_s: 50\nnvlink: 900\n"
    )
    with pytest.raises(SpecError) as error:
        load_cluster(str(path))
    message = str(error.value)
    assert message.startswith(f"{path}: 2 problem(s) in the cluster:")
    assert "gpus_per_node = 0: Input should be greater than 0" in message
    assert "nvlink = 900: unknown key; valid keys here: name, nodes, gpus_per_node" in message


def test_a_target_file_checks_the_model_shape(tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text(
        "name: odd\nmax_lr: 3.0e-4\nmodel: {num_layers: 2, hidden_size: 100, ffn_hidden_size: 256,"
        " num_attention_heads: 3, num_query_groups: 1, vocab_size: 512, seq_length: 128}\n"
    )
    with pytest.raises(SpecError, match=r"model: hidden_size must be a multiple of num_attention_heads"):
        load_target(str(path))
    with pytest.raises(SpecError, match="target file not found"):
        load_target(str(tmp_path / "missing.yaml"))
