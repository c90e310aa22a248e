"""Cloud Logging filters built from typed parts, never from pasted text.

A filter in the Logging query language is an injection point: a model id of
``x" OR severity>=DEBUG OR "`` pasted between quotes would widen the query to every
entry in the project. So every *value* that enters a filter goes through
:func:`quote` (double-quoted; backslash and double quote escaped, the query
language's string rules), and every *identifier* (label key, resource type, resource
label, severity, project, log id) is checked against a strict pattern or allowlist
before it is used. Nothing else is ever concatenated into a filter.

:func:`tokenize` reads back the subset of the language this module writes. The tests
use it to show that no input changes a filter's structure, and the fake Cloud Logging
server and the in-memory twin evaluate filters with it (``logfilter_eval``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from openrl_inspect.core.errors import FilterSyntaxError, InvalidInput

# LogSeverity, lowest first: ``severity>=WARNING`` compares by this order.
SEVERITIES: tuple[str, ...] = (
    "DEFAULT",
    "DEBUG",
    "INFO",
    "NOTICE",
    "WARNING",
    "ERROR",
    "CRITICAL",
    "ALERT",
    "EMERGENCY",
)

# Labels of the monitored resources we filter on (k8s_container and friends).
RESOURCE_LABEL_KEYS = frozenset(
    {"project_id", "location", "cluster_name", "namespace_name", "pod_name", "container_name"}
)

# The documented maximum length of a query is 20,000 characters.
MAX_FILTER_CHARS = 20_000
# One value (a model id, a pod, a search text) is never longer than this.
MAX_VALUE_CHARS = 1024

_LABEL_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,254}")
_RESOURCE_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")
# Project ids: 6-30 of [a-z0-9-], starting with a letter; legacy ones carry a domain.
_PROJECT_ID = re.compile(r"(?:[a-z0-9][a-z0-9.-]{0,62}:)?[a-z][a-z0-9-]{4,28}[a-z0-9]")
# Log ids as they appear in logName (URL-encoded, so "/" is "%2F").
_LOG_ID = re.compile(r"[A-Za-z0-9_.%-]{1,512}")


def quote(value: str) -> str:
    """``value`` as one string literal of the Logging query language.

    Backslash first, then the double quote, so an escape is never escaped twice.
    """
    check_value(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_value(value: str) -> None:
    """Refuse values no literal can carry: too long, NUL, or lone surrogates."""
    if not isinstance(value, str):
        raise InvalidInput("a filter value must be a string")
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidInput(f"a filter value may have at most {MAX_VALUE_CHARS} characters")
    for ch in value:
        if ch == "\x00" or unicodedata.category(ch) == "Cs":
            raise InvalidInput("a filter value contains a character that cannot be searched")


def check_label_key(key: str) -> str:
    if not isinstance(key, str) or not _LABEL_KEY.fullmatch(key):
        raise InvalidInput("a label key must be letters, digits and . _ / - only")
    return key


def check_resource_type(resource_type: str) -> str:
    if not isinstance(resource_type, str) or not _RESOURCE_TYPE.fullmatch(resource_type):
        raise InvalidInput("a resource type must be lower-case letters, digits and _ only")
    return resource_type


def check_resource_label(key: str) -> str:
    if key not in RESOURCE_LABEL_KEYS:
        raise InvalidInput(
            f"resource label must be one of {', '.join(sorted(RESOURCE_LABEL_KEYS))}"
        )
    return key


def check_severity(severity: str) -> str:
    """The canonical (upper-case) severity name; anything else is refused."""
    name = severity.upper() if isinstance(severity, str) else ""
    if name not in SEVERITIES:
        raise InvalidInput(f"severity must be one of {', '.join(SEVERITIES)}")
    return name


def check_project(project: str) -> str:
    if not isinstance(project, str) or not _PROJECT_ID.fullmatch(project):
        raise InvalidInput("not a valid Google Cloud project id")
    return project


def check_log_id(log_id: str) -> str:
    if not isinstance(log_id, str) or not _LOG_ID.fullmatch(log_id):
        raise InvalidInput("a log id must be URL-encoded letters, digits and _ . % - only")
    return log_id


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``; naive datetimes are refused, not guessed."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput("timestamps must carry a time zone")
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return text + "Z"


# ---------------------------------------------------------------------------- clauses


def label_equals(key: str, value: str) -> str:
    """``labels."key"="value"``: the key is quoted too, since label keys hold dots."""
    return f"labels.{quote(check_label_key(key))}={quote(value)}"


def resource_label_equals(key: str, value: str) -> str:
    return f"resource.labels.{check_resource_label(key)}={quote(value)}"


def resource_type_equals(resource_type: str) -> str:
    return f"resource.type={quote(check_resource_type(resource_type))}"


def log_name_equals(project: str, log_id: str) -> str:
    return f"logName={quote(f'projects/{check_project(project)}/logs/{check_log_id(log_id)}')}"


def severity_at_least(severity: str) -> str:
    # The name comes from the allowlist, so it can stand unquoted like the docs write it.
    return f"severity>={check_severity(severity)}"


def time_window(start: datetime, end: datetime) -> str:
    """Both bounds, always: the client appends its own 24 h window to a filter without."""
    first, last = format_timestamp(start), format_timestamp(end)  # refuses naive ones
    if end < start:
        raise InvalidInput("the time window ends before it starts")
    return f"timestamp>={quote(first)} AND timestamp<={quote(last)}"


def text_matches(text: str) -> str:
    """A substring of the text payload or of a structured payload's ``message``."""
    if text == "":
        raise InvalidInput("search text must not be empty")
    literal = quote(text)
    return f"(textPayload:{literal} OR jsonPayload.message:{literal})"


