"""The root ``Query``, assembled from per-area root pieces."""

from __future__ import annotations

from openrl_inspect.schema.cluster.query import ClusterQuery
from openrl_inspect.schema.metrics.query import MetricsQuery
from openrl_inspect.schema.state.query import StateQuery
from openrl_inspect.schema.summary.rollup import SummaryQuery
from strawberry.tools import merge_types
from strawberry.types.base import has_object_definition

Query = merge_types("Query", (StateQuery, ClusterQuery, MetricsQuery, SummaryQuery))
# merge_types takes no description: it goes on the definition it built.
assert has_object_definition(Query)
Query.__strawberry_definition__.description = (
    "Read-only views of OpenRL training: its state in Redis (sessions, models, steps, ops, "
    "workers, placements), the live Kubernetes cluster, Prometheus metrics, logs, and "
    "summaries that say what needs attention."
)
