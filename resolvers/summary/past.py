"""What outlives a model's pods: the objects its recorded placements name, and their Events.

Redis keeps every placement Kueue gave the model (node, pods, Workload, GPU UUIDs,
admitted and released times) long after Kubernetes deleted the pods. From them: the
pods and Workloads that are gone, whose Events the watch cache holds for the API
server's TTL (an hour by default) and Cloud Logging's events log far longer; the nodes
they ran on (still there? Ready? tainted?) and the GPUs (tainted by a DeviceTaintRule?).

The events log is read only for what the watch cache can no longer hold: a model with
a gone pod or Workload whose placement began before the TTL. Every model of a request
shares one read (``LogLoaders.events_log``), so the past costs the same calls for ten
models as for two hundred.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes import (
    EventRecord,
    PodRecord,
    Regarding,
    WorkloadRecord,
)
from openrl_inspect.core.errors import BackendError, BackendNotConfigured
from openrl_inspect.loaders.logs import EventsLogRead
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.cluster.names import valid_dns_label, valid_dns_name
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis.evidence import Unknown
from openrl_inspect.state.records import PlacementRecord

# The API server keeps Events this long (--event-ttl, an hour by default): older ones
# are only in Cloud Logging's events log.
EVENT_TTL_S = 3600.0
# Around a placement: Events just before its admission and after its release belong
# to it (the preemption that ended it, the node going away).
BEFORE_S = 120.0
AFTER_S = 900.0


@dataclass(frozen=True, slots=True)
class Recorded:
    """What a model's recorded placements name that Kubernetes no longer has, and
    the nodes and GPUs they ran on."""

    gone_pods: tuple[tuple[str, str], ...]
    gone_workloads: tuple[tuple[str, str], ...]
    nodes: tuple[str, ...]
    gpu_uuids: tuple[str, ...]
    # The window the gone objects lived in, when any is gone.
    window: tuple[float, float] | None

    def regarding(self, nodes: bool) -> list[Regarding]:
        """The gone objects and (``nodes``) their nodes, as Events name them."""
        out: list[Regarding] = [("Pod", ns, n) for ns, n in self.gone_pods]
        out += [("Workload", ns, n) for ns, n in self.gone_workloads]
        out += [("Node", "", n) for n in self.nodes] if nodes else []
        return out


def recorded(
    placements: Sequence[PlacementRecord],
    pods: Sequence[PodRecord],
    workloads: Sequence[WorkloadRecord],
    now: float,
) -> Recorded:
    """The placements' objects against what Kubernetes has now. Names OpenRL recorded
    that cannot be Kubernetes names are left out (never checked by an API server)."""
    live_pods = {(p.namespace, p.name) for p in pods}
    live_workloads = {(w.namespace, w.name) for w in workloads}
    gone_pods: dict[tuple[str, str], None] = {}
    gone_workloads: dict[tuple[str, str], None] = {}
    nodes: dict[str, None] = {}
    uuids: dict[str, None] = {}
    starts: list[float] = []
    ends: list[float] = []
    for p in placements:
        if valid_dns_name(p.node):
            nodes[p.node] = None
        uuids.update(dict.fromkeys(u for u in p.gpu_ids if u))
        if not valid_dns_label(p.namespace):
            continue
        gone = False
        for name in p.pods:
            if valid_dns_name(name) and (p.namespace, name) not in live_pods:
                gone_pods[p.namespace, name] = None
                gone = True
        if valid_dns_name(p.workload) and (p.namespace, p.workload) not in live_workloads:
            gone_workloads[p.namespace, p.workload] = None
            gone = True
        if gone or p.released_at is not None:
            begin = p.admitted_at if p.admitted_at is not None else p.released_at
            if begin is not None:
                starts.append(begin - BEFORE_S)
                ends.append(min(now, (p.released_at or now) + AFTER_S))
    window = (min(starts), max(ends)) if starts else None
    return Recorded(tuple(gone_pods), tuple(gone_workloads), tuple(nodes), tuple(uuids), window)


def needs_events_log(rec: Recorded, now: float) -> bool:
    """Whether the watch cache may have lost Events the model's past needs."""
    return (
        rec.window is not None
        and bool(rec.gone_pods or rec.gone_workloads)
        and rec.window[0] < now - EVENT_TTL_S
    )


async def events_log(ctx: Context, rec: Recorded) -> tuple[list[EventRecord], Unknown | None]:
    """The gone objects' Events from Cloud Logging's events log, in their window, and
    what could not be read. A model whose past the watch cache still covers reads
    nothing; without Cloud Logging, the loss is said only for a model that needed it."""
    if not needs_events_log(rec, ctx.now) or rec.window is None:
        return [], None
    start, end = rec.window
    try:
        # A node's Events can name any owner's pods: only for who sees everything.
        objects = tuple(rec.regarding(scope.sees_everything(ctx)))
        answer = await ctx.logs.events_log.load(EventsLogRead(objects, start, end))
    except BackendNotConfigured as exc:
        return [], Unknown("cloud_logging", exc.code, "events older than the watch cache: "
                           "Cloud Logging is not configured")  # fmt: skip
    except BackendError as exc:
        return [], Unknown("cloud_logging", exc.code, exc.message)
    # A cut answer (``complete`` False) still holds the newest Events of the window,
    # the ones nearest to what ended the model: they stand.
    return list(answer.events), None


def merged(*groups: Sequence[EventRecord]) -> list[EventRecord]:
    """Events from the watch cache and the events log, each sighting once (the same
    Event read from both: same object, reason and moment), oldest first."""
    seen: dict[tuple[str, str, str, str | None, int], EventRecord] = {}
    for group in groups:
        for e in group:
            at = int(e.last_at or e.first_at or 0.0)
            ref = e.regarding
            seen.setdefault((ref.kind, ref.namespace, ref.name, e.reason, at), e)
    return sorted(seen.values(), key=lambda e: (e.last_at or e.first_at or 0.0, e.name))
