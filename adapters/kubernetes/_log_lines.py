"""One container log line as Cloud Logging's agents read it: severity, message, payload.

A line is a JSON object (its ``severity``/``level`` and ``message``/``msg`` keys), or
text whose level is a word near its start (``ERROR ...``, ``[WARN] ...``) or a klog
prefix (``E0301 12:00:01``). Numeric levels are Python's logging levels.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_line"]

_LEVEL_NAMES = {
    "TRACE": "DEBUG",
    "DEBUG": "DEBUG",
    "INFO": "INFO",
    "NOTICE": "NOTICE",
    "WARN": "WARNING",
    "WARNING": "WARNING",
    "ERR": "ERROR",
    "ERROR": "ERROR",
    "CRIT": "CRITICAL",
    "CRITICAL": "CRITICAL",
    "FATAL": "CRITICAL",
    "ALERT": "ALERT",
    "EMERG": "EMERGENCY",
    "EMERGENCY": "EMERGENCY",
    "PANIC": "EMERGENCY",
}
_PY_LEVELS = ((50, "CRITICAL"), (40, "ERROR"), (30, "WARNING"), (20, "INFO"), (10, "DEBUG"))
# A level word among the first few words: "ERROR ...", "[WARN] ...", "12:00:01 INFO x: ...".
_TEXT_LEVEL = re.compile(
    r"^(?:\S+\s+){0,3}?[\[(<]?(" + "|".join(_LEVEL_NAMES) + r")(?:[\])>:]|\s|$)"
)
_KLOG = re.compile(r"^([IWEF])\d{4} \d{2}:\d{2}:\d{2}")
_KLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
_SEVERITY_KEYS = ("severity", "level", "levelname", "lvl")
_MESSAGE_KEYS = ("message", "msg")


def _level(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return next((name for floor, name in _PY_LEVELS if value >= floor), "DEFAULT")
    if isinstance(value, str):
        return _LEVEL_NAMES.get(value.strip().upper(), "DEFAULT")
    return "DEFAULT"


def parse_line(text: str) -> tuple[str, str | None, dict[str, Any] | None]:
    """(severity, message, structured payload) of one log line, as Cloud Logging's
    agents read them: a JSON object's ``severity``/``level`` and ``message``/``msg``,
    else a level word near the start of the text (or a klog ``E0301`` prefix)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            body = json.loads(stripped)
        except ValueError:
            body = None
        if isinstance(body, dict):
            severity = "DEFAULT"
            for key in _SEVERITY_KEYS:
                if key in body:
                    severity = _level(body.pop(key))
                    break
            message = None
            for key in _MESSAGE_KEYS:
                if isinstance(body.get(key), str):
                    message = body.pop(key)
                    break
            return severity, message, body
    if match := _KLOG.match(text):
        return _KLOG_LEVELS[match.group(1)], text, None
    if match := _TEXT_LEVEL.match(text):
        return _LEVEL_NAMES[match.group(1)], text, None
    return "DEFAULT", text, None
