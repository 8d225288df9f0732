"""Whether megatron-core's torch.compile'd fused kernels can run on this node: a preflight, asked once per process.

Without Transformer Engine the entry turns on megatron-core's own SwiGLU, residual-add and
cross-entropy fusions, which megatron.core.jit compiles with torch.compile. On CUDA that generates
Triton kernels, which need a C compiler and Python's headers on the node; an image without them
would fail in the first forward pass, deep inside Inductor. The preflight (train_entry.compiler)
compiles one tiny function of the same kind on the run's device, outside any cache; when that fails, the run uses
megatron-core's unfused code instead, and says so once. CPT_SWEEP_FUSIONS=off skips the preflight
and runs unfused (the switch for a node known to lack a compiler).
"""

from __future__ import annotations

import functools
import os
import warnings

import torch

from train_entry.compiler import compile_failure

FUSIONS_ENV = "CPT_SWEEP_FUSIONS"
SETTINGS = ("auto", "off")


@functools.cache
def fusions_usable(device_type: str) -> bool:
    """Whether to turn megatron-core's compiled fusions on for a run on `device_type` ("cuda", "cpu").

    auto (the default): when the preflight compiles, else False with a warning naming why; off: False.
    """
    setting = os.environ.get(FUSIONS_ENV, "auto")
    if setting not in SETTINGS:
        raise ValueError(f"{FUSIONS_ENV} must be one of {', '.join(SETTINGS)}, got {setting!r}")
    if setting == "off":
        return False
    failure = compile_failure(torch.device(device_type))
    if failure is not None:
        warnings.warn(
            f"megatron-core's fused kernels are off (slower, same results): torch.compile cannot build a kernel on "
            f"{device_type} here ({failure}); install a C compiler and Python's headers, or set {FUSIONS_ENV}=off",
            stacklevel=2,
        )
    return failure is None
