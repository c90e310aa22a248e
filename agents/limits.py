"""The bounds of the arguments the entries pass on to GraphQL, read from where the API
enforces them (the resolvers' constants and the request ``Bounds``), so an MCP tool's
input schema and the REST routes' OpenAPI document publish the limit the server holds,
not a copy of it.

Each limit is named after what it bounds; a tool or route names the limit it uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openrl_inspect.core.settings import Bounds
from openrl_inspect.resolvers.logs.reads import MAX_WINDOW as LOG_WINDOW
from openrl_inspect.resolvers.metrics.reads import MAX_WINDOW_S
from openrl_inspect.resolvers.summary.rollup import MAX_WORST


@dataclass(frozen=True)
class Limit:
    minimum: float
    maximum: float
    exclusive_minimum: bool = False

    def schema(self) -> dict[str, Any]:
        """As JSON Schema keywords."""
        low = "exclusiveMinimum" if self.exclusive_minimum else "minimum"
        return {low: self.minimum, "maximum": self.maximum}


def limits(bounds: Bounds) -> dict[str, Limit]:
    """Every named limit under ``bounds`` (a page's size is a setting)."""
    page = Limit(1, bounds.max_page_size)
    return {
        # A connection's `first` (resolvers.paging), and `summary(steps:)`.
        "page": page,
        "steps": page,
        # `attention(first:)` and a session summary's `worst` (resolvers.summary.rollup).
        "worst": Limit(1, MAX_WORST),
        # A DCGM duty window, `windowSeconds` (adapters.prometheus, through the resolvers).
        "window_s": Limit(0, MAX_WINDOW_S, exclusive_minimum=True),
        # A log window, in minutes (resolvers.logs: `since`..`until` span at most this).
        "log_minutes": Limit(0, LOG_WINDOW.total_seconds() / 60, exclusive_minimum=True),
    }
