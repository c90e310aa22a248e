"""Filters a page of models by what its documents select but cannot ask the API for
(owner, session, a model's state under its session): applied to the answer in place, so
a page may hold fewer items than asked and its cursor still goes on from the page's end.
Shared by the REST routes and the MCP tools."""

from __future__ import annotations

from typing import Any


def _keep(model: Any, owner: str | None, session: str | None, state: str | None) -> bool:
    return bool(
        model
        and (session is None or model.get("sessionId") == session)
        and (owner is None or (model.get("session") or {}).get("owner") == owner)
        and (state is None or model.get("state") == state)
    )


def inventory(
    data: dict[str, Any],
    owner: str | None = None,
    session: str | None = None,
    model_state: str | None = None,
) -> None:
    """``data`` of ``inventory``: the sessions of ``owner`` (or the one ``session``), and
    under each its models in ``model_state``."""
    page = data.get("sessions")
    if not isinstance(page, dict) or page.get("nodes") is None:
        return
    page["nodes"] = [
        s
        for s in page["nodes"]
        if s
        and (owner is None or s.get("owner") == owner)
        and (session is None or s.get("id") == session)
    ]
    for s in page["nodes"]:
        listed = s.get("models")
        if model_state is not None and isinstance(listed, dict) and listed.get("nodes") is not None:
            listed["nodes"] = [m for m in listed["nodes"] if _keep(m, None, None, model_state)]
