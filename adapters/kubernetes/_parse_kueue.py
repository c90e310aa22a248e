"""Parsers for what Kueue queues: Workloads and the jobs they name (Job, JobSet)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openrl_inspect.adapters.kubernetes._parse import (
    Json,
    _conditions,
    _int,
    _list,
    _map,
    _meta,
    _str,
    _str_map,
    _unique,
    owner_refs,
    parse_time,
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
        value = _str_map(_map(_map(item, "template"), "metadata").get("labels")).get(key)
        if value:
            return value
    return None


def parse_workload(obj: Json, keys: LabelKeys = DEFAULT_LABELS) -> WorkloadRecord | None:
    meta = _meta(obj)
    if meta is None:
        return None
    namespace, name, uid, labels = meta
    spec, status = _map(obj, "spec"), _map(obj, "status")
    owners = owner_refs(_map(obj, "metadata"))
    admission = None
    raw_admission = _map(status, "admission")
    if raw_admission:
        admission = Admission(
            cluster_queue=_str(raw_admission, "clusterQueue") or "",
            pod_set_assignments=tuple(
                PodSetAssignment(
                    name=_str(item, "name") or "",
                    flavors=_str_map(item.get("flavors")),
                    resource_usage=_str_map(item.get("resourceUsage")),
                    count=_int(item.get("count")),
                )
                for item in _list(raw_admission, "podSetAssignments")
            ),
        )
    return WorkloadRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        labels=labels,
        model_id=labels.get(keys.model) or _template_model(_list(spec, "podSets"), keys.model),
        queue_name=_str(spec, "queueName"),
        priority=_int(spec.get("priority")),
        priority_class=_str(spec, "priorityClassName"),
        active=spec.get("active") is not False,
        pod_sets=tuple(
            PodSet(name=_str(item, "name") or "", count=_int(item.get("count")))
            for item in _list(spec, "podSets")
        ),
        conditions=_conditions(_list(status, "conditions")),
        admission=admission,
        requeue_count=_int(_map(status, "requeueState").get("count")),
        created=parse_time(_map(obj, "metadata").get("creationTimestamp")),
        job_uids=_unique([*(o.uid for o in owners), labels.get(KUEUE_JOB_UID_LABEL)]),
        owners=owners,
    )


# --- jobs --------------------------------------------------------------------------------


def parse_job(obj: Json, kind: str, keys: LabelKeys = DEFAULT_LABELS) -> JobRecord | None:
    """A batch/v1 Job or a JobSet (``kind``); both suspend with ``spec.suspend``."""
    meta = _meta(obj)
    if meta is None:
        return None
    namespace, name, uid, labels = meta
    metadata = _map(obj, "metadata")
    owners = [o.uid for o in owner_refs(metadata)]
    return JobRecord(
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        labels=labels,
        model_id=labels.get(keys.model),
        owner_uids=_unique([*owners, labels.get(JOBSET_UID_LABEL) if kind == "Job" else None]),
        suspended=_map(obj, "spec").get("suspend") is True,
        created=parse_time(metadata.get("creationTimestamp")),
    )
