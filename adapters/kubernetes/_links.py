"""How the cluster's objects find their model: ownership first, labels as a shortcut.

Kueue copies job labels to a Workload only when ``labelKeysToCopy`` says so; by default a
Workload names its job by owner reference and ``kueue.x-k8s.io/job-uid``, a batch Job's
pods name it by owner reference and ``batch.kubernetes.io/controller-uid``, and a
JobSet's Jobs and pods carry ``jobset.sigs.k8s.io/jobset-uid``. So a model's objects are
the ones labelled with it plus everything that shares a job UID with them: its jobs
(labelled), their child Jobs, its labelled pods' jobs, and the jobs of Workloads whose
pod template carries the label. Every step is an index lookup, never a scan, and never
leaves a namespace.

An object labelled with another model is never pulled in by ownership: labels, where
present, win.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from openrl_inspect.adapters.kubernetes._devices import ClaimRecord, TaintRuleRecord
from openrl_inspect.adapters.kubernetes._event_store import EventStore, event_store
from openrl_inspect.adapters.kubernetes._records import (
    JobRecord,
    NodeRecord,
    ObjectKey,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._store import (
    SliceStore,
    Store,
    claim_store,
    job_store,
    node_store,
    pod_store,
    slice_store,
    taint_rule_store,
    workload_store,
)

Linked = TypeVar("Linked", PodRecord, WorkloadRecord)
# A job by (namespace, UID): owner references and the controllers' labels only ever
# name an object of the same namespace (Kubernetes ignores cross-namespace owners, and
# labels are set by anyone), so a link never leaves its namespace.
Link = tuple[str, str]
# Owner levels followed from an object to a labelled job: a Job, its JobSet, and one
# more for wrappers; owner labels can form cycles, so the walk is bounded.
MAX_OWNER_DEPTH = 4


def job_links(namespace: str, uids: Iterable[str]) -> list[Link]:
    return [(namespace, u) for u in uids if u]


@dataclass
class LinkedStores:
    """The kinds' stores and the ownership links between them."""

    pods: Store[PodRecord] = field(default_factory=pod_store)
    nodes: Store[NodeRecord] = field(default_factory=node_store)
    workloads: Store[WorkloadRecord] = field(default_factory=workload_store)
    slices: SliceStore = field(default_factory=slice_store)
    claims: Store[ClaimRecord] = field(default_factory=claim_store)
    jobs: Store[JobRecord] = field(default_factory=job_store)
    jobsets: Store[JobRecord] = field(default_factory=job_store)
    taint_rules: Store[TaintRuleRecord] = field(default_factory=taint_rule_store)
    events: EventStore = field(default_factory=event_store)

    # --- model -> objects ---------------------------------------------------------------

    def model_job_uids(self, mid: str) -> set[Link]:
        """Every job that is the model's, however it is known, as (namespace, uid)."""
        links: set[Link] = set()
        for store in (self.jobs, self.jobsets):
            links.update(
                (j.namespace, j.uid) for j in _records(store, store.keys_for("model", mid)) if j.uid
            )
        for pod in _records(self.pods, self.pods.keys_for("model", mid)):
            # The pod itself too: Kueue's plain-pod integration makes it the owner.
            links.update(job_links(pod.namespace, (*pod.job_uids, pod.uid)))
        for w in _records(self.workloads, self.workloads.keys_for("model", mid)):
            links.update(job_links(w.namespace, w.job_uids))
        # A JobSet's child Jobs name it as their owner: their pods may carry only theirs.
        for link in list(links):
            children = _records(self.jobs, self.jobs.keys_for("owner", link))
            links.update((j.namespace, j.uid) for j in children)
        return links

    def model_pod_keys(self, mid: str) -> set[ObjectKey]:
        return self._model_keys(self.pods, mid)

    def model_workload_keys(self, mid: str) -> set[ObjectKey]:
        return self._model_keys(self.workloads, mid)

    def _model_keys(self, store: Store[Linked], mid: str) -> set[ObjectKey]:
        keys = set(store.keys_for("model", mid))
        for link in self.model_job_uids(mid):
            for key in store.keys_for("job", link):
                record = store.get(key)
                # Unlabelled: the model its own jobs name, if any, decides.
                if record is None or record.model_id is not None:
                    continue
                if self.with_model(record).model_id == mid:
                    keys.add(key)
        return keys

    # --- object -> model ----------------------------------------------------------------

    def job_model(self, namespace: str, uids: Iterable[str]) -> str | None:
        """The model of the first of these jobs (or of the jobs owning them, up to
        ``MAX_OWNER_DEPTH`` levels) that has one. A breadth-first walk with a visited
        set: owner labels are set by anyone, and may name each other in a cycle."""
        frontier = [(namespace, u) for u in uids if u]
        seen: set[Link] = set()
        for _ in range(MAX_OWNER_DEPTH):
            owners: list[Link] = []
            for link in frontier:
                if link in seen:
                    continue
                seen.add(link)
                for store in (self.jobs, self.jobsets):
                    for job in _records(store, store.keys_for("uid", link)):
                        if job.model_id:
                            return job.model_id
                        owners += job_links(job.namespace, job.owner_uids)
            if not owners:
                return None
            frontier = owners
        return None

    def workload_model(self, w: WorkloadRecord) -> str | None:
        if w.model_id:
            return w.model_id
        found = self.job_model(w.namespace, w.job_uids)
        if found:
            return found
        for link in job_links(w.namespace, w.job_uids):
            for pod in _records(self.pods, self.pods.keys_for("job", link)):
                if pod.model_id:
                    return pod.model_id
        return None

    def pod_model(self, pod: PodRecord) -> str | None:
        if pod.model_id:
            return pod.model_id
        found = self.job_model(pod.namespace, pod.job_uids)
        if found:
            return found
        for link in job_links(pod.namespace, (*pod.job_uids, pod.uid)):
            for w in _records(self.workloads, self.workloads.keys_for("job", link)):
                if w.model_id:
                    return w.model_id
        return None

    def with_model(self, record: Linked) -> Linked:
        """The record with its model filled in from ownership when it has no label."""
        if record.model_id is not None:
            return record
        if isinstance(record, PodRecord):
            mid = self.pod_model(record)
        else:
            mid = self.workload_model(record)
        return record if mid is None else dataclasses.replace(record, model_id=mid)

    # --- workload -> pods ---------------------------------------------------------------

    def workload_pod_keys(self, w: WorkloadRecord) -> set[ObjectKey]:
        """The pods of the job a Workload queues (a JobSet's through its Jobs too; for
        Kueue's plain-pod integration, the pod that owns it)."""
        links = set(job_links(w.namespace, w.job_uids))
        for link in list(links):
            children = _records(self.jobs, self.jobs.keys_for("owner", link))
            links.update((j.namespace, j.uid) for j in children)
        keys: set[ObjectKey] = set()
        for link in links:
            keys.update(self.pods.keys_for("job", link))
        return keys


R = TypeVar("R", PodRecord, WorkloadRecord, JobRecord, ClaimRecord)


def _records(store: Store[R], keys: Iterable[ObjectKey]) -> Iterable[R]:
    for key in keys:
        record = store.get(key)
        if record is not None:
            yield record
