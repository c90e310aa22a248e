"""``openrl-inspect demo``: the API over a simulated OpenRL cluster and the in-memory
twins that show it.

The wiring is explicit: the simulation writes OpenRL's state through the real recorder
into an in-process fakeredis (or a Redis of your choice); this module builds each twin
(Kubernetes, Cloud Logging, Prometheus) itself, puts it in the ``Backends`` and, on
every tick, has each mirror make its twin hold what the simulation did.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from openrl_inspect import auth
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.prometheus import RawQuerySettings
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore, StateStore, connect
from openrl_inspect.cli.launch import browsable_url, launch, listen_settings
from openrl_inspect.core import settings
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.settings import Settings
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig, Simulation, populate
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from openrl_inspect.simulator.logs_twin import LogMirror
from openrl_inspect.simulator.metrics_twin import DemoMetrics, start
from openrl_inspect.telemetry import MetricsSettings
from openrl_inspect.web.app import UI, create_app
from openrl_inspect.web.guard import HttpSettings
from openrl_inspect.web.health import HealthSettings
from openrl_inspect.web.identity import BackendIdentity, Identity, clean_url
from starlette.applications import Starlette

log = logging.getLogger("openrl_inspect.cli.demo")


@dataclass(frozen=True)
class DemoSettings:
    """The embedded demo. Env prefix ``OPENRL_INSPECT_DEMO_``."""

    seed: int = 7
    sessions: int = 4
    models_per_session: int = 3
    steps_per_model: int = 15
    tick_s: float = 0.5
    # A real Redis to fill instead of the in-process fakeredis.
    redis_url: str | None = None


@dataclass
class DemoTwins:
    """The twins the demo shows the simulation through, and how each follows it."""

    kubernetes: MemoryKubernetesSource
    logs: LogMirror
    metrics: DemoMetrics

    @classmethod
    async def build(cls, sim: Simulation, store: StateStore, now: float) -> DemoTwins:
        twins = cls(MemoryKubernetesSource(), LogMirror(), await start(sim, store, now))
        mirror_kubernetes(sim, twins.kubernetes)
        await twins.logs.update(sim, store, now)
        return twins

    def install(self, backends: Backends) -> None:
        backends.kubernetes = self.kubernetes
        backends.logs = self.logs.twin
        backends.gpu_metrics = self.metrics.twin
        backends.prometheus = self.metrics.source
        # The raw-query field reads only the demo's own series here.
        backends.raw_query = RawQuerySettings(raw_query=True)

    async def update(self, sim: Simulation, store: StateStore, now: float) -> None:
        mirror_kubernetes(sim, self.kubernetes)
        await self.logs.update(sim, store, now)
        self.metrics.tick(now)


async def _drive(
    sim: Simulation, rec: AsyncRecorder, twins: DemoTwins, store: StateStore, tick_s: float
) -> None:
    while True:
        await asyncio.sleep(tick_s)
        now = time.time()
        sim.advance(now)
        try:
            await rec.flush()
            await twins.update(sim, store, now)
        except Exception:  # the demo's writer must outlive a Redis restart
            log.warning("demo: writing simulated telemetry failed; will retry", exc_info=True)
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # redis-py can swallow a cancellation that lands mid-pipeline: honour it,
            # or the shutdown below waits for this loop for ever.
            raise asyncio.CancelledError


# What the demo offers to open first: (what it is, the dashboard's page, the scenario
# whose model it is, or "" for that model's session). The seed is fixed, so the ids are
# the same on every start (the README's examples use them).
TRY_FIRST = (
    ("a failed model", "model", "failed"),
    ("a stuck model", "model", "stuck"),
    ("a waiting model", "model", "waiting"),
    ("their session", "session", ""),
)


def ids_to_try(sim: Simulation) -> list[tuple[str, str, str]]:
    """(what it is, page, id) for each of ``TRY_FIRST`` the simulation staged."""
    out: list[tuple[str, str, str]] = []
    for label, page, scenario in TRY_FIRST:
        mid = sim.scenario_ids.get(scenario or "failed")
        if mid is None:
            continue
        out.append((label, page, mid if scenario else sim.models[mid].session_id))
    return out


def print_ids_to_try(sim: Simulation, ui_url: str) -> None:
    print("Try:", flush=True)
    for label, page, oid in ids_to_try(sim):
        print(f"  {label:<16} {ui_url}#/{page}/{oid}", flush=True)


@asynccontextmanager
async def demo_backends(
    demo: DemoSettings,
    world: SimConfig | None = None,
    announce: Callable[[Simulation], None] | None = None,
) -> AsyncIterator[Backends]:
    """A simulated OpenRL cluster, written live into fakeredis (or ``demo.redis_url``);
    ``world`` replaces the shape ``demo`` gives (the dashboard bench's large cluster);
    ``announce`` is shown the simulation once it is populated."""
    writer: Any
    if demo.redis_url:
        settings = RedisSettings(url=demo.redis_url)
        writer, store = connect(settings), RedisStateStore.from_settings(settings)
    else:
        # lazy: fakeredis loads only when no Redis is given.
        import fakeredis

        server = fakeredis.FakeServer()
        writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
        store = RedisStateStore.in_memory(server)
    # The world is written whole before the demo answers, in one batch, never shed for
    # want of room. (At 1,000 models that batch outlasts the recorder's attempt timeout
    # on the in-process fakeredis: give the demo a Redis, `demo --redis-url`.)
    rec = AsyncRecorder(writer, batch_size=1 << 30, capacity=1 << 30)
    config = world or SimConfig(
        seed=demo.seed,
        sessions=demo.sessions,
        models_per_session=demo.models_per_session,
        steps_per_model=demo.steps_per_model,
    )
    sim = Simulation(config, rec)
    now = time.time()
    populate(sim, now)
    await rec.flush(timeout_s=600.0)
    if announce is not None:
        announce(sim)
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, now)
    twins.install(backends)
    task = asyncio.create_task(_drive(sim, rec, twins, store, demo.tick_s))
    try:
        yield backends
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await rec.close(1.0)  # stops its flusher thread; the demo's writes need no drain
        await store.aclose()
        await writer.aclose()


def for_demo(redis_url: str | None) -> Identity:
    redis = clean_url(redis_url) if redis_url else "in-process fakeredis"
    simulated = "simulated (in memory)"
    return Identity(
        "demo",
        (
            BackendIdentity("redis", redis),
            BackendIdentity("kubernetes", simulated),
            BackendIdentity("prometheus", simulated),
            BackendIdentity("cloud_logging", simulated),
        ),
    )


def run(args: argparse.Namespace, env: Mapping[str, str], inspector: Settings) -> int:
    listen = listen_settings(args, env)
    _check_exposure(args, env, listen.host)
    metrics = settings.load(MetricsSettings, "OPENRL_INSPECT_METRICS_", env)
    demo = settings.load(
        DemoSettings, "OPENRL_INSPECT_DEMO_", env, {"redis_url": args.redis_url, "seed": args.seed}
    )

    def build(http: HttpSettings, health: HealthSettings) -> tuple[Starlette, list[str]]:
        warnings = [w for w in [auth.argv_password(args.redis_url, "--redis-url")] if w]
        # The DNS rebinding guard on loopback, as for ``serve`` with mode none.
        anonymous = auth.Anonymous(loopback_only=auth.is_loopback(listen.host))
        ui = f"{browsable_url(listen.host, listen.port)}{UI}"
        app = create_app(
            lambda: demo_backends(demo, announce=lambda sim: print_ids_to_try(sim, ui)),
            inspector,
            http,
            health,
            anonymous,
            identity=for_demo(demo.redis_url),
            metrics_settings=metrics,
        )
        return app, warnings

    return launch(args, env, listen, build)


def _check_exposure(args: argparse.Namespace, env: Mapping[str, str], host: str) -> None:
    """The demo has no authentication: off loopback it needs the same explicit consent as
    ``serve`` without authentication, and says so loudly when given."""
    if auth.is_loopback(host):
        return
    if not auth.load_settings(args, env).allow_unauthenticated_non_loopback:
        raise SettingsError(
            f"refusing to serve the demo on {host!r}, which is not a loopback address: the "
            "demo has no authentication, so anyone who reaches it sees everything. Listen "
            "on 127.0.0.1, or pass --allow-unauthenticated-non-loopback "
            "(OPENRL_INSPECT_AUTH_ALLOW_UNAUTHENTICATED_NON_LOOPBACK=true) to serve it there."
        )
    print(
        f"WARNING: the demo serves {host!r} without authentication: anyone who reaches "
        "this address sees everything it shows.",
        file=sys.stderr,
        flush=True,
    )
