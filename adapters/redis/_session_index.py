"""An owner's sessions, filtered before the page is cut (docs/redis-schema.md, "Model
indexes"): two round trips whatever the owner, never a wider page filtered afterwards.

Every member of the owners' sessions indexes (the candidates), then their scores in the
live or the closed sessions index (``ZMSCORE``): a candidate scored there matches, in
that order (newest first), so an entry that outlived its session (the closed index drops
sessions past their TTL) is not counted. Each command names one key.
"""

from __future__ import annotations

from openrl_inspect.adapters.redis._client import Pipe, Run
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.state import keys
from openrl_inspect.state.filters import MAX_CANDIDATES, SessionQuery, after
from openrl_inspect.state.paging import Page, Position


async def owned(run: Run, q: SessionQuery) -> Page:
    """One page of the owners' sessions in the asked state, counted exactly."""
    owner_keys = [keys.sessions_of_owner(o) for o in dict.fromkeys(q.owners)]
    if not owner_keys:
        return Page([], 0, False)

    def members(pipe: Pipe) -> None:
        for k in owner_keys:
            pipe.zrange(k, 0, MAX_CANDIDATES)

    raw = await run(members)
    sids = list(dict.fromkeys(str(m) for part in raw for m in part))
    if len(sids) > MAX_CANDIDATES:
        raise InvalidInput(f"more than {MAX_CANDIDATES} sessions match one owner")
    if not sids:
        return Page([], 0, False)
    state_key = keys.SESSIONS_LIVE if q.live else keys.SESSIONS_CLOSED
    (scores,) = await run(lambda pipe: pipe.execute_command("ZMSCORE", state_key, *sids))
    matches = [
        Position(float(s), sid) for sid, s in zip(sids, scores, strict=True) if s is not None
    ]
    matches.sort(key=lambda p: (p.score, p.member), reverse=True)
    rest = after(q.after, matches)
    return Page(rest[: q.first], len(matches), len(rest) > q.first)
