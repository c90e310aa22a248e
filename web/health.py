"""Probing the backends, and saying so in the log when one goes down or comes back.

``probe_all`` is what ``/readyz`` answers. ``HealthLog`` remembers each backend's last
state and writes one JSON line (logger ``openrl_inspect.web.health``) on every change, with
the error code when it went down; the app's lifespan runs ``watch`` to probe every
``HealthSettings.interval_s`` seconds, so an outage is logged even when nobody asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from openrl_inspect.core.errors import BackendError
from openrl_inspect.resolvers.context import Backends

log = logging.getLogger("openrl_inspect.web.health")


@dataclass(frozen=True)
class HealthSettings:
    """Background probing. Env prefix ``OPENRL_INSPECT_HEALTH_``."""

    # Seconds between probes of every backend; 0 probes only when /readyz is asked.
    interval_s: float = 10.0


async def check(name: str, probe: Callable[[], Awaitable[Any]], timeout_s: float) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            await probe()
    except (BackendError, TimeoutError) as exc:
        if isinstance(exc, BackendError):
            # The adapters' messages are safe to show: they name the backend and what
            # went wrong (refused, timed out, credentials, protocol), never a host.
            return {"name": name, "ok": False, "code": exc.code, "reason": exc.message}
        reason = f"{name} did not answer within {timeout_s:g} s"
        return {"name": name, "ok": False, "code": "BACKEND_TIMEOUT", "reason": reason}
    return {"name": name, "ok": True, "latency_ms": round((time.perf_counter() - started) * 1e3, 2)}


async def _kubernetes(backends: Backends) -> dict[str, Any]:
    assert backends.kubernetes is not None
    try:
        async with asyncio.timeout(3.0):
            status = await backends.kubernetes.status()
    except BackendError as exc:
        return {"name": "kubernetes", "ok": False, "code": exc.code, "reason": exc.message}
    except TimeoutError:
        reason = "the Kubernetes watch cache did not answer within 3 s"
        return {"name": "kubernetes", "ok": False, "code": "BACKEND_TIMEOUT", "reason": reason}
    kinds = [
        {
            "kind": k.kind,
            "served": k.served,
            "version": k.version,
            "synced": k.synced,
            "objects": k.objects,
            "evicted": k.evicted,
            "age_s": None if k.list_age_s is None else round(k.list_age_s, 1),
            "error": k.last_error,
        }
        for k in status.kinds
    ]
    check: dict[str, Any] = {"name": "kubernetes", "ok": status.ready}
    if status.unsupported:
        # Served only at API versions this inspector does not read: down for those kinds
        # (their fields answer API_VERSION_UNSUPPORTED), whatever the others say.
        refusal = status.unsupported[0].refusal()
        check["ok"] = False
        check["code"] = refusal.code
        check["unsupported"] = [
            {
                "group": k.group,
                "kind": k.kind,
                "versionsSeen": list(k.unsupported_versions),
                "versionsUnderstood": list(k.understood),
            }
            for k in status.unsupported
        ]
    return {**check, "degraded": status.degraded, "kinds": kinds}


async def probe_all(backends: Backends) -> list[dict[str, Any]]:
    """Each configured backend's state; Redis first."""
    checks = [await check("redis", backends.state.ready, 3.0)]
    if backends.kubernetes is not None:
        checks.append(await _kubernetes(backends))
    if backends.prometheus is not None:
        source = backends.prometheus
        checks.append(await check("prometheus", lambda: source.instant("vector(1)"), 6.0))
    if backends.logs is not None:
        # Listing entries costs read quota: configured, not probed.
        checks.append({"name": "cloud_logging", "ok": True, "probed": False})
    return checks


class HealthLog:
    """Logs each backend's transitions between up and down (the first probe sets it);
    ``listener`` (the app's metrics) sees every probe."""

    def __init__(self, listener: Callable[[list[dict[str, Any]]], None] | None = None) -> None:
        self._up: dict[str, bool] = {}
        self._listener = listener

    def observe(self, checks: list[dict[str, Any]]) -> None:
        if self._listener is not None:
            self._listener(checks)
        for item in checks:
            name, ok = item["name"], bool(item["ok"])
            before = self._up.get(name)
            self._up[name] = ok
            if before is ok or (before is None and ok):
                continue
            if ok:
                log.info("backend up", extra={"backend": name, "up": True})
            else:
                log.warning(
                    "backend down", extra={"backend": name, "up": False, "code": item.get("code")}
                )


async def watch(
    backends: Backends, health: HealthLog, interval_s: float, stop: asyncio.Event
) -> None:
    """Probe every ``interval_s`` seconds until ``stop`` is set."""
    while not stop.is_set():
        health.observe(await probe_all(backends))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
