"""Settings: one frozen dataclass per concern, each with its own environment prefix.

Precedence is command line > environment > defaults. Nothing reads the environment at
import time or after start-up: ``load`` is called once, with the environment passed in,
and the objects it builds are handed to whoever needs them. A value that cannot be
understood is a ``SettingsError`` naming the variable and what it accepts.

Why not pydantic-settings: its settings classes read ``os.environ`` whenever one is
built unless each overrides its sources, and tests and the demo build them freely;
this loader reads only the mapping it is given, and is the sixty lines below.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from openrl_inspect.core.errors import SettingsError

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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


class InvalidSetting(SettingsError):
    """A settings class refusing one field's value (from its ``__post_init__``); ``load``
    names the variable or flag the value came from."""

    def __init__(self, name: str, accepts: str, value: object) -> None:
        super().__init__(f"{name}: expected {accepts}, got {value!r}")
        self.name = name
        self.accepts = accepts
        self.value = value


def check_url(name: str, value: str | None, schemes: tuple[str, ...]) -> None:
    """Refuse a URL that does not parse or is not of one of ``schemes``."""
    if value is None:
        return
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  # parsing the port is what refuses a bad one
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in schemes or not (parts.netloc or parts.path):
        accepts = "a URL starting " + " or ".join(f"{s}://" for s in schemes)
        raise InvalidSetting(name, accepts, value)


def load(
    cls: type[T],
    prefix: str,
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> T:
    """Build ``cls`` from defaults, then ``PREFIX_FIELD`` variables, then ``overrides``.

    ``overrides`` holds command-line values (a ``None`` there means "not given"), which
    win: a variable they override is not even read. Every number must be finite and not
    negative (each is a count, a size or seconds). A refused value is one
    ``SettingsError`` naming its variable, or its flag from ``flags`` (field -> flag).
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for each in dataclasses.fields(cls):
        env_name = f"{prefix}{each.name.upper()}"
        given = overrides.get(each.name) if overrides is not None else None
        if given is not None:
            values[each.name] = given
            sources[each.name] = (flags or {}).get(each.name, f"--{each.name.replace('_', '-')}")
        elif env_name in environ:
            values[each.name] = _coerce(env_name, environ[env_name], hints[each.name])
            sources[each.name] = env_name
        _check_number(sources.get(each.name, env_name), values.get(each.name))
    try:
        return cls(**values)
    except InvalidSetting as exc:
        source = sources.get(exc.name, f"{prefix}{exc.name.upper()}")
        raise SettingsError(f"{source}: expected {exc.accepts}, got {exc.value!r}") from None


def _check_number(source: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if not math.isfinite(value) or value < 0:
        raise SettingsError(f"{source}: expected a number of at least 0, got {value!r}")


@dataclass(frozen=True)
class Bounds:
    """What one request may ask for. Env prefix ``OPENRL_INSPECT_LIMITS_``."""

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
    # A query whose node cost (its pages and its computed work: execution.cost) reaches
    # this is expensive: at most max_expensive_requests of them run at once; another
    # waits up to busy_wait_s, then is answered BUSY.
    expensive_nodes: int = 20_000
    max_expensive_requests: int = 2
    # Of those, how many one principal may hold at once (its next is BUSY at once).
    max_expensive_per_principal: int = 1
    busy_wait_s: float = 2.0


@dataclass(frozen=True)
class Thresholds:
    """How the diagnosis judges what it reads. Env prefix ``OPENRL_INSPECT_JUDGEMENT_``."""

    # An op whose worker has not heartbeat for this long is lost.
    heartbeat_stale_s: float = 30.0
    # An op running longer than this on a live worker is stuck.
    stuck_after_s: float = 600.0
    # Attention also judges the live models that keep moving: those with an op failed
    # within this many seconds, and those whose newest steps take more than this many
    # times their earlier ones (the recorder's failing and pace indexes).
    failing_within_s: float = 3_600.0
    slow_pace_ratio: float = 1.5


#: ``serve``'s freshness window: dashboards poll the same pages every few seconds, and an
#: answer at most this old serves them all (docs/benchmarks.md, "Fifty pollers").
SERVE_FRESH_FOR_S = 2.0


@dataclass(frozen=True)
class Switches:
    """How documents run and which features are on. Env prefix ``OPENRL_INSPECT_``."""

    # Identical queries (same principal, document, operation and variables) that arrive
    # while one of them runs wait for its result instead of running again. Never a
    # cache: a query after the result runs anew, unless ``fresh_for_s`` says otherwise.
    single_flight: bool = True
    # With single flight: an answer also serves identical queries arriving within this
    # many seconds after it (polls of one page from many dashboards). 0: off. ``serve``
    # starts with SERVE_FRESH_FOR_S unless told otherwise.
    fresh_for_s: float = 0.0
    # Off: introspection queries are refused and errors carry no "Did you mean" hints
    # (GraphiQL's schema explorer needs it on).
    introspection: bool = True
    # Only the documents the server ships (the dashboard's, the REST routes' and MCP
    # tools'), by text or by persisted-query hash.
    registered_only: bool = False
    # "plan": each document compiled once into a plan run level by level
    # (``execution.plan``); "stock": graphql-core's and Strawberry's per-field path.
    execution: str = "plan"

    def __post_init__(self) -> None:
        if self.execution not in ("plan", "stock"):
            raise SettingsError(
                f"OPENRL_INSPECT_EXECUTION: expected 'plan' or 'stock', got {self.execution!r}"
            )


@dataclass(frozen=True)
class Secrets:
    """Keys the inspector holds. Env prefix ``OPENRL_INSPECT_``."""

    # Seals a viewer's cursors (AES-GCM). Replicas share it so that a cursor outlives
    # the replica that made it; unset, each process draws its own.
    cursor_key: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Settings:
    """The inspector's own settings, by concern (each backend has its own elsewhere)."""

    bounds: Bounds = field(default_factory=Bounds)
    thresholds: Thresholds = field(default_factory=Thresholds)
    switches: Switches = field(default_factory=Switches)
    secrets: Secrets = field(default_factory=Secrets)

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str],
        overrides: Mapping[str, Any] | None = None,
        flags: Mapping[str, str] | None = None,
    ) -> Settings:
        """Each concern from its variables; ``overrides`` (the command line) by field
        name, ``flags`` the command line's names for them."""
        given = overrides or {}
        return cls(
            bounds=load(Bounds, "OPENRL_INSPECT_LIMITS_", environ, given, flags),
            thresholds=load(Thresholds, "OPENRL_INSPECT_JUDGEMENT_", environ, given, flags),
            switches=load(Switches, "OPENRL_INSPECT_", environ, given, flags),
            secrets=load(Secrets, "OPENRL_INSPECT_", environ, given, flags),
        )
