"""Filters an answer by what its document selects but cannot ask the API for: a model's
state under its session (a session's models take no state argument). Applied to the
answer in place, so a session may list fewer models than asked; its count stays the
one before filtering. Owners and sessions are the API's own filters (before the page is
cut), never applied here."""

from __future__ import annotations

from typing import Any


def inventory(data: dict[str, Any], model_state: str | None = None) -> None:
    """``data`` of ``inventory``: under each session, its models in ``model_state``."""
    page = data.get("sessions")
    if model_state is None or not isinstance(page, dict) or page.get("nodes") is None:
        return
    for s in page["nodes"]:
        listed = s.get("models") if s else None
        if isinstance(listed, dict) and listed.get("nodes") is not None:
            listed["nodes"] = [m for m in listed["nodes"] if m and m.get("state") == model_state]
