"""Reading models' rollups (docs/redis-schema.md, "Rollups"): the commands queued for a
batch of models, and their answers decoded one model at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openrl_inspect.adapters.redis._client import Pipe
from openrl_inspect.core.errors import BadRecord, DecodeError
from openrl_inspect.state import keys
from openrl_inspect.state.rollup import ModelRollup, decode


def queue_rollups(pipe: Pipe, *, requests: Sequence[tuple[str, int]]) -> None:
    """Two commands a model: the rollup hash, and its newest ``n`` step entries."""
    for mid, n in requests:
        pipe.execute_command("HGETALL", keys.rollup(mid), NEVER_DECODE=True)
        pipe.execute_command(
            "ZREVRANGE", keys.rollup_steps(mid), 0, max(0, n - 1), NEVER_DECODE=True
        )


def decode_rollups(
    requests: Sequence[tuple[str, int]], raw: list[Any]
) -> list[ModelRollup | BadRecord | None]:
    """One result per request: the rollup, ``None`` without one, or a ``BadRecord`` for a
    rollup that cannot be read (the reader then scans, as for a model without one)."""
    out: list[ModelRollup | BadRecord | None] = []
    for i, (mid, _) in enumerate(requests):
        h, members = raw[2 * i], raw[2 * i + 1]
        if isinstance(h, Exception) or isinstance(members, Exception):
            out.append(BadRecord("rollup", mid, "it is stored with the wrong Redis type"))
            continue
        try:
            out.append(decode(mid, _text(h), members))
        except DecodeError as exc:
            out.append(BadRecord("rollup", mid, str(exc)))
    return out


def _text(raw: dict[Any, Any]) -> dict[str, str]:
    # The rollup hash holds ASCII names and numbers; anything else is not the writer's.
    try:
        return {
            (k.decode() if isinstance(k, bytes) else str(k)): (
                v.decode() if isinstance(v, bytes) else str(v)
            )
            for k, v in raw.items()
        }
    except UnicodeDecodeError:
        raise DecodeError("the rollup hash is not UTF-8 text") from None
