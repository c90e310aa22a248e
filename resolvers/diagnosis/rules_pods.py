"""Causes in the model's pods: OOM kills, crash loops, image pulls, container config
errors, failed pods, and pods evicted or preempted from their node.

Only what happened recently counts (``Thresholds.recent_s`` before now, or before a
failed model's failure): a container OOM-killed an hour ago and running fine since is
history, not a cause.
"""

from __future__ import annotations

from openrl_inspect.adapters.kubernetes import ContainerState, EventRecord, PodRecord
from openrl_inspect.core.domain import CauseKind, ModelState
from openrl_inspect.resolvers.diagnosis import lookups
from openrl_inspect.resolvers.diagnosis.causes import Finding, Lookup
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence, ModelEvidence
from openrl_inspect.resolvers.diagnosis.text import clip, dur, fact, facts, ref, statement

IMAGE_REASONS = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
)
CONFIG_REASONS = frozenset(
    {"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}
)
NODE_OOM_REASONS = frozenset({"OOMKilling", "SystemOOM"})
# DisruptionTarget reasons (KEP-3329) for a pod the cluster is taking down.
_PREEMPTION = "PreemptionByScheduler"


def _events(kube: KubeEvidence, kind: str, namespace: str, name: str) -> list[EventRecord]:
    found = [
        e
        for e in kube.events
        if (e.regarding.kind, e.regarding.namespace, e.regarding.name) == (kind, namespace, name)
    ]
    return sorted(found, key=lambda e: (e.last_at or e.first_at or 0.0, e.name))


def _refs(pod: PodRecord) -> tuple[str, ...]:
    node = (ref("Node", "", pod.node_name),) if pod.node_name else ()
    return (ref("Pod", pod.namespace, pod.name), *node)


def _where(pod: PodRecord, c: ContainerState) -> str:
    return f"container {c.name} of pod {pod.name}"


def _next(
    evidence: ModelEvidence,
    pod: PodRecord,
    around: tuple[float, float],
    containers: tuple[str, ...] = (),
    severity: str | None = None,
) -> Lookup:
    return lookups.lookup(
        lookups.pod_query(pod.key),
        logs=lookups.logs(
            evidence, (pod.key,), around, containers=containers, severity=severity, events=True
        ),
        pods=(pod.key,),
        nodes=[pod.node_name],
    )


def _oom(
    evidence: ModelEvidence, kube: KubeEvidence, pod: PodRecord, c: ContainerState
) -> Finding | None:
    end = c.last_termination
    if c.state == "terminated" and c.reason == "OOMKilled":
        exit_code, at = c.exit_code, c.finished_at
    elif end is not None and end.oom_killed:
        exit_code, at = end.exit_code, end.finished_at
    else:
        return None
    if not evidence.recent(at):
        return None
    when = at or evidence.now
    node_oom = [
        e
        for e in _events(kube, "Node", "", pod.node_name or "")
        if e.reason in NODE_OOM_REASONS and abs((e.last_at or e.first_at or 0.0) - when) <= 300
    ]
    now_state = f"; now {c.reason}" if c.state == "waiting" and c.reason else ""
    return Finding(
        CauseKind.OOM_KILLED,
        statement(
            f"{_where(pod, c).capitalize()} OOM-killed {dur(evidence.now - when)} ago "
            f"(exit {exit_code}), {c.restart_count} restart(s){now_state}"
        ),
        since=at,
        facts=facts(
            fact("pod", pod.name),
            fact("container", c.name),
            fact("exit_code", exit_code),
            fact("killed_at", at, "unix_s"),
            fact("restarts", c.restart_count),
            fact("state", c.reason if c.state == "waiting" else c.state),
            fact("node", pod.node_name),
            fact("node_oom", node_oom[-1].note if node_oom else None),
        ),
        refs=_refs(pod),
        next=_next(evidence, pod, (when - 300.0, when + 60.0), (c.name,)),
        about=ref("Pod", pod.namespace, pod.name),
        pods=(pod.name,),
        clause=f"its {pod.worker_role or 'worker'} pod was OOMKilled ({c.restart_count} "
        f"restart(s), exit {exit_code}" + (f", limit {c.memory_limit})" if c.memory_limit else ")"),
    )


def _crash_loop(evidence: ModelEvidence, pod: PodRecord, c: ContainerState) -> Finding | None:
    end = c.last_termination
    backing_off = c.state == "waiting" and c.reason == "CrashLoopBackOff"
    restarting = (
        c.restart_count >= evidence.thresholds.crash_restarts
        and end is not None
        and evidence.recent(end.finished_at)
    )
    if not (backing_off or restarting) or (end is not None and end.oom_killed):
        return None
    at = end.finished_at if end else None
    exit_note = f", last exit {end.exit_code} ({end.reason})" if end else ""
    return Finding(
        CauseKind.CRASH_LOOP,
        statement(
            f"{_where(pod, c).capitalize()} crash-looping: {c.restart_count} restart(s)"
            f"{exit_note}" + (f" {dur(evidence.now - at)} ago" if at else "")
        ),
        since=(end.started_at if end else None) or pod.started,
        facts=facts(
            fact("pod", pod.name),
            fact("container", c.name),
            fact("restarts", c.restart_count),
            fact("exit_code", end.exit_code if end else None),
            fact("reason", end.reason if end else c.reason),
            fact("message", (end.message if end else None) or c.message),
            fact("last_exit_at", at, "unix_s"),
        ),
        refs=(ref("Pod", pod.namespace, pod.name),),
        next=_next(
            evidence,
            pod,
            ((at or evidence.now) - 300.0, (at or evidence.now) + 30.0),
            (c.name,),
            "ERROR",
        ),
        about=ref("Pod", pod.namespace, pod.name),
        pods=(pod.name,),
        clause=f"its {pod.worker_role or 'worker'} pod is crash-looping ({c.restart_count} "
        "restart(s)" + (f", last exit {end.exit_code})" if end else ")"),
    )


def _detail(c: ContainerState) -> str:
    """The kubelet's message without the image it repeats (``Back-off pulling image
    "x": ErrImagePull: rpc error: ...``): the statement names the image already."""
    message = c.message or ""
    if c.image and f'"{c.image}"' in message:
        message = message.split(f'"{c.image}"', 1)[1].lstrip(": ")
    return message


def _waiting(evidence: ModelEvidence, pod: PodRecord, c: ContainerState) -> Finding | None:
    if c.state != "waiting" or c.reason not in IMAGE_REASONS | CONFIG_REASONS:
        return None
    image = c.reason in IMAGE_REASONS
    since = pod.started or pod.created
    what = f"cannot pull {c.image or 'its image'}" if image else "cannot be created"
    return Finding(
        CauseKind.IMAGE_PULL if image else CauseKind.CONTAINER_CONFIG,
        statement(
            f"Pod {pod.name}/{c.name} {what} for {dur(evidence.now - (since or evidence.now))} "
            f"({c.reason}): {_detail(c)}"
        ),
        since=since,
        facts=facts(
            fact("pod", pod.name),
            fact("container", c.name),
            fact("reason", c.reason),
            fact("image", c.image),
            fact("message", c.message),
        ),
        refs=(ref("Pod", pod.namespace, pod.name),),
        next=_next(evidence, pod, (since or evidence.now, evidence.now)),
    )


def _containers(evidence: ModelEvidence, kube: KubeEvidence, pod: PodRecord) -> list[Finding]:
    found: list[Finding] = []
    for c in pod.containers:
        for rule in (_waiting, _crash_loop):
            finding = rule(evidence, pod, c)
            if finding is not None:
                found.append(finding)
        oom = _oom(evidence, kube, pod, c)
        if oom is not None:
            found.append(oom)
    return found


def _disruption(pod: PodRecord) -> tuple[str | None, str | None, float | None] | None:
    for cond in pod.conditions:
        if cond.type == "DisruptionTarget" and cond.status == "True":
            return cond.reason, cond.message, cond.last_transition
    return None


def _pod_end(evidence: ModelEvidence, kube: KubeEvidence, pod: PodRecord) -> Finding | None:
    """A pod taken down (DisruptionTarget, an Evicted Event) or failed."""
    evicted = [e for e in _events(kube, "Pod", pod.namespace, pod.name) if e.reason == "Evicted"]
    disruption = _disruption(pod)
    ends = [c.finished_at for c in pod.containers if c.finished_at is not None]
    if disruption is not None or evicted:
        reason, message, at = disruption or (None, None, None)
        if evicted:
            message, at = evicted[-1].note or message, at or evicted[-1].last_at
        kind = CauseKind.PREEMPTED if reason == _PREEMPTION else CauseKind.EVICTED
        verb = "preempted" if kind == CauseKind.PREEMPTED else "evicted"
        text = f"Pod {pod.name} {verb} from {pod.node_name or '?'} ({reason or 'Evicted'})"
    elif pod.phase == "Failed":
        at = max(ends) if ends else None
        codes = ", ".join(
            f"{c.name} exit {c.exit_code}" for c in pod.containers if c.exit_code is not None
        )
        reason, message = "Failed", codes or None
        kind, text = CauseKind.POD_FAILED, f"Pod {pod.name} failed on {pod.node_name or '?'}"
    else:
        return None
    if at is not None and not evidence.recent(at):
        return None
    ago = f" {dur(evidence.now - at)} ago" if at else ""
    return Finding(
        kind,
        statement(f"{text}{ago}: {clip(message or 'no message', 90)}"),
        since=at,
        facts=facts(
            fact("pod", pod.name),
            fact("node", pod.node_name),
            fact("reason", reason),
            fact("at", at, "unix_s"),
            fact("message", message),
        ),
        refs=(ref("Pod", pod.namespace, pod.name),),
        next=_next(evidence, pod, ((at or evidence.now) - 300.0, (at or evidence.now) + 60.0)),
        about=ref("Pod", pod.namespace, pod.name),
        pods=(pod.name,),
        clause=f"its {pod.worker_role or 'worker'} pod "
        + {CauseKind.POD_FAILED: "failed", CauseKind.PREEMPTED: "was preempted"}.get(
            kind, "was evicted"
        ),
    )


def rules(evidence: ModelEvidence) -> list[Finding]:
    kube = evidence.kube
    if not isinstance(kube, KubeEvidence) or evidence.model.state == ModelState.ENDED:
        return []
    found: list[Finding] = []
    for pod in sorted(kube.pods, key=lambda p: p.key):
        if pod.phase == "Succeeded":
            continue
        end = _pod_end(evidence, kube, pod)
        found += [end] if end else []
        if pod.phase != "Failed":
            found += _containers(evidence, kube, pod)
        else:
            found += [f for f in _containers(evidence, kube, pod) if f.kind == CauseKind.OOM_KILLED]
    return found
