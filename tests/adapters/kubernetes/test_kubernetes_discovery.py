"""Choosing a resource's version from discovery documents (``_discovery``), with the
documents given by hand: understood versions first, unknown ones reported, answers kept
and asked again on a relist once they are old enough."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from openrl_inspect.adapters.kubernetes._discovery import Discovery, NotDiscovered
from openrl_inspect.adapters.kubernetes._resources import (
    DEVICE_TAINT_RULES,
    PODS,
    RESOURCE_SLICES,
    WORKLOADS,
)
from openrl_inspect.core.errors import ApiVersionUnsupported

pytestmark = pytest.mark.anyio


class Server:
    """Discovery documents: group -> version -> its resources; counts the requests."""

    def __init__(self, served: Mapping[str, Mapping[str, set[str]]]) -> None:
        self.served = {g: dict(v) for g, v in served.items()}
        self.asked: list[str] = []
        self.now = 0.0

    async def groups(self) -> dict[str, tuple[str, ...]]:
        self.asked.append("/apis")
        return {g: tuple(v) for g, v in self.served.items()}

    async def resources(self, group: str, version: str) -> frozenset[str] | None:
        self.asked.append(f"/apis/{group}/{version}")
        found = self.served.get(group, {}).get(version)
        return None if found is None else frozenset(found)

    def discovery(self) -> Discovery:
        return Discovery(self.groups, self.resources, min_interval_s=5.0, clock=lambda: self.now)


async def test_the_newest_understood_version_wins_whatever_the_order() -> None:
    server = Server({"kueue.x-k8s.io": {"v1beta1": {"workloads"}, "v1beta2": {"workloads"}}})
    choice = await server.discovery().choose(WORKLOADS)
    assert (choice.version, choice.seen, choice.unsupported) == ("v1beta2", ("v1beta2",), False)


async def test_a_version_without_the_resource_is_passed_over() -> None:
    """1.34 with the gate on: rules only in v1alpha3, slices in v1."""
    dra = {
        "v1": {"resourceslices"},
        "v1beta1": {"resourceslices"},
        "v1alpha3": {"devicetaintrules"},
    }
    discovery = Server({"resource.k8s.io": dra}).discovery()
    assert await discovery.version(DEVICE_TAINT_RULES) == "v1alpha3"
    assert await discovery.version(RESOURCE_SLICES) == "v1"


async def test_unknown_versions_are_unsupported_and_absent_ones_not_served() -> None:
    server = Server(
        {"kueue.x-k8s.io": {"v1": {"workloads"}}, "resource.k8s.io": {"v1": {"resourceslices"}}}
    )
    discovery = server.discovery()
    with pytest.raises(ApiVersionUnsupported) as caught:
        await discovery.version(WORKLOADS)
    assert (caught.value.group, caught.value.seen) == ("kueue.x-k8s.io", ("v1",))
    assert caught.value.understood == ("v1beta2", "v1beta1")
    assert discovery.choices["workloads"].unsupported
    with pytest.raises(NotDiscovered):  # DRA served, but no version has rules
        await discovery.version(DEVICE_TAINT_RULES)
    assert not discovery.choices["devicetaintrules"].unsupported
    del server.served["kueue.x-k8s.io"]
    discovery.forget()
    with pytest.raises(NotDiscovered):
        await discovery.version(WORKLOADS)


async def test_answers_are_kept_and_asked_again_when_fresh_and_old_enough() -> None:
    server = Server({"kueue.x-k8s.io": {"v1beta1": {"workloads"}}})
    discovery = server.discovery()
    assert await discovery.version(WORKLOADS) == "v1beta1"
    asked = len(server.asked)
    assert await discovery.version(WORKLOADS) == "v1beta1"
    assert len(server.asked) == asked  # kept
    server.served["kueue.x-k8s.io"] = {"v1beta2": {"workloads"}}
    assert await discovery.version(WORKLOADS, fresh=True) == "v1beta1"  # too recent
    server.now = 6.0
    assert await discovery.version(WORKLOADS, fresh=True) == "v1beta2"  # a relist, later
    assert len(server.asked) > asked


async def test_the_core_api_is_v1_without_asking() -> None:
    server = Server({})
    assert await server.discovery().version(PODS) == "v1"
    assert server.asked == []
