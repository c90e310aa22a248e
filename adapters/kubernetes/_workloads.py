"""Parsers for what Kueue queues: Workloads and the jobs they name (Job, JobSet).

Workloads are read in ``kueue.x-k8s.io/v1beta2`` or ``v1beta1``. Of the fields read,
only the priority class differs: v1beta2 names it in ``spec.priorityClassRef`` (group,
kind, name), v1beta1 in ``spec.priorityClassName`` with ``spec.priorityClassSource``
saying which kind it is; conditions, admission and requeue state are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openrl_inspect.adapters.kubernetes._json import (
    Json,
    as_int,
    as_list,
    as_map,
    as_str,
    conditions,
    meta,
    owner_refs,
    parse_time,
    read_version,
    str_map,
    unique,
)
from openrl_inspect.adapters.kubernetes._records import (
    DEFAULT_LABELS,
    JOBSET_UID_LABEL,
    KUEUE_JOB_UID_LABEL,
    Admission,
    JobRecord,
    LabelKeys,
    PodSet,
    PodSetAssignment,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._resources import KUEUE_VERSIONS

# --- Kueue workloads ---------------------------------------------------------------------

# v1beta1's priorityClassSource -> the kind v1beta2's priorityClassRef names.
_PRIORITY_SOURCES = {
    "kueue.x-k8s.io/workloadpriorityclass": "WorkloadPriorityClass",
    "scheduling.k8s.io/priorityclass": "PriorityClass",
}


def _priority_class(spec: Json, version: str) -> tuple[str | None, str | None]:
    """(name, kind) of the Workload's priority class, as its version writes them."""
    if version == "v1beta1":
        source = as_str(spec, "priorityClassSource") or ""
        return as_str(spec, "priorityClassName") or None, _PRIORITY_SOURCES.get(source)
    ref = as_map(spec, "priorityClassRef")
    return as_str(ref, "name") or None, as_str(ref, "kind") or None


def _template_model(pod_sets: Sequence[Any], key: str) -> str | None:
    """The model label of the pod sets' templates: Kueue copies the job's pod template
    into the Workload, labels included, whatever ``labelKeysToCopy`` says."""
    for item in pod_sets:
        value = str_map(as_map(as_map(item, "template"), "metadata").get("labels")).get(key)
        if value:
            return value
    return None


def parse_workload(
    obj: Json, version: str | None = None, keys: LabelKeys = DEFAULT_LABELS
) -> WorkloadRecord | None:
    """A Workload read at ``version`` (default: its own ``apiVersion``'s)."""
    identity = meta(obj)
    if identity is None:
        return None
    namespace, name, uid, labels = identity
    spec, status = as_map(obj, "spec"), as_map(obj, "status")
    owners = owner_refs(as_map(obj, "metadata"))
    priority_class, priority_kind = _priority_class(
        spec, read_version(obj, version, KUEUE_VERSIONS)
    )
    admission = None
    raw_admission = as_map(status, "admission")
    if raw_admission:
        admission = Admission(
            cluster_queue=as_str(raw_admission, "clusterQueue") or "",
            pod_set_assignments=tuple(
                PodSetAssignment(
                    name=as_str(item, "name") or "",
                    flavors=str_map(item.get("flavors")),
                    resource_usage=str_map(item.get("resourceUsage")),
                    count=as_int(item.get("count")),
                )
                for item in as_list(raw_admission, "podSetAssignments")
            ),
        )
    return WorkloadRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        labels=labels,
        model_id=labels.get(keys.model) or _template_model(as_list(spec, "podSets"), keys.model),
        queue_name=as_str(spec, "queueName"),
        priority=as_int(spec.get("priority")),
        priority_class=priority_class,
        priority_class_kind=priority_kind,
        active=spec.get("active") is not False,
        pod_sets=tuple(
            PodSet(name=as_str(item, "name") or "", count=as_int(item.get("count")))
            for item in as_list(spec, "podSets")
        ),
        conditions=conditions(as_list(status, "conditions")),
        admission=admission,
        requeue_count=as_int(as_map(status, "requeueState").get("count")),
        created=parse_time(as_map(obj, "metadata").get("creationTimestamp")),
        job_uids=unique([*(o.uid for o in owners), labels.get(KUEUE_JOB_UID_LABEL)]),
        owners=owners,
    )


# --- jobs --------------------------------------------------------------------------------


def parse_job(obj: Json, kind: str, keys: LabelKeys = DEFAULT_LABELS) -> JobRecord | None:
    """A batch/v1 Job or a JobSet (``kind``); both suspend with ``spec.suspend``."""
    identity = meta(obj)
    if identity is None:
        return None
    namespace, name, uid, labels = identity
    metadata = as_map(obj, "metadata")
    owners = [o.uid for o in owner_refs(metadata)]
    return JobRecord(
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        labels=labels,
        model_id=labels.get(keys.model),
        owner_uids=unique([*owners, labels.get(JOBSET_UID_LABEL) if kind == "Job" else None]),
        suspended=as_map(obj, "spec").get("suspend") is True,
        created=parse_time(metadata.get("creationTimestamp")),
    )
