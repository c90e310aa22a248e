"""The root ``Query``, assembled from per-area root pieces."""

from __future__ import annotations

from openrl_inspect.schema.cluster.query import ClusterQuery
from openrl_inspect.schema.metrics.query import MetricsQuery
from openrl_inspect.schema.state.query import StateQuery
from openrl_inspect.schema.summary.rollup import SummaryQuery
from strawberry.tools import merge_types

Query = merge_types("Query", (StateQuery, ClusterQuery, MetricsQuery, SummaryQuery))
