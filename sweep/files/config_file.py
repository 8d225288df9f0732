"""A YAML config file (a spec, a promotion request, a target or cluster) read onto its typed model.

Every error names the file, the key path as the user wrote it, the bad value (shortened, passwords
masked) and what would be valid; one problem is one line. Relative paths in the file resolve
against the file's own folder, so a file means the same thing from any working directory.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError, ValidationInfo

from sweep.files.storage_url import quoted
from sweep.files.yaml_file import YamlFileError, read_yaml

Config = TypeVar("Config", bound=BaseModel)

MAX_PROBLEMS_SHOWN = 20
"""A file with more problems than this is not one fix away: the first ones say what is wrong."""
_SHAPE_ERRORS = {"list_type", "dict_type", "model_type", "model_attributes_type"}


class SpecError(ValueError):
    """A spec (or another config file) that cannot be used; the message names the file, key path,
    value and what is valid."""


def load_config(path: str | Path, model: type[Config], *, kind: str = "spec", raw: Any = None) -> Config:
    """Reads a YAML file onto `model`; SpecError naming the file, key path and value.

    `raw` is the file's content when the caller has read (and upgraded) it already.
    """
    path = Path(path)
    if raw is None:
        raw = read_raw(path, kind=kind)
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a {kind} is a mapping with keys {', '.join(model.model_fields)}")
    try:
        return model.model_validate(raw, context={"root": path.resolve().parent})
    except ValidationError as exc:
        raise SpecError(describe(path, exc, model, kind)) from None


def read_raw(path: Path, *, kind: str) -> Any:
    try:
        return read_yaml(path, kind=kind)
    except YamlFileError as exc:
        raise SpecError(str(exc)) from None


def resolve_path(path: Path, info: ValidationInfo) -> Path:
    """A path from a config file: relative ones against the file's folder (the validation context's root)."""
    root = (info.context or {}).get("root")
    path = path.expanduser()
    if not path.is_absolute() and root is not None:
        path = Path(root) / path
    return path.resolve()


def describe(path: Path, exc: ValidationError, model: type[BaseModel], kind: str) -> str:
    return describe_errors(path, exc.errors(include_url=False), model, kind)


def describe_errors(path: Path, errors: list[Any], model: type[BaseModel], kind: str) -> str:
    """`errors` (pydantic's, of validating `path` as `model`) in lines naming the key path, value and what is valid."""
    keys = [".".join(_walk(error["loc"], model)[0]) for error in errors]
    # A union (range or list) reports a shape error for each member it did not match; when a
    # member did match the shape, its own errors are the ones worth reading.
    keep = [
        (key, error)
        for key, error in zip(keys, errors)
        if error["type"] not in _SHAPE_ERRORS or not any(k != key and k.startswith(key) for k in keys)
    ]
    problems = []
    for key, error in keep[:MAX_PROBLEMS_SHOWN]:
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            parent = _walk(error["loc"][:-1], model)[1]
            valid = list(parent.model_fields) if isinstance(parent, type) else []
            message = f"unknown key; valid keys here: {', '.join(valid)}"
        elif error["type"] == "missing":
            message = "required key is missing"
        value = error.get("input")
        if error["type"] == "union_tag_invalid":  # a `type:` that names no member of the union
            key, value = f"{key}.type", error["ctx"]["tag"]
            message = f"valid types: {error['ctx']['expected_tags']}"
        given = "" if error["type"] == "missing" or isinstance(value, dict) else f" = {quoted(value)}"
        problems.append(f"{key or '(top level)'}{given}: {message}")
    if len(problems) == 1:  # one problem, one line
        return f"{path}: {problems[0]}"
    more = [f"... and {len(keep) - MAX_PROBLEMS_SHOWN} more"] if len(keep) > MAX_PROBLEMS_SHOWN else []
    return "\n  ".join([f"{path}: {len(keep)} problem(s) in the {kind}:", *problems, *more])


def _walk(loc: tuple, root: type[BaseModel]) -> tuple[list[str], Any]:
    """The key path as written in the file, and the model (or union of models) it leads to.

    pydantic puts union members into the location (a tag such as "median", or a type name such as
    "LRFractionRange" or "list[...]"); they are not keys, so they are left out, and the member they
    name is where the walk continues.
    """
    keys: list[str] = []
    current: Any = root
    for part in loc:
        if isinstance(part, int):  # a list index: the list's items are still `current`
            keys.append(str(part))
        elif isinstance(current, type) and part in current.model_fields:
            keys.append(part)
            current = _field_models(current.model_fields[part].annotation)
        elif current is not None and (part[:1].isupper() or "[" in part or _member(current, part) is not None):
            current = _member(current, part) or current
        else:
            keys.append(part)
            current = None
    return keys, current


def _member(model: Any, tag: str) -> type[BaseModel] | None:
    """The union member a location part names: by its `type` tag or its class name."""
    for candidate in _models_in(model):
        type_field = candidate.model_fields.get("type")
        tag_value = typing.get_args(type_field.annotation)[0] if type_field is not None else None
        if tag in (tag_value, candidate.__name__):
            return candidate
    return None


def _field_models(annotation: Any) -> Any:
    """The model a field holds, or the union of models it may hold (kept as the annotation)."""
    models = _models_in(annotation)
    if len(models) == 1:
        return models[0]
    return annotation if models else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def one_line(error: Exception) -> str:
    """A check's error in one line: pydantic's multi-line dump becomes the first problem's key path and message."""
    if not isinstance(error, ValidationError):
        return str(error)
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in (error.title, *first["loc"]))
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg'].removeprefix('Value error, ')}{more}"
