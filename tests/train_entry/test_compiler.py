"""The compile preflight: a node that cannot compile says why in one line, and a compiled trial there runs eager.

On CPU, Inductor builds with a C++ compiler, so pointing it at one that does not exist is a real compile failure of the
kind a GPU image without a C compiler meets in Triton. A successful compile takes half a minute on a 2-core machine and
is left to the GPU check, whose preflight runs it on CUDA.
"""

from __future__ import annotations

import pytest
import torch

from train_entry.compiler import compile_failure
from train_entry.model import Runtime, compiles

MISSING_COMPILER = {"cpp.cxx": ("/nonexistent/c++",)}


def test_a_node_whose_compiler_is_missing_is_told_why_in_one_line():
    with torch._inductor.config.patch(MISSING_COMPILER):
        failure = compile_failure(torch.device("cpu"))
    assert failure is not None and "\n" not in failure
    assert "/nonexistent/c++" in failure


def test_a_compiled_runtime_where_nothing_compiles_runs_eager_and_says_why_once():
    compiles.cache_clear()
    try:
        with torch._inductor.config.patch(MISSING_COMPILER):
            with pytest.warns(
                UserWarning,
                match=r"execution.compile is on, but torch.compile cannot build a kernel on cpu here \(.*/nonexistent/c\+\+",
            ):
                assert Runtime.cpu(compiled=True).compiled is False
            assert Runtime.detect(compiled=True).compiled is False  # asked once: no second warning, no second compile
    finally:
        compiles.cache_clear()


def test_a_sharded_worker_on_a_gpu_node_that_cannot_compile_runs_eager(monkeypatch):
    """The CUDA branch of Runtime, as a GPU node without a C compiler sees it (no GPU needed: nothing runs on it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr("train_entry.model.compiles", lambda device_type: device_type != "cuda")
    assert Runtime.detect(compiled=True).compiled is False
    assert Runtime.for_shard(compiled=True).compiled is False
