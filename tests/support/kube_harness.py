"""Helpers for tests that point the real Kubernetes adapter at ``FakeKube``."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from openrl_inspect.adapters.kubernetes import (
    KubernetesCacheSource,
    KubernetesSettings,
    open_kubernetes,
)
from openrl_inspect.adapters.kubernetes._api import KubeApi, create_api_client

from support.fake_kube import FakeKube, write_kubeconfig

SYNC_TIMEOUT_S = 10.0


def kube_settings(fake: FakeKube, tmp_path: Path, **overrides: Any) -> KubernetesSettings:
    """Settings for the fake, through a kubeconfig file, with short backoffs."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", fake.url)
    values: dict[str, Any] = {
        "kubeconfig": str(kubeconfig),
        "request_timeout_s": 2.0,
        "watch_timeout_s": 60.0,
        "resync_period_s": 300.0,
        "backoff_initial_s": 0.05,
        "backoff_max_s": 0.2,
    }
    values.update(overrides)
    return KubernetesSettings(**values)


@contextlib.asynccontextmanager
async def synced_source(
    fake: FakeKube, tmp_path: Path, **overrides: Any
) -> AsyncIterator[KubernetesCacheSource]:
    """A started source whose every kind has synced."""
    async with open_kubernetes(kube_settings(fake, tmp_path, **overrides)) as source:
        assert await source.wait_synced(SYNC_TIMEOUT_S), await source.status()
        yield source


@contextlib.asynccontextmanager
async def unstarted_source(
    fake: FakeKube, tmp_path: Path, **overrides: Any
) -> AsyncIterator[KubernetesCacheSource]:
    """A source whose informers never started: every read is a direct read."""
    settings = kube_settings(fake, tmp_path, **overrides)
    api_client, _ = await create_api_client(settings)
    source = KubernetesCacheSource(KubeApi(api_client, settings))
    try:
        yield source
    finally:
        await source.aclose()


async def eventually(
    check: Callable[[], bool | Awaitable[bool]], timeout_s: float = 10.0, what: str = ""
) -> None:
    """Poll ``check`` until it holds; fail (not hang) if it never does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"never happened: {what or check}")
        await asyncio.sleep(0.02)
