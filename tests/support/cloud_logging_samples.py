"""Sample worker log lines, with the expected answer worked out in plain Python.

``expected`` decides matches from the sample rows themselves, not from a filter, so a
test comparing an adapter's answer with it checks the filter the adapter sent.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from openrl_inspect.adapters.logs import SEVERITIES, LogQuery
from openrl_inspect.adapters.logs.memory import wire_entry

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PROJECT = "fake-project"


@dataclass(frozen=True)
class Row:
    timestamp: datetime
    insert_id: str
    severity: str
    model_id: str | None
    role: str | None
    pod: str | None
    container: str | None
    message: str
    structured: bool

    def wire(self) -> dict[str, Any]:
        return wire_entry(
            timestamp=self.timestamp,
            message=self.message,
            payload={"step": 7, "worker": self.pod} if self.structured else None,
            severity=self.severity,
            model_id=self.model_id,
            role=self.role,
            pod=self.pod,
            container=self.container,
            insert_id=self.insert_id,
            project=PROJECT,
        )


def sample_rows(count: int = 60) -> list[Row]:
    """Rows over ten minutes from T0; some share a timestamp to exercise tie-breaks."""
    models = itertools.cycle(["m-alpha", "m-beta", None])
    roles = itertools.cycle(["trainer", "rollout", "rollout", None])
    severities = itertools.cycle(["INFO", "WARNING", "DEBUG", "ERROR", "INFO", "CRITICAL", None])
    rows = []
    for i in range(count):
        model = next(models)
        severity = next(severities)
        rows.append(
            Row(
                timestamp=T0 + timedelta(seconds=10 * (i // 2)),
                insert_id=f"id-{(i * 7919) % 1000:04d}",
                severity=severity or "DEFAULT",
                model_id=model,
                role=next(roles),
                pod=f"{model or 'other'}-pod-{(i // 3) % 3}",
                container="worker" if i % 4 else "sidecar",
                message=f"step {i} loss={i / 7:.3f}" + (" NaN detected" if i % 9 == 0 else ""),
                structured=i % 5 == 0,
            )
        )
    return rows


def matches(row: Row, query: LogQuery) -> bool:
    if not query.start <= row.timestamp <= query.end:
        return False
    if (
        query.model_id is not None
        and row.model_id != query.model_id
        and row.pod not in query.model_pods
    ):
        return False
    if query.pod is not None and row.pod != query.pod:
        return False
    if query.role is not None and row.role != query.role:
        return False
    floor = query.severity_floor
    if floor is not None and SEVERITIES.index(row.severity) < SEVERITIES.index(floor.upper()):
        return False
    return query.text is None or query.text.casefold() in row.message.casefold()


def expected(rows: list[Row], query: LogQuery) -> list[str]:
    """The insert ids the query should return, in order, ignoring bounds."""
    chosen = sorted(
        (row for row in rows if matches(row, query)),
        key=lambda row: (row.timestamp, row.insert_id),
        reverse=query.newest_first,
    )
    return [row.insert_id for row in chosen]
