"""Objects checked against the official client's models (``roundtrip``).

Each object goes through the client's own (pydantic) model and back without losing a
field, which catches a misspelt or misplaced field (the models drop or refuse unknown
fields) and a missing required one (the models raise).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from kubernetes import client as _client

# The SDK's models type every field Optional: the tests assert on shapes at run time.
client: Any = _client

_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _normal(value: Any) -> Any:
    """Comparable form: times as instants, no nulls (the client drops them)."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def roundtrip(obj: dict[str, Any], model: str) -> Any:
    """Deserialize into the client's model; assert nothing was lost on the way back."""
    with client.ApiClient() as api:
        parsed = api.deserialize(json.dumps(obj), model, "application/json")
        assert type(parsed).__name__ == model
        assert _normal(api.sanitize_for_serialization(parsed)) == _normal(obj)
        return parsed
