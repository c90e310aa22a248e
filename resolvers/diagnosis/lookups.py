"""Where to look next: ready-to-run GraphQL queries and log searches around a cause.

Each query is a path through ``schema.graphql`` with small selections (a test parses
and validates every one against the built schema). Values are quoted as JSON strings,
which GraphQL reads the same way, so an id cannot break out of its literal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.resolvers.diagnosis.causes import LogSearch, Lookup
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence, ModelEvidence

MAX_POD_KEYS = 4
MAX_NODES = 3


def _q(value: str | int) -> str:
    return json.dumps(value)


def _model(mid: str, body: str) -> str:
    return f"{{ model(id: {_q(mid)}) {{ {body} }} }}"


def summary_query(mid: str) -> str:
    return _model(mid, "state failureReason summary { verdict reasons lastError { opId error } }")


def open_ops_query(mid: str) -> str:
    return _model(
        mid, "openOps(first: 5) { nodes { id kind step health startedAt worker { id alive } } }"
    )


def op_query(op_id: str) -> str:
    return (
        f"{{ op(id: {_q(op_id)}) {{ kind step status error finishedAt worker {{ pod node }} }} }}"
    )


def worker_query(wid: str) -> str:
    return f"{{ worker(id: {_q(wid)}) {{ role pod node alive heartbeatAgeSeconds }} }}"


def waiting_query(mid: str) -> str:
    return _model(
        mid, "whyWaiting { rank kind object message shortfall queuePosition queueLength }"
    )


def workloads_query(mid: str) -> str:
    return _model(
        mid, "workloads { nodes { name status conditions { type status reason message } } }"
    )


def pod_query(key: ObjectKey) -> str:
    return (
        f"{{ pod(namespace: {_q(key.namespace)}, name: {_q(key.name)}) "
        "{ phase containers { name state reason restartCount } } }"
    )


def node_query(name: str) -> str:
    return f"{{ node(name: {_q(name)}) {{ ready unschedulable taints {{ key value effect }} }} }}"


def gpu_query(uuid: str) -> str:
    return f"{{ gpu(uuid: {_q(uuid)}) {{ nodeName device duty {{ value }} }} }}"


def steps_query(mid: str) -> str:
    return _model(mid, "steps(first: 20) { nodes { number durationSeconds opCount } }")


def step_ops_query(mid: str, step: int) -> str:
    return _model(
        mid,
        f"step(number: {_q(step)}) {{ ops(first: 10) {{ nodes {{ kind acceptedAt "
        "queueWaitSeconds durationSeconds finishedAt } } }",
    )


def activity_query(mid: str, window_s: float) -> str:
    window = max(60, min(round(window_s), 31 * 86400))
    return _model(mid, f"gpuActivity(windowSeconds: {window}) {{ duty gpus {{ uuid duty }} }}")


def sampling_query(mid: str) -> str:
    return _model(
        mid, "sampling { pod stats { generationTokensPerSecond requestsWaiting kvCacheUsage } }"
    )


def pod_keys(evidence: ModelEvidence, names: Iterable[str] = ()) -> tuple[ObjectKey, ...]:
    """The keys of the named pods (all the model's when ``names`` is empty): from the
    live pods, else from the placements recorded in Redis; a pod whose namespace is
    nowhere to be found is left out (a key with a guessed namespace finds nothing)."""
    wanted = tuple(dict.fromkeys(n for n in names if n))
    known: dict[str, ObjectKey] = {}
    for placement in evidence.state.placements:
        for pod in placement.pods:
            known.setdefault(pod, ObjectKey(placement.namespace, pod))
    if isinstance(evidence.kube, KubeEvidence):
        for rec in evidence.kube.pods:
            known[rec.name] = rec.key
    if not wanted:
        ordered = sorted(set(known.values()))
    else:
        ordered = [known[n] for n in wanted if n in known]
    return tuple(ordered[:MAX_POD_KEYS])


def logs(
    evidence: ModelEvidence,
    pods: tuple[ObjectKey, ...],
    around: tuple[float, float],
    *,
    containers: tuple[str, ...] = (),
    severity: str | None = None,
    text: str | None = None,
    events: bool = False,
) -> LogSearch | None:
    """A log search over ``around`` (clamped to now); None without any pod to read."""
    if not pods:
        return None
    start, end = around
    end = min(end, evidence.now)
    return LogSearch(
        pods=pods,
        start=min(start, end),
        end=end,
        containers=containers[:MAX_POD_KEYS],
        severity=severity,
        text=text,
        include_events=events,
    )


def lookup(
    graphql: str | None,
    *,
    logs: LogSearch | None = None,
    pods: tuple[ObjectKey, ...] = (),
    nodes: Iterable[str | None] = (),
) -> Lookup:
    kept_nodes = tuple(dict.fromkeys(n for n in nodes if n))[:MAX_NODES]
    return Lookup(logs=logs, pods=pods[:MAX_POD_KEYS], nodes=kept_nodes, graphql=graphql)
