"""The pod-log reader's settings and the protocol the logs loader reads it through.

``PodLogSettings`` bound what one answer reads from the API server (environment
prefix ``OPENRL_INSPECT_POD_LOGS_``); ``PodLogReader`` is a ``LogSource`` that can
also read given pods instead of a model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from openrl_inspect.adapters.kubernetes._records import DNS_LABEL, ObjectKey
from openrl_inspect.adapters.logs import LogPage, LogQuery
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.settings import load

__all__ = ["ENV_PREFIX", "PodLogReader", "PodLogSettings", "load_pod_log_settings"]

ENV_PREFIX = "OPENRL_INSPECT_POD_LOGS_"


@dataclass(frozen=True, slots=True)
class PodLogSettings:
    """The pod-log reader (environment prefix ``OPENRL_INSPECT_POD_LOGS_``).

    Entry, byte and message bounds are the Cloud Logging adapter's (``bounds`` given to
    :class:`PodLogSource`); these settings bound what is read from the API server.
    ``namespace`` resolves a bare pod name in a query; ``containers`` (empty: all app
    containers) selects which containers' logs are read.
    """

    # Each read of one container's log; the whole answer gets ``timeout_s``.
    request_timeout_s: float = 10.0
    timeout_s: float = 20.0
    # Per container read: the last lines since the window's start, and at most this many
    # bytes of them.
    tail_lines: int = 2000
    limit_bytes: int = 524_288
    # Per answer: pods, container logs read, and reads at once.
    max_pods: int = 16
    max_streams: int = 16
    concurrency: int = 4
    containers: tuple[str, ...] = ()
    # Also read the previous instance of a container that restarted (its crash).
    previous: bool = True
    namespace: str | None = None

    def __post_init__(self) -> None:
        for name in (
            "request_timeout_s",
            "timeout_s",
            "tail_lines",
            "limit_bytes",
            "max_pods",
            "max_streams",
            "concurrency",
        ):
            if not getattr(self, name) > 0:
                raise SettingsError(f"{ENV_PREFIX}{name.upper()}: must be positive")
        if self.namespace is not None and not DNS_LABEL.fullmatch(self.namespace):
            raise SettingsError(f"{ENV_PREFIX}NAMESPACE: not a namespace name")
        for container in self.containers:
            if not DNS_LABEL.fullmatch(container):
                raise SettingsError(f"{ENV_PREFIX}CONTAINERS: {container[:64]!r} is not a name")


def load_pod_log_settings(
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> PodLogSettings:
    return load(PodLogSettings, ENV_PREFIX, environ, overrides, flags)


class PodLogReader(Protocol):
    """A :class:`LogSource` that can also read given pods instead of a model's."""

    async def entries(
        self,
        query: LogQuery,
        cursor: str | None = None,
        *,
        pods: Sequence[ObjectKey] | None = None,
    ) -> LogPage: ...

    async def aclose(self) -> None: ...
