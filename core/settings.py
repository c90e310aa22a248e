"""Settings: one dataclass per concern, each with its own environment prefix.

Precedence is command line > environment > defaults. Nothing reads the environment at
import time: ``load`` is called once at start-up with the environment passed in.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for. Env prefix ``OPENRL_INSPECT_LIMITS_``."""

    default_page_size: int = 20
    max_page_size: int = 100
    # Product of page sizes down the nested connections of one query.
    max_nodes: int = 250_000
    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 4000
    # Field selections once fragments are expanded (fragment spreads under many fields).
    max_fields: int = 2000
    # Seconds one GraphQL request may run before it is cancelled (DEADLINE_EXCEEDED);
    # 0 turns the deadline off.
    request_deadline_s: float = 30.0
    # A query whose node cost reaches this is expensive: at most max_expensive_requests
    # of them run at once; another waits up to busy_wait_s, then is answered BUSY.
    expensive_nodes: int = 10_000
    max_expensive_requests: int = 2
    busy_wait_s: float = 2.0
    # Identical queries (same principal, document, operation and variables) that arrive
    # while one of them runs wait for its result instead of running again
    # (``single_flight``). Never a cache: a query after the result runs anew.
    single_flight: bool = True
    # With single flight: an answer also serves identical queries arriving within this
    # many seconds after it (polls of one page from many dashboards). 0: off, every
    # query after an answer runs anew.
    fresh_for_s: float = 0.0
    # Off: introspection queries are refused and errors carry no "Did you mean" hints
    # (GraphiQL's schema explorer needs it on).
    introspection: bool = True
    # Only the documents the server ships (the dashboard's, the REST routes' and MCP
    # tools'), by text or by persisted-query hash (``engine.persisted``).
    registered_only: bool = False
    # An op whose worker has not heartbeat for this long is lost.
    heartbeat_stale_s: float = 30.0
    # An op running longer than this on a live worker is stuck.
    stuck_after_s: float = 600.0
    # Summaries read a model's rollup (one read) where the recorder kept one; off: they
    # scan every op of the steps summarised, as before rollups (for comparisons).
    use_rollups: bool = True
    # "fast": plain fields are read and serialised by the schema's own executor
    # (``schema.fast``); "stock": graphql-core's and Strawberry's per-field path for
    # every field. Both answer byte for byte alike (tests/api/test_fast_execution.py).
    # Set by ``OPENRL_INSPECT_EXECUTION`` (``server.Runtime``).
    execution: str = "fast"
