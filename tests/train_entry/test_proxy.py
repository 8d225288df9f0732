"""Real proxy trials on the tiny spec: reproducible, a real LR trend, divergence, HF-directory bases."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer

from cli import main
from sweep.run.prepare import Prepared, prepare
from sweep.spec.spec import load_spec
from train_entry.data.corpus import Corpus, CorpusError
from train_entry.data.tokenizer import train_bpe
from train_entry.file_format import TRIAL_CONFIG
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.trial_config import Metrics, TrialConfig, TrialStatus


@pytest.fixture(scope="module")
def prepared(tiny_spec_path) -> Prepared:
    return prepare(load_spec(tiny_spec_path))


def _run(config: TrialConfig, report=lambda metrics: False):
    return run_trial(config, report)


def test_same_config_gives_identical_metrics(prepared, tmp_path):
    mix = MixRatio(1, 1)
    first = _run(prepared.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "a"))
    second = _run(prepared.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "b"))
    assert first.status is TrialStatus.COMPLETED
    assert [m.model_dump() for m in first.history] == [m.model_dump() for m in second.history]
    assert first.final.domain_gain > 0


def test_activation_checkpointing_recomputes_what_it_does_not_keep_and_changes_no_number(prepared, tmp_path):
    config = prepared.trial_config(lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path / "kept")
    recomputed = config.model_copy(update={"activation_checkpointing": True, "output_dir": str(tmp_path / "again")})
    assert _run(recomputed).history == _run(config).history


def test_another_seed_trains_otherwise_on_the_same_validation_sets(prepared, tmp_path):
    mix = MixRatio(1, 1)
    default = prepared.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "default")
    assert default.seed == default.proxy.seed  # a main trial's seed, also in configs written before it existed
    legacy = default.model_dump(mode="json")
    del legacy["seed"]
    assert TrialConfig.model_validate(legacy) == default

    other = prepared.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "other", seed=default.seed + 1)
    first, second = _run(default), _run(other)
    assert [m.step for m in first.history] == [m.step for m in second.history]
    assert all(a.domain_loss != b.domain_loss for a, b in zip(first.history, second.history))
    assert first.final.general_loss != second.final.general_loss
    assert first.figures.general_loss != second.figures.general_loss
    # the same text: the same documents, measured by two models
    assert first.figures.documents.general.tokens == second.figures.documents.general.tokens
    # Both are measured on the sweep's validation texts: barely trained (a 1e-12 peak LR), a trial of either seed
    # reads the base's own losses on the interim windows and on the pool, which the corpus alone fixes.
    for config in (default, other):
        still = config.model_copy(update={"max_lr": 1e-12, "output_dir": f"{config.output_dir}-still"})
        barely = _run(still, report=lambda metrics: True)
        assert barely.history[0].domain_loss == pytest.approx(prepared.interim_base.domain_loss, rel=1e-6)
        assert barely.history[0].general_loss == pytest.approx(prepared.interim_base.general_loss, rel=1e-6)
        assert barely.figures.general_loss == pytest.approx(prepared.base_losses[0].general_loss, rel=1e-6)
    assert TRIAL_CONFIG.read(tmp_path / "other" / "trial_config.json", TrialConfig).seed == other.seed


def test_forgetting_and_gain_rise_with_lr_fraction(prepared, tmp_path):
    finals = [
        _run(prepared.trial_config(lr_fraction=f, mix=MixRatio(1, 4), output_dir=tmp_path / str(f))).final
        for f in (0.05, 0.1, 0.2)
    ]
    forgetting = [m.forgetting for m in finals]
    gain = [m.domain_gain for m in finals]
    assert forgetting[0] < forgetting[1] < forgetting[2], forgetting
    assert forgetting[2] - forgetting[0] > 0.005, f"no real trend: {forgetting}"
    assert gain[0] < gain[1] < gain[2], gain


def test_more_domain_share_forgets_more(prepared, tmp_path):
    finals = [
        _run(prepared.trial_config(lr_fraction=0.2, mix=MixRatio.parse(mix), output_dir=tmp_path / mix)).final
        for mix in ("4:1", "1:4")
    ]
    assert finals[0].forgetting < finals[1].forgetting
    assert finals[0].domain_gain < finals[1].domain_gain


def test_absurd_lr_ends_as_diverged(prepared, tmp_path):
    config = prepared.trial_config(lr_fraction=1.0, mix=MixRatio(1, 1), output_dir=tmp_path)
    result = _run(config.model_copy(update={"max_lr": 50.0}))
    assert result.status is TrialStatus.DIVERGED
    assert "loss" in result.reason and result.steps < config.proxy.steps


def test_report_returning_true_stops_the_trial(prepared, tmp_path):
    seen: list[Metrics] = []
    config = prepared.trial_config(lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path)
    result = _run(config, report=lambda metrics: seen.append(metrics) or True)
    assert result.status is TrialStatus.STOPPED
    assert result.steps == config.proxy.eval_interval == seen[0].step
    assert len(seen) == 1 and result.history == seen


def test_trial_writes_its_resolved_config(prepared, tmp_path):
    config = prepared.trial_config(lr_fraction=0.1, mix=MixRatio(2, 1), output_dir=tmp_path)
    _run(config)
    written = TRIAL_CONFIG.read(tmp_path / "trial_config.json", TrialConfig)
    assert written == config and written.peak_lr == pytest.approx(0.1 * config.max_lr)


def test_hf_directory_base_runs_the_same_as_the_builtin(prepared, write_tiny_spec, tmp_path):
    hf_dir = tmp_path / "hf-base"
    AutoModelForCausalLM.from_pretrained(prepared.base_dir).save_pretrained(hf_dir)
    AutoTokenizer.from_pretrained(prepared.tokenizer_dir).save_pretrained(hf_dir)
    spec_path = write_tiny_spec("hf-base.yaml", base={"model": str(hf_dir), "max_lr": 3.0e-3, "builtin": None})
    raw = yaml.safe_load(spec_path.read_text())
    del raw["base"]["builtin"]
    spec_path.write_text(yaml.safe_dump(raw))

    from_dir = prepare(load_spec(spec_path))
    assert from_dir.base_dir == hf_dir
    assert from_dir.base_losses == prepared.base_losses
    mix = MixRatio(1, 1)
    builtin = _run(prepared.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "builtin"))
    hf = _run(from_dir.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "hf"))
    assert [m.model_dump() for m in hf.history] == [m.model_dump() for m in builtin.history]


def test_cli_trial_prints_gain_and_forgetting(tiny_spec, tmp_path, capsys):
    assert main(["trial", str(tiny_spec), "--lr-fraction", "0.1", "--mix", "1:1", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "domain_gain = +" in out and "forgetting = " in out
    assert (tmp_path / "result.json").is_file()


def test_a_compressed_corpus_under_another_key_trains_the_same_as_the_plain_one(prepared, write_tiny_spec, tmp_path):
    import gzip
    import json

    spec = load_spec(write_tiny_spec())
    rekeyed = tmp_path / "listings.jsonl.gz"
    with gzip.open(rekeyed, "wt", encoding="utf-8") as out:
        for line in spec.data.domain.train[0].read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            out.write(json.dumps({"content": record.pop("text"), **record}) + "\n")
    domain = {"train": str(rekeyed), "valid": str(spec.data.domain.valid[0]), "text_field": "content"}
    # The valid file keeps "text": a text_field of "content" would find no document there.
    with pytest.raises(CorpusError, match=r'valid.jsonl: no usable documents .* without a string "content"'):
        prepare(load_spec(write_tiny_spec("content-both.yaml", data={"domain": domain})))

    valid = tmp_path / "valid.jsonl.gz"
    with gzip.open(valid, "wt", encoding="utf-8") as out:
        for line in spec.data.domain.valid[0].read_text(encoding="utf-8").splitlines():
            out.write(json.dumps({"content": json.loads(line)["text"]}) + "\n")
    rekeyed_spec = write_tiny_spec("content.yaml", data={"domain": {**domain, "valid": str(valid)}})
    from_rekeyed = prepare(load_spec(rekeyed_spec))
    # The same text, compressed: the same documents, tokens and skips, in fewer stored bytes.
    rekeyed_stats, plain_stats = from_rekeyed.corpus_stats["domain.train"], prepared.corpus_stats["domain.train"]
    assert dataclasses.replace(rekeyed_stats, corpus_bytes=0, sampled_bytes=0) == dataclasses.replace(
        plain_stats, corpus_bytes=0, sampled_bytes=0
    )
    assert from_rekeyed.base_losses == prepared.base_losses
    mix = MixRatio(1, 4)
    plain = _run(prepared.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "plain"))
    rekeyed_run = _run(from_rekeyed.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "rekeyed"))
    assert [m.model_dump() for m in rekeyed_run.history] == [m.model_dump() for m in plain.history]


def megatron_spec(prepared, write_tiny_spec, name: str, *, tokenizer) -> Prepared:
    """The tiny spec with each corpus given as the Megatron prefix `prepared` tokenised it into."""
    data = {
        side: {
            "train": getattr(prepared.train, side),
            "valid": getattr(prepared.valid, side),
            "tokenizer": str(tokenizer),
        }
        for side in ("domain", "general", "non_english")
    }
    data["non_english"]["share"] = 0.1
    return load_spec(write_tiny_spec(name, data=data, base={"tokenizer": str(prepared.tokenizer_dir)}))


def test_a_spec_of_megatron_prefixes_is_read_as_it_is_and_trains_the_same(prepared, write_tiny_spec, tmp_path):
    spec = megatron_spec(prepared, write_tiny_spec, "megatron.yaml", tokenizer=prepared.tokenizer_dir)

    from_prefixes = prepare(spec)

    # Read in place: no tokenising, no copy (the tiny prefixes are smaller than their samples).
    assert (from_prefixes.train, from_prefixes.valid) == (prepared.train, prepared.valid)
    assert from_prefixes.corpus_stats["domain.train"].tokens == prepared.corpus_stats["domain.train"].tokens
    assert from_prefixes.base_losses == prepared.base_losses
    mix = MixRatio(1, 1)
    text = _run(prepared.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "text"))
    prefixes = _run(from_prefixes.trial_config(lr_fraction=0.1, mix=mix, output_dir=tmp_path / "prefixes"))
    assert [m.model_dump() for m in prefixes.history] == [m.model_dump() for m in text.history]


def test_prefixes_of_another_tokenizer_are_exit_2_naming_both(prepared, write_tiny_spec, tiny_corpora, capsys):
    other = train_bpe([Corpus.of(tiny_corpora / "corpora" / "general_en" / "train.jsonl")], 300, tiny_corpora / "bpe")
    spec = megatron_spec(prepared, write_tiny_spec, "megatron-other.yaml", tokenizer=other)
    path = tiny_corpora / "megatron-other.yaml"

    assert main(["trial", str(path), "--lr-fraction", "0.1", "--mix", "1:1"]) == 2

    error = capsys.readouterr().err
    assert f"made by tokenizer {other}" in error and f"base's tokenizer {spec.base.tokenizer}" in error


def test_a_trial_is_measured_on_the_pool_document_by_document_and_a_confirmation_trial_on_its_draw(
    write_tiny_spec, tmp_path
):
    spec = load_spec(write_tiny_spec("draws.yaml", search={"confirmation": {"seeds": 1, "candidates": 1}}))
    prepared = prepare(spec)
    assert len(prepared.texts) == 2  # the pool, and the draw of the one confirmation candidate
    pool, draw = prepared.base_losses
    assert pool.documents.domain.documents == 20 and draw.documents.domain.documents == 20  # 40 dealt by count
    assert pool.domain_loss != draw.domain_loss  # two texts, two base losses

    search = prepared.trial_config(lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path / "pool")
    confirming = prepared.trial_config(lr_fraction=1e-9, mix=MixRatio(1, 1), output_dir=tmp_path / "draw", valid_draw=1)
    measured = _run(search)
    barely = _run(confirming, report=lambda metrics: True)  # barely trained: it reads the base's losses

    assert measured.figures.text == "pool" and barely.figures.text == "draw 1"
    assert confirming.valid == search.valid == prepared.texts[0] and confirming.draw_valid == prepared.texts[1]
    # every evaluation on the pool's interim windows, against the base's there; the figures on the whole text
    assert barely.history[0].domain_loss == pytest.approx(prepared.interim_base.domain_loss, rel=1e-6)
    assert barely.figures.domain_loss == pytest.approx(draw.domain_loss, rel=1e-6)
    assert measured.figures.documents.domain.tokens == pool.documents.domain.tokens
    assert len(measured.documents) == len(measured.history)  # each evaluation's losses, document by document
    assert measured.documents[-1].domain.documents == spec.proxy.eval_sequences  # one window of each of 16 documents
    assert measured.figures.domain_loss == pytest.approx(measured.figures.documents.domain.loss, rel=1e-12)
    error = measured.text_error
    assert error is not None and error.documents == {"domain": 20, "general": 13} and error.forgetting > 0.0


def test_a_prefix_labelled_float32_is_exit_2_at_sweep_base_before_any_base_is_built(
    prepared, write_tiny_spec, tiny_corpora, tmp_path, capsys
):
    """An int32 prefix whose index says float32 passed `sweep base` (only its largest id was checked) and crashed
    the trial casting floats to token ids."""
    megatron_spec(prepared, write_tiny_spec, "megatron-float.yaml", tokenizer=prepared.tokenizer_dir)
    from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder

    labelled = tmp_path / "domain_text_document"
    source, builder = IndexedDataset(prepared.train.domain), IndexedDatasetBuilder(f"{labelled}.bin", dtype=np.int32)
    for i in range(len(source)):
        builder.add_document(source[i].astype(np.int32), [len(source[i])])
    builder.finalize(f"{labelled}.idx")
    index = bytearray(Path(f"{labelled}.idx").read_bytes())
    index[17] = 7  # megatron-core's DType code of float32
    Path(f"{labelled}.idx").write_bytes(bytes(index))
    raw = yaml.safe_load((tiny_corpora / "megatron-float.yaml").read_text())
    raw["data"]["domain"]["train"] = str(labelled)
    path = tmp_path / "float.yaml"
    path.write_text(yaml.safe_dump(raw))

    assert main(["base", str(path)]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{labelled}.idx: its tokens are stored as float32, not integer token ids" in line
