"""Reading the API server's JSON: tolerant accessors and the fields every kind shares.

Every parser (``_pods``, ``_workloads``, ``_dra``, ``_events``) reads an object as it
arrives on the wire (a LIST item or a WATCH event's object, a plain ``dict``) through
these. They never raise on a wrong shape: a missing or mistyped optional field reads as
``None`` or empty, and an object without a name has no ``meta`` (its parser skips it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from openrl_inspect.adapters.kubernetes._records import Condition, ObjectKey, OwnerRef

Json = Mapping[str, Any]


def as_map(obj: Any, key: str) -> Json:
    """``obj[key]`` if it is an object, else ``{}``."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def as_list(obj: Any, key: str) -> Sequence[Any]:
    """``obj[key]`` if it is a list, else ``()``."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, list) else ()


def as_str(obj: Any, key: str) -> str | None:
    """``obj[key]`` if it is a string, else ``None``."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """An integer, or its decimal string (a bool is not one); else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def str_map(value: Any) -> dict[str, str]:
    """A string-to-string map (labels, flavors), every key and value as text."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def unique(values: Sequence[str | None]) -> tuple[str, ...]:
    """The non-empty values, first occurrence first."""
    return tuple(dict.fromkeys(v for v in values if v))


def parse_time(value: Any) -> float | None:
    """RFC 3339 (``2026-01-02T03:04:05Z``, optional fraction) to POSIX seconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1)}
_DECIMAL.update({"k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9")})
_DECIMAL.update({"T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18")})


def parse_quantity(value: Any) -> int | None:
    """A Kubernetes quantity (``80Gi``, ``8``, ``1.5k``, ``1e3``) rounded down to an int."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    try:
        if text[-2:] in _BINARY:
            return int(Decimal(text[:-2]) * _BINARY[text[-2:]])
        if text[-1:] in _DECIMAL and not text[-1:].isdigit():
            return int(Decimal(text[:-1]) * _DECIMAL[text[-1:]])
        return int(Decimal(text))
    except (InvalidOperation, ValueError):
        return None


# --- the fields every kind shares --------------------------------------------------------


def meta(obj: Json) -> tuple[str, str, str, dict[str, str]] | None:
    """(namespace, name, uid, labels) of an object; ``None`` without a name."""
    metadata = as_map(obj, "metadata")
    name = as_str(metadata, "name")
    if not name:
        return None
    return (
        as_str(metadata, "namespace") or "",
        name,
        as_str(metadata, "uid") or "",
        str_map(metadata.get("labels")),
    )


def read_version(obj: Json, version: str | None, understood: Sequence[str]) -> str:
    """The API version to parse ``obj`` as: the one it was read at, else its own
    ``apiVersion``'s (objects written by hand, the twins'), else the newest understood."""
    if version is not None and version in understood:
        return version
    own = (as_str(obj, "apiVersion") or "").rpartition("/")[2]
    return own if own in understood else understood[0]


def object_key(obj: Json) -> ObjectKey | None:
    """The key of a raw object (used for DELETED events, whatever the kind)."""
    metadata = as_map(obj, "metadata")
    name = as_str(metadata, "name")
    return ObjectKey(as_str(metadata, "namespace") or "", name) if name else None


def resource_version(obj: Json) -> str | None:
    return as_str(as_map(obj, "metadata"), "resourceVersion")


def owner_refs(metadata: Json) -> tuple[OwnerRef, ...]:
    """``metadata.ownerReferences``, the controlling owner first."""
    refs = []
    for ref in as_list(metadata, "ownerReferences"):
        kind, name, uid = as_str(ref, "kind"), as_str(ref, "name"), as_str(ref, "uid")
        if kind and name and uid:
            refs.append(OwnerRef(kind, name, uid, controller=ref.get("controller") is True))
    return tuple(sorted(refs, key=lambda r: not r.controller))


def conditions(raw: Sequence[Any]) -> tuple[Condition, ...]:
    """``status.conditions``; an entry without a type or a status is skipped."""
    out = []
    for item in raw:
        ctype, status = as_str(item, "type"), as_str(item, "status")
        if ctype is None or status is None:
            continue
        out.append(
            Condition(
                type=ctype,
                status=status,
                reason=as_str(item, "reason") or None,
                message=as_str(item, "message") or None,
                last_transition=parse_time(item.get("lastTransitionTime")),
            )
        )
    return tuple(out)
