"""Container terminations and DRA device taints: parsed from the kubelet's and the DRA
driver's objects, DeviceTaintRules applied to the GPU index, and the twin holding rules."""

from __future__ import annotations

from typing import Any

import pytest
from openrl_inspect.adapters.kubernetes import (
    DeviceKey,
    DeviceTaint,
    GpuDevice,
    ObjectKey,
    PodRecord,
    TaintRuleRecord,
)
from openrl_inspect.adapters.kubernetes._dra import parse_slice, parse_taint_rule
from openrl_inspect.adapters.kubernetes._json import parse_time
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes._store import GpuIndex
from openrl_inspect.adapters.kubernetes._view import ClusterView
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from support import kube_health_objects, kube_objects
from support.client_models import roundtrip


@pytest.mark.parametrize(
    ("obj", "model"),
    [
        (kube_health_objects.crashlooping_sampler(), "V1Pod"),
        (kube_health_objects.tainted_slice(), "V1ResourceSlice"),
        (kube_health_objects.tainted_slice(version="v1beta1"), "V1beta1ResourceSlice"),
        (kube_health_objects.taint_rule(version="v1alpha3"), "V1alpha3DeviceTaintRule"),
        (kube_health_objects.taint_rule(version="v1beta2"), "V1beta2DeviceTaintRule"),
        (kube_health_objects.taint_rule(version="v1"), "V1DeviceTaintRule"),
    ],
    ids=lambda v: v if isinstance(v, str) else v["apiVersion"] + "/" + v["metadata"]["name"],
)
def test_objects_are_valid_for_the_client_models(obj: dict[str, Any], model: str) -> None:
    roundtrip(obj, model)


def test_a_misplaced_taint_is_caught() -> None:
    """v1 puts taints on the device itself; under ``basic`` (v1beta1's place) the v1 model
    loses them, so a fixture with taints in the wrong place fails the check above."""
    obj = kube_health_objects.tainted_slice()
    device = obj["spec"]["devices"][3]
    device["basic"] = {"taints": device.pop("taints")}
    with pytest.raises(AssertionError):
        roundtrip(obj, "V1ResourceSlice")


def test_the_pre_135_selector_is_gone_from_the_installed_client() -> None:
    """deviceClassName and CEL selectors existed in v1alpha3 up to 1.34 (API reference);
    this client is newer and drops them, so that shape is not checked against it."""
    with pytest.raises(AssertionError):
        roundtrip(kube_health_objects.cel_taint_rule(), "V1alpha3DeviceTaintRule")


def _pod(obj: dict[str, Any]) -> PodRecord:
    rec = parse_pod(obj)
    assert rec is not None
    return rec


def test_crashlooping_sampler_shows_its_oom_kill() -> None:
    (c,) = _pod(kube_health_objects.crashlooping_sampler()).containers
    assert (c.state, c.reason, c.message) == (
        "waiting",
        "CrashLoopBackOff",
        kube_health_objects.BACK_OFF,
    )
    assert (c.ready, c.restart_count, c.image) == (False, 5, "ghcr.io/openrl/sampler:1.4.2")
    assert c.exit_code is None and c.signal is None
    last = c.last_termination
    assert last is not None and last.oom_killed
    assert (last.reason, last.exit_code, last.signal) == ("OOMKilled", 137, None)
    assert last.started_at == parse_time("2026-01-05T09:19:02Z")
    assert last.finished_at == parse_time("2026-01-05T09:20:10Z")


def test_a_current_termination_keeps_its_signal() -> None:
    obj = kube_health_objects.crashlooping_sampler()
    status = obj["status"]["containerStatuses"][0]
    status["state"] = {
        "terminated": {
            "exitCode": 137,
            "signal": 9,
            "reason": "Error",
            "startedAt": "2026-01-05T09:21:00Z",
            "finishedAt": "2026-01-05T09:22:00Z",
        }
    }
    roundtrip(obj, "V1Pod")
    (c,) = _pod(obj).containers
    assert (c.state, c.exit_code, c.signal, c.reason) == ("terminated", 137, 9, "Error")
    assert c.finished_at == parse_time("2026-01-05T09:22:00Z")


