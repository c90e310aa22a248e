"""The recorder's public records: its settings, retention, who it writes for, its counters."""

from __future__ import annotations

import os
import re
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass

DAY = 86_400.0


@dataclass(frozen=True)
class RecorderSettings:
    """The telemetry writer. Env prefix ``OPENRL_INSPECT_RECORDER_``."""

    url: str = "redis://127.0.0.1:6379/0"
    cluster: bool = False
    socket_timeout_s: float = 2.0
    connect_timeout_s: float = 1.0
    # Overall deadline of one pipeline attempt through an asyncio client (a redis-py
    # client relies on its socket timeouts, above for the recorder's own).
    attempt_timeout_s: float = 5.0
    capacity: int = 100_000
    shed_fraction: float = 0.5
    # A batch's commands go as one pipeline; larger batches combine more writes per key
    # (a backlog drains faster: docs/benchmarks.md, Recorder).
    batch_size: int = 2048
    flush_interval_s: float = 1.0
    backoff_base_s: float = 0.05
    backoff_cap_s: float = 5.0
    heartbeat_every_s: float = 5.0
    # Counters go to ``oi:recorder:<id>`` at most this often (and once more at close).
    counters_every_s: float = 1.0
    flush_timeout_s: float = 10.0
    close_timeout_s: float = 5.0
    # Write the counters to ``oi:recorder:<recorder id>`` with each pipeline.
    publish_counters: bool = True
    # Empty: ``<host>-<pid>-<random>``.
    recorder_id: str = ""
    # Sync recorder: flush (within ``close_timeout_s``) when the interpreter exits.
    flush_at_exit: bool = True
    # Who flushes: a daemon thread, the only flusher there is. Kept so that a setting
    # naming a removed one ("process", "auto", "asyncio") is refused, not ignored.
    flusher: str = "thread"


FLUSHERS = ("thread",)


def check(settings: RecorderSettings) -> None:
    """Refuse settings a recorder cannot honour, saying what to use instead."""
    if settings.flusher not in FLUSHERS:
        raise ValueError(
            f"RecorderSettings.flusher={settings.flusher!r} (OPENRL_INSPECT_RECORDER_FLUSHER) "
            "is no longer offered: the recorder has one flusher, a daemon thread, for "
            "Recorder and AsyncRecorder alike. Leave it unset or set it to 'thread'."
        )


@dataclass(frozen=True)
class WorkerInfo:
    """Who this process is, for the heartbeats the recorder sends on its own."""

    id: str
    role: str  # trainer | sampler
    pod: str
    node: str
    model_id: str | None = None
    gpu_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecorderStats:
    """Exact counters: ``recorded == written + dropped + pending`` in every snapshot."""

    recorder_id: str
    recorded: int
    written: int
    dropped: int
    pending: int
    retried: int
    batches: int
    failed_attempts: int
    dropped_by_reason: Mapping[str, int]
    dropped_by_kind: Mapping[str, int]
    connected: bool | None  # None before the first attempt
    last_error: str | None  # the exception class of the last failed attempt

    def counters(self) -> dict[str, int]:
        return {
            "recorded": self.recorded,
            "written": self.written,
            "dropped": self.dropped,
            "pending": self.pending,
            "retried": self.retried,
        }


@dataclass(frozen=True)
class Retention:
    """How much history is kept. Env prefix ``OPENRL_INSPECT_RETENTION_``."""

    max_steps_per_model: int = 1000
    ended_model_ttl_s: float = 7 * DAY
    closed_session_ttl_s: float = 7 * DAY
    worker_ttl_s: float = 1 * DAY
    op_index_ttl_s: float = 30 * DAY
    # Trimming walks the oldest steps; doing it every few steps amortises it.
    trim_every_steps: int = 8
    # Capped per-model sorted sets: the newest entries are kept.
    max_sampler_batches_per_model: int = 10_000
    max_logs_per_model: int = 5_000
    # A client log message longer than this is cut (and marked ``truncated``).
    max_log_message_chars: int = 4_096
    # Entries of ``oi:models:failing`` (a model's last failed op) older than this are
    # trimmed as failures are written: attention reads only its recent end.
    failing_index_s: float = 1 * DAY
    # Entries of ``oi:ops:open`` (every model's unfinished ops) accepted longer ago than
    # this are trimmed as ops are accepted: an op open that long belongs to a model
    # whose keys have expired, or was never finished.
    open_ops_index_s: float = 7 * DAY
    # Recorder counters hashes (``oi:recorder:RID``) and their index.
    recorder_ttl_s: float = 1 * DAY


_SAFE_ID = re.compile(r"[^A-Za-z0-9._:@/-]")


def default_recorder_id() -> str:
    """``host-pid-random``: unique per process, readable in the recorder's Redis hash."""
    host = _SAFE_ID.sub("-", socket.gethostname())[:64].strip("-.:@/") or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"
