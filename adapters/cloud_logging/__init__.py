"""Cloud Logging: what the workers said about a model around a failure, bounded.

The public surface: ``CloudLoggingSource`` answers a ``LogQuery`` (see ``adapters.logs``,
whose ``memory.InMemoryLogSource`` is its twin) through the official
google-cloud-logging client, off the event loop, with a timeout on every page.
``CloudLoggingSettings`` are its settings (environment prefix
``OPENRL_INSPECT_CLOUD_LOGGING_``); they also bound the other log sources.
"""

from __future__ import annotations

from openrl_inspect.adapters.cloud_logging._client import (
    ENV_PREFIX,
    CloudLoggingSource,
    load_settings,
    translate_error,
)
from openrl_inspect.adapters.logs import CloudLoggingSettings

__all__ = [
    "ENV_PREFIX",
    "CloudLoggingSettings",
    "CloudLoggingSource",
    "load_settings",
    "translate_error",
]
