"""A pod's restarts and OOM kills, from the kubelet's container statuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from openrl_inspect.adapters.kubernetes import PodRecord
from openrl_inspect.adapters.kubernetes._json import parse_time
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.resolvers.cluster.terminations import oom_killed, oom_kills, restarts
from support import kube_health_objects, kube_objects


def _pod(obj: dict[str, Any]) -> PodRecord:
    rec = parse_pod(obj)
    assert rec is not None
    return rec


def _killed_now(name: str, finished: str) -> PodRecord:
    """A sampler the OOM killer ended a moment ago: still terminated, and OOM-killed the
    run before too."""
    obj = kube_health_objects.crashlooping_sampler()
    obj["metadata"]["name"] = name
    obj["status"]["containerStatuses"][0]["state"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "OOMKilled",
            "startedAt": "2026-01-05T09:25:00Z",
            "finishedAt": finished,
        }
    }
    return _pod(obj)


def test_a_crashlooping_sampler_counts_its_restarts_and_its_oom_kill() -> None:
    pod = _pod(kube_health_objects.crashlooping_sampler())
    assert (restarts(pod), oom_killed(pod)) == (5, True)
    healthy = _pod(kube_objects.unschedulable_pod())
    assert (restarts(healthy), oom_killed(healthy)) == (0, False)


def test_restarts_count_init_containers_too() -> None:
    pod = _pod(kube_health_objects.crashlooping_sampler())
    init = replace(pod.containers[0], name="setup", init=True, restart_count=2,
                   last_termination=None)  # fmt: skip
    assert restarts(replace(pod, containers=(init, *pod.containers))) == 7


def test_kills_are_most_recent_first_and_bounded() -> None:
    older = _pod(kube_health_objects.crashlooping_sampler())  # last run ended 09:20:10
    newer = _killed_now("lora-a-sampler-1", "2026-01-05T09:26:00Z")
    kills = oom_kills([older, newer], limit=10)
    assert [(k.pod, k.current) for k in kills.items] == [
        ("lora-a-sampler-1", True),
        ("lora-a-sampler-0", False),
        ("lora-a-sampler-1", False),
    ]
    assert kills.items[0].at == parse_time("2026-01-05T09:26:00Z") and not kills.truncated
    first = oom_kills([older, newer], limit=1)
    assert len(first.items) == 1 and first.truncated
    assert oom_kills([_pod(kube_objects.unschedulable_pod())], limit=5).items == ()


def test_a_kill_without_a_time_sorts_last() -> None:
    undated = _killed_now("lora-a-sampler-2", "not a time")
    kills = oom_kills([undated, _pod(kube_health_objects.crashlooping_sampler())], limit=10)
    assert kills.items[-1].at is None and kills.items[-1].pod == "lora-a-sampler-2"
