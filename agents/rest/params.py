"""Query and path parameters: parsed strictly, each refusal a 400 that names the parameter.

A route's parameters are declared once (``Param``); the same declaration parses a request
and writes the OpenAPI document, so the two cannot drift.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from openrl_inspect.agents.limits import Limit
from openrl_inspect.core.errors import InvalidInput

Kind = Literal["string", "integer", "number", "datetime", "enum"]

# What a session, model, op or worker id may be in a path here: ``state.keys``'s ids
# without the slash, which would read as a segment (an id with one is reachable through
# GraphQL). Enforced as published in the OpenAPI document.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
# A node's name (a DNS subdomain, as Kubernetes requires) and a device UUID (NVIDIA's
# GPU-... and MIG-..., or another driver's).
NODE_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
UUID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
MAX_TEXT = 512


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    description: str
    variable: str | None = None  # the document's variable, when named otherwise
    where: Literal["query", "path"] = "query"
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    # Not a variable of the document as it is: a filter the route applies to the page
    # itself, or what the route's ``prepare`` turns into variables.
    local: bool = False
    # The name of its limit (``agents.limits``): its bounds are then the server's, under
    # the server's settings (``under``), not numbers of its own.
    limit: str | None = None

    def under(self, limits: Mapping[str, Limit]) -> Param:
        """This parameter with its named limit's bounds."""
        if self.limit is None:
            return self
        bound = limits[self.limit]
        return replace(
            self,
            minimum=bound.minimum,
            maximum=bound.maximum,
            exclusive_minimum=bound.exclusive_minimum,
        )

    @property
    def var(self) -> str:
        return self.variable or self.name

    def parse(self, raw: str) -> Any:
        if self.kind == "integer":
            return self._bounded(self._integer(raw))
        if self.kind == "number":
            return self._bounded(self._number(raw))
        if self.kind == "enum":
            if raw not in self.choices:
                raise InvalidInput(
                    parameter=self.name,
                    message=f"{self.name} must be one of {', '.join(self.choices)}",
                )
            return raw
        if self.kind == "datetime":
            return self._datetime(raw)
        longest = self.max_length or MAX_TEXT
        if len(raw) > longest:
            raise InvalidInput(
                parameter=self.name, message=f"{self.name} is longer than {longest} characters"
            )
        if self.min_length is not None and len(raw) < self.min_length:
            raise InvalidInput(
                parameter=self.name,
                message=f"{self.name} is shorter than {self.min_length} characters",
            )
        if self.pattern is not None and not re.fullmatch(self.pattern, raw):
            raise InvalidInput(
                parameter=self.name, message=f"{self.name} must match {self.pattern}"
            )
        return raw

    def _integer(self, raw: str) -> int:
        text = raw.strip()
        if not text.lstrip("-").isdigit() or len(text) > 12:
            raise InvalidInput(parameter=self.name, message=f"{self.name} must be an integer")
        return int(text)

    def _number(self, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise InvalidInput(
                parameter=self.name, message=f"{self.name} must be a number"
            ) from None
        if not math.isfinite(value):
            raise InvalidInput(parameter=self.name, message=f"{self.name} must be a finite number")
        return value

    def _bounded(self, value: float) -> Any:
        low, high = self.minimum, self.maximum
        if low is not None and (value <= low if self.exclusive_minimum else value < low):
            word = "above" if self.exclusive_minimum else "at least"
            raise InvalidInput(parameter=self.name, message=f"{self.name} must be {word} {low:g}")
        if high is not None and value > high:
            raise InvalidInput(parameter=self.name, message=f"{self.name} must be at most {high:g}")
        return value

    def _datetime(self, raw: str) -> str:
        try:
            moment = datetime.fromisoformat(raw.replace("z", "Z").replace("t", "T"))
        except ValueError:
            raise InvalidInput(
                parameter=self.name, message=f"{self.name} must be an ISO 8601 time with a zone"
            ) from None
        if moment.tzinfo is None:
            raise InvalidInput(
                parameter=self.name, message=f"{self.name} needs a zone (Z or +00:00)"
            )
        return moment.isoformat()

    def schema(self) -> dict[str, Any]:
        """Its JSON Schema in the OpenAPI document."""
        out: dict[str, Any]
        if self.kind == "enum":
            out = {"type": "string", "enum": list(self.choices)}
        elif self.kind == "datetime":
            out = {"type": "string", "format": "date-time"}
        else:
            out = {"type": self.kind}
        if self.kind == "string":
            out["maxLength"] = self.max_length or (253 if self.pattern else MAX_TEXT)
            if self.min_length is not None:
                out["minLength"] = self.min_length
            if self.pattern:
                out["pattern"] = self.pattern
        if self.minimum is not None:
            out["exclusiveMinimum" if self.exclusive_minimum else "minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


def parse_all(
    params: tuple[Param, ...], query: Mapping[str, list[str]], path: Mapping[str, str]
) -> dict[str, Any]:
    """The document's variables from a request; ``InvalidInput`` naming the first
    parameter it refuses."""
    known = {p.name for p in params if p.where == "query"}
    for name in query:
        if name not in known:
            allowed = ", ".join(sorted(known)) or "none"
            raise InvalidInput(
                parameter=name, message=f"unknown parameter {name!r} (this route takes: {allowed})"
            )
    out: dict[str, Any] = {}
    for p in params:
        values = [path[p.name]] if p.where == "path" else query.get(p.name, [])
        if len(values) > 1:
            raise InvalidInput(parameter=p.name, message=f"{p.name} is given more than once")
        if not values:
            if p.required:
                raise InvalidInput(parameter=p.name, message=f"{p.name} is required")
            continue
        out[p.var] = p.parse(values[0])
    return out
