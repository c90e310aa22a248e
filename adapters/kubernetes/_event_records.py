"""Event records: what events.k8s.io/v1 Events say about the objects a model uses."""

from __future__ import annotations

from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes._records import ObjectKey


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An Event's ``regarding`` (or ``related``) object. ``namespace`` is ``""`` for
    cluster-scoped kinds (Node); ``uid`` tells apart objects reusing a name."""

    kind: str
    namespace: str
    name: str
    uid: str | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One Event, folded over the old core/v1 fields the API server still fills.

    ``count`` is ``series.count`` (or ``deprecatedCount``, else 1); ``first_at`` is
    ``eventTime`` (or ``deprecatedFirstTimestamp``, else creation); ``last_at`` is
    ``series.lastObservedTime`` (or ``deprecatedLastTimestamp``, else ``first_at``).
    ``type`` is Normal or Warning; ``note`` the human-readable message (capped).
    ``reporting_controller``/``reporting_instance`` fall back to ``deprecatedSource``'s
    component and host, which is all events written through core/v1 carry.
    """

    namespace: str
    name: str
    uid: str
    type: str | None
    reason: str | None
    note: str | None
    action: str | None
    regarding: ObjectRef
    related: ObjectRef | None
    reporting_controller: str | None
    count: int
    first_at: float | None
    last_at: float | None
    reporting_instance: str | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)

    @property
    def warning(self) -> bool:
        return self.type == "Warning"