def test_image_falls_back_to_the_spec() -> None:
    obj = kube_health_objects.crashlooping_sampler()
    del obj["status"]["containerStatuses"][0]["image"]
    (c,) = _pod(obj).containers
    assert c.image == "ghcr.io/openrl/sampler:1.4.2"


def test_odd_termination_fields_spoil_only_themselves() -> None:
    obj = kube_health_objects.crashlooping_sampler()
    status = obj["status"]["containerStatuses"][0]
    status["lastState"]["terminated"].update(exitCode="x", signal=True, finishedAt="never")
    (c,) = _pod(obj).containers
    last = c.last_termination
    assert last is not None
    assert (last.reason, last.exit_code, last.signal, last.finished_at) == (
        "OOMKilled", None, None, None,
    )  # fmt: skip
    status["lastState"] = "gone"
    status["image"] = 42
    (c,) = _pod(obj).containers
    assert c.last_termination is None and c.image == "ghcr.io/openrl/sampler:1.4.2"
    status["lastState"] = {}  # what the kubelet writes before a first restart
    assert _pod(obj).containers[0].last_termination is None


def _devices(obj: dict[str, Any]) -> dict[str, GpuDevice]:
    rec = parse_slice(obj)
    assert rec is not None
    return {d.device: d for d in rec.devices}


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_slice_taints_are_read_where_each_version_puts_them(version: str) -> None:
    devices = _devices(kube_health_objects.tainted_slice(version=version))
    (xid79,) = devices["gpu-3"].taints
    assert xid79 == DeviceTaint(
        kube_health_objects.XID_TAINT,
        "NoSchedule",
        "79",
        parse_time(kube_health_objects.TAINTED_AT),
        rule=None,
    )
    assert not devices["gpu-3"].healthy
    (xid43,) = devices["gpu-5"].taints
    assert xid43.effect == "None" and not xid43.blocking and devices["gpu-5"].healthy
    assert devices["gpu-0"].taints == () and devices["gpu-0"].healthy


def test_a_taint_without_key_is_dropped_and_unknown_effects_do_not_block() -> None:
    obj = kube_health_objects.tainted_slice(
        taints={1: [{"effect": "NoSchedule"}, {"key": "k", "effect": "Later"}]}
    )
    (taint,) = _devices(obj)["gpu-1"].taints
    assert (taint.key, taint.effect, taint.value) == ("k", "Later", None)
    assert _devices(obj)["gpu-1"].healthy  # unknown effects count as None (the API says)


def _rule(obj: dict[str, Any]) -> TaintRuleRecord:
    rec = parse_taint_rule(obj)
    assert rec is not None
    return rec


@pytest.mark.parametrize("version", ["v1alpha3", "v1beta2", "v1"])
def test_taint_rule_parses_in_every_version(version: str) -> None:
    rule = _rule(kube_health_objects.taint_rule(version=version))
    assert rule.key == ObjectKey("", "drain-gpu-h100-1-gpu-6") and rule.evaluable
    assert (rule.driver, rule.pool, rule.device) == ("gpu.nvidia.com", "gpu-h100-1", "gpu-6")
    assert rule.taint == DeviceTaint(
        "example.com/maintenance",
        "NoExecute",
        "hbm-replacement",
        parse_time(kube_health_objects.TAINTED_AT),
        rule="drain-gpu-h100-1-gpu-6",
    )


def test_cel_rule_is_not_evaluable_and_selectorless_rule_selects_nothing() -> None:
    cel = _rule(kube_health_objects.cel_taint_rule())
    assert not cel.evaluable and cel.device_class == "gpu.nvidia.com" and len(cel.cel) == 1
    bare = kube_health_objects.taint_rule()
    del bare["spec"]["deviceSelector"]
    assert not _rule(bare).selects
    no_key = kube_health_objects.taint_rule()
    del no_key["spec"]["taint"]["key"]
    assert parse_taint_rule(no_key) is None and parse_taint_rule({"metadata": {}}) is None


