"""Settings of the Kubernetes adapter (environment prefix ``OPENRL_INSPECT_KUBERNETES_``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openrl_inspect.adapters.kubernetes._records import (
    MODEL_ID_LABEL,
    NVIDIA_GPU_DRIVER,
    ROLE_LABEL,
    LabelKeys,
)
from openrl_inspect.core import settings as settings_module
from openrl_inspect.core.errors import SettingsError

ENV_PREFIX = "OPENRL_INSPECT_KUBERNETES_"
# A label key: an optional DNS-subdomain prefix and "/", then a name of at most 63.
_LABEL_KEY = re.compile(
    r"(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)


@dataclass(frozen=True)
class KubernetesSettings:
    """How to reach the API server and how the watch cache behaves.

    ``namespaces`` selects the namespaces whose pods, workloads, claims and events are
    watched (empty: all; a Node's events live in ``default``). No API version is
    configured: each group is read at the newest version the API server serves among
    those the adapter understands, chosen by discovery at start-up and again on every
    relist (``_discovery``), so a setting can never pin a version the cluster has
    stopped serving. ``max_direct_read`` bounds the one LIST that answers a request
    while a kind's cache has not synced yet. The events cache keeps at most
    ``max_events`` Events, none last seen more than ``event_max_age_s`` ago (the API
    server's own event TTL is an hour), evicting the oldest.
    """

    in_cluster: bool = False
    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()
    request_timeout_s: float = 10.0
    watch_timeout_s: float = 300.0
    resync_period_s: float = 900.0
    list_page_size: int = 500
    max_direct_read: int = 500
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    # The labels OpenRL puts on its jobs and pods (Cloud Logging's label keys follow).
    model_label: str = MODEL_ID_LABEL
    role_label: str = ROLE_LABEL
    gpu_drivers: tuple[str, ...] = (NVIDIA_GPU_DRIVER,)
    max_events: int = 20_000
    event_max_age_s: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("request_timeout_s", "watch_timeout_s", "resync_period_s"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{ENV_PREFIX}{name.upper()}: must be positive")
        if self.backoff_initial_s <= 0 or self.backoff_max_s < self.backoff_initial_s:
            raise SettingsError(f"{ENV_PREFIX}BACKOFF_*: need 0 < initial <= max")
        if self.list_page_size < 1 or self.max_direct_read < 1:
            raise SettingsError(f"{ENV_PREFIX}LIST_PAGE_SIZE/MAX_DIRECT_READ: must be >= 1")
        for name in ("model_label", "role_label"):
            if not _LABEL_KEY.fullmatch(getattr(self, name)):
                raise SettingsError(f"{ENV_PREFIX}{name.upper()}: not a Kubernetes label key")
        if self.max_events < 1 or self.event_max_age_s <= 0:
            raise SettingsError(f"{ENV_PREFIX}MAX_EVENTS/EVENT_MAX_AGE_S: must be positive")

    @property
    def labels(self) -> LabelKeys:
        return LabelKeys(model=self.model_label, role=self.role_label)


def load_settings(
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> KubernetesSettings:
    return settings_module.load(KubernetesSettings, ENV_PREFIX, environ, overrides, flags)
