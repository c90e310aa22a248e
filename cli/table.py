"""The summary as a compact table for a terminal: the verdict first, then the ranked
causes with their one-line statement, then where to look next."""

from __future__ import annotations

import shutil
from typing import Any

from openrl_inspect.resolvers.summary.rollup import MAX_WORST


def _width() -> int:
    return max(60, min(shutil.get_terminal_size((120, 20)).columns, 160))


def _clip(text: Any, width: int) -> str:
    """``text`` within ``width``, cut at a word's end where one is near (never in the
    middle of a word unless it is longer than a third of the width)."""
    s = "" if text is None else str(text)
    if len(s) <= width:
        return s
    cut = s[: max(0, width - 1)]
    space = cut.rfind(" ")
    if space >= width * 2 // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _table(rows: list[list[Any]], header: list[str]) -> list[str]:
    width = _width()
    cells = [[str(c if c is not None else "-") for c in row] for row in [header, *rows]]
    cols = [max(len(r[i]) for r in cells) for i in range(len(header))]
    # The last column takes what is left of the terminal.
    fixed = sum(cols[:-1]) + 2 * (len(cols) - 1)
    cols[-1] = max(10, min(cols[-1], width - fixed))
    out = []
    for row in cells:
        out.append("  ".join(_clip(c, cols[i]).ljust(cols[i]) for i, c in enumerate(row)).rstrip())
    out.insert(1, "  ".join("-" * c for c in cols))
    return out


def _number(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}{unit}"
    return f"{value}{unit}"


def _moment(iso: str | None) -> str:
    # To the second, in UTC as the API gives it: enough to line up with logs.
    return "-" if not iso else iso[:19].replace("T", " ")


def _ago(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{seconds:.0f} s"
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _pace(s: dict[str, Any]) -> str:
    """A model's pace, or, when it has none now, how long since its last step: a pace
    from old steps is not shown (the API gives none)."""
    if s["stepsPerMinute"] is not None:
        return (
            f"pace {_number(s['stepsPerMinute'])} steps/min, median step "
            f"{_number(s['medianStepSeconds'], ' s')}"
        )
    since = s.get("secondsSinceLastStep")
    return "no step finished yet" if since is None else f"no step for {_ago(since)}"


def _model(data: dict[str, Any]) -> list[str]:
    m = data["model"]
    s = m["summary"]
    lines = [
        f"model {m['id']}  session {m['sessionId']}  state {m['state']}  verdict {s['verdict']}",
        f"{_pace(s)}; ops failed {s['failedOps']}, stuck "
        f"{s['stuckOps']}, lost {s['lostOps']}; workers {s['workersAlive']}/{s['workersTotal']}",
    ]
    if s["causes"]:
        lines.append("")
        rows = [[c["rank"], c["kind"], _moment(c["since"]), c["statement"]] for c in s["causes"]]
        lines += _table(rows, ["#", "cause", "since", "statement"])
        if s["causesLeftOff"]:
            lines.append(f"... and {s['causesLeftOff']} more cause(s)")
        lines.append("")
        lines.append("where to look next:")
        for c in s["causes"]:
            n = c["next"]
            where = [f"{p['namespace']}/{p['name']}" for p in n["pods"]] + n["nodes"]
            if where:
                lines.append(f"  {c['kind']}: {', '.join(where)}")
            if n.get("logs") and n["logs"].get("explorerUrl"):
                lines.append(f"    logs: {n['logs']['explorerUrl']}")
    else:
        lines.append("no cause found: " + "; ".join(s["reasons"]))
    for u in s["unknown"]:
        lines.append(f"unknown: {u['backend']} ({u['code']}): its causes were not judged")
    return lines


def _brief(b: dict[str, Any]) -> list[Any]:
    cause = b.get("topCause") or {}
    return [b["model"]["id"], b["verdict"], cause.get("kind", "-"), cause.get("statement", "-")]


def _session(data: dict[str, Any]) -> list[str]:
    s = data["session"]
    sm = s["summary"]
    counts = ", ".join(f"{v['verdict']} {v['count']}" for v in sm["byVerdict"])
    lines = [
        f"session {s['id']}  owner {s['owner']}  state {s['state']}",
        f"{sm['models']} model(s){' (more not summarised)' if sm['truncated'] else ''}: {counts}",
        f"ops failed {sm['failedOps']}, stuck {sm['stuckOps']}, lost {sm['lostOps']}; "
        + (
            f"pace {_number(sm['stepsPerMinute'])} steps/min"
            if sm["stepsPerMinute"] is not None
            else "no model is stepping now"
        ),
    ]
    if sm["worst"]:
        lines += [
            "",
            *_table([_brief(b) for b in sm["worst"]], ["model", "verdict", "cause", "statement"]),
        ]
    return lines


def _attention(data: dict[str, Any]) -> list[str]:
    a = data["attention"]
    lines = [f"{a['needing']} of {a['scanned']} model(s) judged need a person"]
    if a["models"]:
        lines += [
            "",
            *_table([_brief(b) for b in a["models"]], ["model", "verdict", "cause", "statement"]),
        ]
    more = a["needing"] - len(a["models"])
    if more > 0:
        lines.append(
            f"... and {more} more (--first {min(a['needing'], MAX_WORST)} shows up to {MAX_WORST})"
        )
    return lines


def render(name: str, body: dict[str, Any]) -> str:
    data = body.get("data") or {}
    lines: list[str] = []
    root = {"model_summary": "model", "session_summary": "session", "attention": "attention"}[name]
    if data.get(root) is not None:
        lines = {"model_summary": _model, "session_summary": _session, "attention": _attention}[
            name
        ](data)
    for e in body.get("errors") or ():
        code = (e.get("extensions") or {}).get("code", "ERROR")
        lines.append(f"error {code}: {e.get('message', '')}")
    return "\n".join(lines)
