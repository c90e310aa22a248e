"""The Lease client through the official asyncio client, against a local API server
speaking ``coordination.k8s.io/v1``: two electors over HTTP, the 409s of both kinds,
errors translated, and every body written a valid ``V1Lease``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from openrl_inspect.adapters.kubernetes import (
    KubernetesSettings,
    LeaseConflict,
    LeaseRecord,
    open_leases,
)
from openrl_inspect.adapters.kubernetes._lease import KubeLeases
from openrl_inspect.core.errors import BackendUnavailable
from openrl_inspect.tracker.leader import ElectionSettings, LeaderElector
from support.fake_kube import write_kubeconfig
from support.fake_leases import FakeLeases, fake_leases

pytestmark = pytest.mark.anyio

NS, NAME = "openrl", "openrl-inspect-tracker"
PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"


@pytest.fixture
def server() -> Iterator[FakeLeases]:
    with fake_leases() as fake:
        yield fake


@asynccontextmanager
async def client(server: FakeLeases, tmp_path: Path) -> AsyncIterator[KubeLeases]:
    config = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    async with open_leases(KubernetesSettings(kubeconfig=str(config), request_timeout_s=2)) as c:
        yield c


async def test_two_electors_over_http(server: FakeLeases, tmp_path: Path) -> None:
    async with client(server, tmp_path) as one, client(server, tmp_path) as two:
        a = LeaderElector(one, ElectionSettings(NAME, NS, "tracker-a"))
        b = LeaderElector(two, ElectionSettings(NAME, NS, "tracker-b"))
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        assert await a.try_acquire_or_renew()  # a renewal: a replace with the read version
        stored = server.leases[NS, NAME]
        assert stored["spec"]["holderIdentity"] == "tracker-a"
        assert stored["spec"]["leaseDurationSeconds"] == 15
        # MicroTime: RFC 3339 with microseconds (the client writes +00:00 for Z).
        renew_time = stored["spec"]["renewTime"]
        assert datetime.fromisoformat(renew_time.replace("Z", "+00:00")).tzinfo is not None
        assert "." in renew_time
        await a.release()
        assert server.leases[NS, NAME]["spec"]["holderIdentity"] == ""
        assert await b.try_acquire_or_renew()
        assert server.leases[NS, NAME]["spec"]["leaseTransitions"] == 1
    verbs = {verb for verb, _ in server.requests}
    assert verbs == {"GET", "POST", "PUT"}
    assert {path for _, path in server.requests} == {PATH, f"{PATH}/{NAME}"}


async def test_both_kinds_of_409_are_conflicts(server: FakeLeases, tmp_path: Path) -> None:
    now = datetime.now(UTC)
    record = LeaseRecord("x", 15, now, now, 0)
    async with client(server, tmp_path) as leases:
        created = await leases.create(NS, NAME, record)
        assert created.resource_version and created.holder == "x"
        with pytest.raises(LeaseConflict):
            await leases.create(NS, NAME, record)  # AlreadyExists
        renewed = await leases.replace(NS, NAME, created)
        with pytest.raises(LeaseConflict):
            await leases.replace(NS, NAME, created)  # the version read is stale now
        assert (await leases.get(NS, NAME)) == renewed
        assert await leases.get(NS, "no-such-lease") is None


async def test_a_failing_server_is_a_backend_error(server: FakeLeases, tmp_path: Path) -> None:
    server.fail_with = 503
    async with client(server, tmp_path) as leases:
        with pytest.raises(BackendUnavailable):
            await leases.get(NS, NAME)
        elector = LeaderElector(leases, ElectionSettings(NAME, NS, "tracker-a"))
        with pytest.raises(BackendUnavailable):
            await elector.try_acquire_or_renew()
    assert not elector.leading


def test_the_lease_module_and_the_twin_load_without_the_sdk() -> None:
    # The Lease client shares its module with the records the twin and the RBAC test
    # use; the SDK (about a second to import) must still wait for a client to open,
    # and the package's RBAC tables must not even load the client module.
    code = (
        "import sys\n"
        "from openrl_inspect.adapters.kubernetes import LEASE_VERBS, LOG_READS, READ_VERBS\n"
        "print('openrl_inspect.adapters.kubernetes._api' in sys.modules)\n"
        "from openrl_inspect.adapters.kubernetes import LeaseRecord, KubeLeases\n"
        "from openrl_inspect.adapters.kubernetes.memory import MemoryLeases\n"
        "print(any(m == 'kubernetes' or m.startswith('kubernetes.') for m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "False"]
