"""Targets: the model a plan trains at full scale (its shape) and the base's own pretraining peak LR.

A target is a preset, a target YAML file, or a Hugging Face model directory whose config.json is read through its
family (sweep/target/families/; no weights read, no code run). The presets are the families' own, each in its
family's module with its sources; a preset without a published peak LR leaves max_lr unset and a plan asks for
--max-lr.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from sweep.files.config_file import one_line
from sweep.target.errors import TargetError
from sweep.target.families.registry import PRESETS, hf_shape, is_model_dir
from sweep.target.presets import MAX_NAME, check_value, preset_or_file
from sweep.target.target import Target

TARGET_FORMS = (
    f"a preset ({', '.join(PRESETS)}), a target YAML file (the fields of sweep/target/target.py), or a "
    "Hugging Face model directory (its config.json only: no weights read, no code run)"
)
"""What a target may be, as `sweep promote --help` and the error without one say it."""


def load_target(name_or_path: str, *, max_lr: float | None = None, pretrain_tokens: float | None = None) -> Target:
    """A preset by name, a Hugging Face model directory (its config.json through its family), or a target YAML
    file (keys: the fields of Target); max_lr and pretrain_tokens, when given, in place of the target's own."""
    if name_or_path not in PRESETS and is_model_dir(check_value(name_or_path, kind="target")):
        model, family = hf_shape(Path(name_or_path))
        name = re.sub(r"[^A-Za-z0-9._-]", "-", Path(name_or_path).resolve().name).lstrip("._-")
        name = name[:MAX_NAME] or "hf-target"
        source = f"{Path(name_or_path) / 'config.json'} read as {family.name}"
        target = Target(name=name, model=model, source=source)
    elif Path(name_or_path).is_dir():
        raise TargetError(
            f"target {name_or_path} is a directory without a config.json; a Hugging Face model directory holds one"
        )
    else:
        target = preset_or_file(name_or_path, PRESETS, Target, kind="target")
    given = {key: value for key, value in (("max_lr", max_lr), ("pretrain_tokens", pretrain_tokens)) if value}
    try:
        return target.model_validate({**target.model_dump(), **given}) if given else target
    except ValidationError as error:
        raise TargetError(f"target {target.name}: {one_line(error)}") from None
