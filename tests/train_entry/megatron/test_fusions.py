"""The fused-kernel preflight: a node that cannot compile runs megatron-core's unfused code, and says why.

On CPU, Inductor builds with a C++ compiler, so pointing it at one that does not exist is a real
compile failure of the kind a GPU image without a C compiler meets in Triton. A successful compile
takes half a minute on a 2-core machine and is left to the GPU check, whose preflight runs it on CUDA.
"""

from __future__ import annotations

import pytest

from train_entry.megatron.config import FullRunConfig
from train_entry.megatron.core_configs import core_configs
from train_entry.megatron.fusions import FUSIONS_ENV, fusions_usable

FUSIONS = ("bias_activation_fusion", "bias_dropout_fusion", "cross_entropy_loss_fusion")


def test_the_switch_turns_the_fusions_off_without_compiling(monkeypatch):
    monkeypatch.setenv(FUSIONS_ENV, "off")
    fusions_usable.cache_clear()
    try:
        assert fusions_usable("cpu") is False
    finally:
        fusions_usable.cache_clear()


def test_an_unknown_switch_value_names_the_valid_ones(monkeypatch):
    monkeypatch.setenv(FUSIONS_ENV, "yes")
    fusions_usable.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"CPT_SWEEP_FUSIONS must be one of auto, off, got 'yes'"):
            fusions_usable("cpu")
    finally:
        fusions_usable.cache_clear()


@pytest.mark.parametrize("fusions", [True, False])
def test_the_preflights_answer_sets_megatron_cores_fusions(full_run_data, fusions):
    transformer, _, _ = core_configs(FullRunConfig.model_validate(full_run_data(tensor=8)), fusions=fusions)
    assert [getattr(transformer, name) for name in FUSIONS] == [fusions] * 3
