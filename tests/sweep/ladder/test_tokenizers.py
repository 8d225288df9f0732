"""A ladder's rungs share one tokenizer: rungs of two (a vocabulary of another size, another vocabulary, or the same
vocabulary splitting text otherwise) are refused naming the rung, before anything is written. The family's bases are
the Qwen2.5 stand-ins of test_gpus.py, each given a small byte-level BPE."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from cli import main
from sweep.ladder.rungs import rung_specs
from sweep.ladder.tokenizers import PROBE, TokenizersDiffer, check_one_tokenizer
from sweep.spec.spec import load_spec
from tests.hf_dirs import qwen_family_dirs
from tests.sweep.ladder.test_gpus import SHARE, family_spec

TEXT = ["the price of the listing is 12 euros, shipped in two days", "def loss(x): return x / 2 - 1", PROBE] * 50
NAMES = ["Qwen2.5-0.5B", "Qwen2.5-1.5B", "Qwen2.5-3B", "Qwen2.5-7B"]


def save_bpe(directory: Path, *, vocab_size: int = 300) -> Path:
    """A byte-level BPE trained on TEXT."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    bpe.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=alphabet,
                                                       special_tokens=["<eod>"]))  # fmt: skip
    PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eod>").save_pretrained(directory)
    return directory


def without_first_merge(source: Path, directory: Path) -> Path:
    """`source`'s tokenizer less its first BPE merge: the same vocabulary, other tokens for text that merge joins."""
    shutil.copytree(source, directory)
    raw = json.loads((directory / "tokenizer.json").read_text())
    raw["model"]["merges"] = raw["model"]["merges"][1:]
    (directory / "tokenizer.json").write_text(json.dumps(raw))
    return directory


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tokenizers")
    family = save_bpe(root / "family")
    return {
        "family": family,
        "larger": save_bpe(root / "larger", vocab_size=320),
        "merges": without_first_merge(family, root / "merges"),
    }


def ladder_of(tmp_path: Path, tokenizers: dict[str, Path], last: str) -> Path:
    """The shipped family ladder whose first three rungs hold the family's tokenizer and the last `last`."""
    family = qwen_family_dirs(tmp_path / "models")
    for name, kind in zip(NAMES, ["family"] * 3 + [last]):
        shutil.copytree(tokenizers[kind], family / name, dirs_exist_ok=True)
    return family_spec(tmp_path, family)


def test_rungs_of_one_family_share_their_tokenizer(tmp_path, tokenizers):
    check_one_tokenizer(rung_specs(load_spec(ladder_of(tmp_path, tokenizers, "family")), SHARE))


@pytest.mark.parametrize(
    ("last", "how"),
    [
        ("larger", "has a vocabulary of 321 tokens where rung Qwen2.5-0.5B's has 301"),
        ("merges", "has the vocabulary of rung Qwen2.5-0.5B's but splits a probe text into other tokens"),
    ],
)
def test_a_rung_of_another_tokenizer_is_refused_naming_it(tmp_path, tokenizers, last, how):
    rungs = rung_specs(load_spec(ladder_of(tmp_path, tokenizers, last)), SHARE)
    with pytest.raises(TokenizersDiffer) as refused:
        check_one_tokenizer(rungs)
    message = str(refused.value)
    assert message.startswith(f"ladder rung Qwen2.5-7B: its tokenizer ({tmp_path}/models/Qwen2.5-7B) {how} (")
    assert message.endswith("which needs one tokenizer: build the ladder from one model family")


def test_sweep_run_of_a_ladder_of_two_tokenizers_stops_before_anything_is_written(
    tmp_path, tokenizers, monkeypatch, capsys
):
    path = ladder_of(tmp_path, tokenizers, "larger")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CPT_SWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("sweep.run.driver.local_gpus", lambda: 8)  # the node of eight GPUs the shipped spec plans for

    assert main(["run", str(path)]) == 2

    assert capsys.readouterr().err.startswith("error: ladder rung Qwen2.5-7B: its tokenizer (")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()