def _index(*rules: dict[str, Any]) -> dict[str, GpuDevice]:
    slices = [
        parse_slice(kube_health_objects.tainted_slice()),
        parse_slice(kube_objects.h200_slice()),
    ]
    index = GpuIndex([s for s in slices if s is not None], [_rule(r) for r in rules])
    return {f"{d.pool}/{d.device}": d for d in index.devices}


def test_a_rule_taints_the_devices_it_selects() -> None:
    gpus = _index(kube_health_objects.taint_rule())
    (taint,) = gpus["gpu-h100-1/gpu-6"].taints
    assert taint.rule == "drain-gpu-h100-1-gpu-6" and not gpus["gpu-h100-1/gpu-6"].healthy
    assert gpus["gpu-h200-1/gpu-6"].taints == ()
    # Cumulative with the driver's own taints.
    both = _index(
        kube_health_objects.taint_rule(selector={"pool": "gpu-h100-1", "device": "gpu-3"})
    )
    assert [t.key for t in both["gpu-h100-1/gpu-3"].taints] == [
        kube_health_objects.XID_TAINT, "example.com/maintenance",
    ]  # fmt: skip


def test_empty_selector_matches_all_and_no_selector_none() -> None:
    everything = _index(kube_health_objects.taint_rule(selector={}))
    assert all(not d.healthy for d in everything.values()) and len(everything) == 16
    bare = kube_health_objects.taint_rule()
    del bare["spec"]["deviceSelector"]
    nothing = _index(bare)
    assert [k for k, d in nothing.items() if d.taints and d.device != "gpu-3"] == [
        "gpu-h100-1/gpu-5"  # its driver taint (effect None), no rule's
    ]


def test_cel_rule_is_named_not_applied() -> None:
    gpus = _index(kube_health_objects.cel_taint_rule())
    assert all(d.rules_not_evaluated == ("taint-old-drivers",) for d in gpus.values())
    assert gpus["gpu-h200-1/gpu-0"].taints == () and gpus["gpu-h200-1/gpu-0"].healthy
    other_driver = kube_health_objects.cel_taint_rule()
    other_driver["spec"]["deviceSelector"]["driver"] = "other.example.com"
    assert all(d.rules_not_evaluated == () for d in _index(other_driver).values())


def test_the_index_is_rebuilt_when_rules_change() -> None:
    view = ClusterView()
    rec = parse_slice(kube_health_objects.tainted_slice())
    assert rec is not None
    view.slices.upsert(rec)
    key = DeviceKey("gpu.nvidia.com", "gpu-h100-1", "gpu-6")
    assert view.gpus_by_device([key])[0] == rec.devices[6]
    view.taint_rules.upsert(_rule(kube_health_objects.taint_rule()))
    (gpu,) = view.gpus_by_device([key])
    assert gpu is not None and not gpu.healthy
    view.taint_rules.delete(ObjectKey("", "drain-gpu-h100-1-gpu-6"))
    assert view.gpus_by_device([key])[0] == rec.devices[6]


@pytest.mark.anyio
async def test_twin_accepts_rules_and_applies_them() -> None:
    slice_rec = parse_slice(kube_health_objects.tainted_slice())
    assert slice_rec is not None
    twin = MemoryKubernetesSource([slice_rec, _rule(kube_health_objects.taint_rule())])
    (listing,) = await twin.gpus_by_node(["gpu-h100-1"])
    assert [d.device for d in listing.items if not d.healthy] == ["gpu-3", "gpu-6"]
    status = await twin.status()
    rules = status.kind("devicetaintrules")
    assert rules is not None and rules.objects == 1
    twin.remove("devicetaintrules", ObjectKey("", "drain-gpu-h100-1-gpu-6"))
    (listing,) = await twin.gpus_by_node(["gpu-h100-1"])
    assert [d.device for d in listing.items if not d.healthy] == ["gpu-3"]
