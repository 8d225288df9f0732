"""Secrets a full run needs on its workers (W&B, Hugging Face keys): they travel only in the job's
runtime environment, and are masked in anything the tool prints or writes."""

from __future__ import annotations

import os
from collections.abc import Mapping

SECRET_ENV_VARS = ("WANDB_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
"""Passed to the workers when set here; never written into plan.json, job.json, jobs.json or logs."""
MASK = "***"


def secret_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secrets set in this environment, for the job's runtime_env env_vars."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in SECRET_ENV_VARS if environ.get(name)}


def redact(text: str, secrets: Mapping[str, str]) -> str:
    """`text` with every secret value replaced by ***: for job log lines echoed to the console."""
    for value in secrets.values():
        text = text.replace(value, MASK)
    return text
