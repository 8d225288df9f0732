"""A promotion as data: what `sweep promote plan | submit | rehearse` asks for, built once from the
command line (or from Python) and handed whole to `sweep.promote.launch.promotion`."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from sweep.address import ClusterAddress, parse_address
from sweep.promote.request.config import PromotionConfig
from train_entry.config import StrictConfig

DEFAULT_MAX_FAILURES = 10
"""Worker-group restarts Ray Train allows: a month on 480 GPUs sees several node failures."""


class Submission(StrictConfig):
    """Submit the plan's full run as a Ray job, once per plan."""

    address: str
    """The cluster's Jobs API (its dashboard), e.g. http://127.0.0.1:8265; loopback only unless allow_remote."""
    allow_remote: bool = False
    """Accept a non-loopback address (use https or Ray's token authentication)."""
    force: bool = False
    """Submit a new attempt even when the cluster already has the plan's job."""
    max_failures: int = Field(DEFAULT_MAX_FAILURES, ge=0, le=10_000)
    """Worker-group restarts after a lost worker or node."""
    storage: str | None = None
    """Shared storage for Ray Train's run state, reached by every node; default <save-dir>/ray_train."""
    stop_on_forgetting: bool = False
    """Checkpoint and stop the job when the forgetting watch trips (else a warning and a W&B alert only)."""

    @model_validator(mode="after")
    def _address_allowed(self) -> Submission:
        self.cluster()  # refused (AddressError) before anything is planned or written
        return self

    def cluster(self) -> ClusterAddress:
        return parse_address(self.address, allow_remote=self.allow_remote)


class Rehearsal(StrictConfig):
    """Run the job path at toy scale on a local simulated 2-node Ray cluster (CPU)."""

    fault_drill: bool = True
    """Kill a worker node after the first checkpoint and bring up a replacement: rehearses the restore."""
    stop_on_forgetting: bool = False
    """As for a submission: checkpoint and stop the job when the forgetting watch trips."""
    overshoot_drill: bool = False
    """Hold the run to a bound every evaluation exceeds, so the watch trips at its second evaluation: rehearses the
    warning, the W&B alert and (with stop_on_forgetting) the stop."""


class PromotionRequest(StrictConfig):
    run: Path
    """A finished sweep's run directory."""
    config: PromotionConfig = PromotionConfig()
    observed: bool = False
    """Promote the best observed trial (the best feasible completed trial) instead of best.json's pick."""
    unconfirmed: bool = False
    """Promote best.json's pick although its confirmation at fresh seeds did not hold (or did not run)."""
    calibrate: bool = False
    """Time the target's layer on this machine's GPU and plan with the measured rate, not the assumed MFU."""
    launch: Submission | Rehearsal | None = None
    """After planning: submit, rehearse, or nothing (plan only)."""

    @model_validator(mode="after")
    def _one_compute_figure(self) -> PromotionRequest:
        if self.calibrate and "mfu" in self.config.assumptions.model_fields_set:
            raise ValueError("calibrate measures the compute rate that an assumed MFU states: give one of them")
        return self
