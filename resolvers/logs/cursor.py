"""The logs cursor: every side's position, the window and a fingerprint of the filters."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from openrl_inspect.core import cursor as codec
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.loaders.logs import WorkerBackend
from openrl_inspect.resolvers.logs.args import LogArgs
from openrl_inspect.state.keys import valid_id

_KIND = "logs"


@dataclass
class Resume:
    """Where a logs answer resumes: the worker backend, the window, each side's position."""

    backend: WorkerBackend | None
    start: datetime
    end: datetime
    workers: dict[str, list[Any]] = field(default_factory=dict)
    clients: dict[str, list[Any] | None] = field(default_factory=dict)


def fingerprint(owner: tuple[str, str], args: LogArgs) -> str:
    return codec.fingerprint(
        *owner,
        args.severity,
        args.text,
        args.role,
        args.pod,
        args.newest_first,
        args.worker_logs,
        args.client_logs,
        args.events,
    )


class EntryCursor:
    """The cursor that resumes after one entry of an answer: every side's position at
    that entry, encoded only when it is read (most answers select no edge's cursor)."""

    __slots__ = ("_print", "_state")

    def __init__(self, print_: str, state: Resume) -> None:
        self._print = print_
        self._state = state

    def __str__(self) -> str:
        return encode(self._print, self._state)


def encode(print_: str, state: Resume) -> str:
    return codec.encode(
        _KIND,
        print_,
        state.backend,
        state.start.isoformat(),
        state.end.isoformat(),
        state.workers,
        state.clients,
    )


def decode(cursor: str, print_: str) -> Resume:
    refusal = "the cursor is not valid for these logs; start again without it"
    refused = InvalidInput(refusal)
    made_for, backend, start_, end_, workers, clients = codec.decode(_KIND, cursor, 6, refusal)
    try:
        if made_for != print_ or backend not in (None, "cloud_logging", "kubernetes"):
            raise ValueError
        start, end = datetime.fromisoformat(start_), datetime.fromisoformat(end_)
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError
        if not isinstance(workers, dict) or not isinstance(clients, dict):
            raise ValueError
        for position in workers.values():
            cursor_, skip, limit, pods, events = position
            ok = (
                (cursor_ is None or isinstance(cursor_, str))
                and _is_int(skip, 0, 10_000)
                and _is_int(limit, 1, 10_000)
                and isinstance(pods, list)
                and all(isinstance(p, str) for p in pods)
                and isinstance(events, list)
                and all(_is_object(o) for o in events)
            )
            if not ok:
                raise ValueError
        for mid, after in clients.items():
            if not valid_id(mid):
                raise ValueError
            if after is not None:
                score, member = after
                if not isinstance(score, int | float) or not isinstance(member, str):
                    raise ValueError
    except (ValueError, TypeError, KeyError):
        raise refused from None
    return Resume(backend, start, end, workers, clients)


def _is_object(value: Any) -> bool:
    """An event object as a cursor keeps it: [kind, namespace, name]."""
    return isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value)


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
