"""Recorder settings for tests against a real redis-server: quick timeouts and flushes, a
retention that keeps every record, and no flush at interpreter exit."""

from __future__ import annotations

from typing import Any

from openrl_inspect.recorder import RecorderSettings, Retention

KEEP_ALL = Retention(max_steps_per_model=1_000_000, max_sampler_batches_per_model=10_000_000)


def recorder_settings(url: str, **overrides: Any) -> RecorderSettings:
    """Quick flushes, timeouts and backoff; ``overrides`` replace any field."""
    values: dict[str, Any] = {
        "url": url,
        "capacity": 50_000,
        "batch_size": 200,
        "flush_interval_s": 0.05,
        "socket_timeout_s": 0.3,
        "connect_timeout_s": 0.3,
        "backoff_base_s": 0.02,
        "backoff_cap_s": 0.2,
        "flush_at_exit": False,
    }
    values.update(overrides)
    return RecorderSettings(**values)
