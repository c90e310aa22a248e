"""Parsers for what Kueue queues: Workloads and the jobs they name (Job, JobSet)."""

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

# --- Kueue workloads ---------------------------------------------------------------------


def _template_model(pod_sets: Sequence[Any], key: str) -> str | None:
    """The model label of the pod sets' templates: Kueue copies the job's pod template
    into the Workload, labels included, whatever ``labelKeysToCopy`` says."""
    for item in pod_sets:
        value = str_map(as_map(as_map(item, "template"), "metadata").get("labels")).get(key)
        if value:
            return value
    return None


def parse_workload(obj: Json, keys: LabelKeys = DEFAULT_LABELS) -> WorkloadRecord | None:
    identity = meta(obj)
    if identity is None:
        return None
    namespace, name, uid, labels = identity
    spec, status = as_map(obj, "spec"), as_map(obj, "status")
    owners = owner_refs(as_map(obj, "metadata"))
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
        priority_class=as_str(spec, "priorityClassName"),
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