def model_matches(model_id: str, label_key: str, pods: Sequence[str] = ()) -> str:
    """Entries labelled with the model, or written by one of its pods."""
    parts = [label_equals(label_key, model_id)]
    parts.extend(resource_label_equals("pod_name", pod) for pod in pods)
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def all_of(clauses: Iterable[str]) -> str:
    text = " AND ".join(clauses)
    if len(text) > MAX_FILTER_CHARS:
        raise InvalidInput(f"the filter would be longer than {MAX_FILTER_CHARS} characters")
    return text


MAX_MODEL_PODS = 64


def build_filter(
    *,
    start: datetime,
    end: datetime,
    resource_type: str | None = None,
    project: str | None = None,
    log_id: str | None = None,
    namespace: str | None = None,
    model_id: str | None = None,
    model_label_key: str = "openrl.ai/model-id",
    model_pods: Sequence[str] = (),
    pod: str | None = None,
    role: str | None = None,
    role_label_key: str = "openrl.ai/role",
    severity_floor: str | None = None,
    text: str | None = None,
) -> str:
    """One filter, every part ANDed, in a fixed order (so its shape depends only on
    which parts are present, never on their values)."""
    if len(model_pods) > MAX_MODEL_PODS:
        raise InvalidInput(f"at most {MAX_MODEL_PODS} pods can be matched for a model")
    if model_pods and model_id is None:
        raise InvalidInput("model pods need a model id")
    clauses: list[str] = []
    if resource_type is not None:
        clauses.append(resource_type_equals(resource_type))
    if log_id is not None:
        if project is None:
            raise InvalidInput("a log name needs a project")
        clauses.append(log_name_equals(project, log_id))
    if namespace is not None:
        clauses.append(resource_label_equals("namespace_name", namespace))
    clauses.append(time_window(start, end))
    if model_id is not None:
        clauses.append(model_matches(model_id, model_label_key, model_pods))
    if pod is not None:
        clauses.append(resource_label_equals("pod_name", pod))
    if role is not None:
        clauses.append(label_equals(role_label_key, role))
    if severity_floor is not None:
        clauses.append(severity_at_least(severity_floor))
    if text is not None:
        clauses.append(text_matches(text))
    return all_of(clauses)


# --------------------------------------------------------------------------- tokenizer

TokenKind = Literal["STRING", "NAME", "OP", "DOT", "LPAREN", "RPAREN"]


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    # For STRING: the decoded value; otherwise the token's text.
    value: str
    offset: int


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = (">=", "<=", "!=", "=", ">", "<", ":")
_SINGLE: dict[str, TokenKind] = {"(": "LPAREN", ")": "RPAREN", ".": "DOT"}


def tokenize(text: str) -> list[Token]:
    """Split a filter into tokens; string literals come back decoded.

    Only ``\\\\`` and ``\\"`` are accepted as escapes, the only two :func:`quote` writes.
    """
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
        elif ch == '"':
            start = i
            i += 1
            chars: list[str] = []
            while True:
                if i >= n:
                    raise FilterSyntaxError(f"unterminated string at {start}")
                ch = text[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\":
                    if i + 1 >= n or text[i + 1] not in '\\"':
                        raise FilterSyntaxError(f"unsupported escape at {i}")
                    chars.append(text[i + 1])
                    i += 2
                else:
                    chars.append(ch)
                    i += 1
            tokens.append(Token("STRING", "".join(chars), start))
        elif ch in _SINGLE:
            tokens.append(Token(_SINGLE[ch], ch, i))
            i += 1
        elif match := _NAME.match(text, i):
            tokens.append(Token("NAME", match.group(), i))
            i = match.end()
        else:
            for op in _OPERATORS:
                if text.startswith(op, i):
                    tokens.append(Token("OP", op, i))
                    i += len(op)
                    break
            else:
                raise FilterSyntaxError(f"unexpected character at {i}")
    return tokens
