"""The logs cursor: every side's position, the window and a fingerprint of the filters."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from openrl_inspect.errors import InvalidInput
from openrl_inspect.loaders.logs import WorkerBackend
from openrl_inspect.resolvers.logs.args import LogArgs
from openrl_inspect.state.keys import valid_id

_MAX_CURSOR_CHARS = 65_536


@dataclass
class _Resume:
    backend: WorkerBackend | None
    start: datetime
    end: datetime
    workers: dict[str, list[Any]] = field(default_factory=dict)
    clients: dict[str, list[Any] | None] = field(default_factory=dict)


def _fingerprint(owner: tuple[str, str], args: LogArgs) -> str:
    body = [
        *owner,
        args.severity,
        args.text,
        args.role,
        args.pod,
        args.newest_first,
        args.worker_logs,
        args.client_logs,
    ]
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _encode(print_: str, state: _Resume) -> str:
    body = {
        "v": 1,
        "q": print_,
        "b": state.backend,
        "s": state.start.isoformat(),
        "e": state.end.isoformat(),
        "w": state.workers,
        "c": state.clients,
    }
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str, print_: str) -> _Resume:
    refused = InvalidInput("the cursor is not valid for these logs; start again without it")
    if not 0 < len(cursor) <= _MAX_CURSOR_CHARS:
        raise refused
    try:
        body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(body, dict) or body.get("v") != 1 or body.get("q") != print_:
            raise ValueError
        backend = body["b"]
        if backend not in (None, "cloud_logging", "kubernetes"):
            raise ValueError
        start, end = datetime.fromisoformat(body["s"]), datetime.fromisoformat(body["e"])
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError
        workers, clients = body["w"], body["c"]
        if not isinstance(workers, dict) or not isinstance(clients, dict):
            raise ValueError
        for position in workers.values():
            cursor_, skip, limit, pods = position
            ok = (
                (cursor_ is None or isinstance(cursor_, str))
                and _is_int(skip, 0, 10_000)
                and _is_int(limit, 1, 10_000)
                and isinstance(pods, list)
                and all(isinstance(p, str) for p in pods)
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
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise refused from None
    return _Resume(backend, start, end, workers, clients)


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
