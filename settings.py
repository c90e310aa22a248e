"""Settings: one dataclass per concern, each with its own environment prefix.

Precedence is command line > environment > defaults. Nothing reads the environment at
import time: ``load`` is called once at start-up with the environment passed in.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class SettingsError(ValueError):
    """A setting's value could not be understood; the message names the variable."""


def _coerce(name: str, raw: str, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if raw == "":
            return None
        return _coerce(name, raw, args[0])
    if annotation is bool:
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise SettingsError(f"{name}: expected a boolean, got {raw!r}")
    if annotation in (int, float):
        try:
            return annotation(raw)
        except ValueError:
            raise SettingsError(f"{name}: expected a number, got {raw!r}") from None
    if origin is tuple:
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    return raw


def load(
    cls: type[T],
    prefix: str,
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
) -> T:
    """Build ``cls`` from defaults, then ``PREFIX_FIELD`` variables, then ``overrides``.

    ``overrides`` holds command-line values; a ``None`` there means "not given".
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        env_name = f"{prefix}{field.name.upper()}"
        if env_name in environ:
            values[field.name] = _coerce(env_name, environ[env_name], hints[field.name])
        if overrides is not None and overrides.get(field.name) is not None:
            values[field.name] = overrides[field.name]
    return cls(**values)
