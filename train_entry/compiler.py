"""Whether torch.compile can build a kernel on this node: the preflight of everything we compile (megatron-core's
fused kernels in the full run, a proxy trial's layers under execution.compile).

Inductor generates Triton kernels on CUDA and C++ on CPU; both need a C compiler and Python's headers on the node, and
an image without them fails in the first forward pass, deep inside Inductor. The preflight compiles one tiny function
on the run's device, outside any cache, and says in one line why it could not.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def compile_failure(device: torch.device) -> str | None:
    """None when a torch.compile'd SwiGLU (a fusion of the kind megatron-core and a compiled layer build) builds and
    runs on `device`; else why not, in one line."""

    def swiglu(x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up

    try:
        # Past every cache: a kernel compiled on another node or earlier says nothing of this node's compiler.
        with torch._inductor.config.patch(force_disable_caches=True):
            torch.compile(swiglu, fullgraph=True, dynamic=False)(torch.randn(4, 16, device=device))
    except Exception as error:  # noqa: BLE001 - whatever stops the compile (Inductor, Triton, the C compiler) means "unfused"
        return f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else 'no message'}"
    finally:
        torch._dynamo.reset()
    return None
