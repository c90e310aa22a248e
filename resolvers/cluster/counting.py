"""GPU capacity counting (see ``adapters.kubernetes._capacity``, where the watch cache
keeps the counts up to date per event); re-exported for the resolvers and the schema."""

from __future__ import annotations

from openrl_inspect.adapters.kubernetes import (
    BLOCKING_EFFECTS,
    GPU_TAINT,
    PRODUCT_LABEL,
    UNHEALTHY_TAINTS,
    CapacityCounts,
    ClusterCapacity,
    NodeCapacity,
    ProductCapacity,
    by_product,
    node_capacity,
    node_condition,
)

__all__ = [
    "BLOCKING_EFFECTS",
    "GPU_TAINT",
    "PRODUCT_LABEL",
    "UNHEALTHY_TAINTS",
    "CapacityCounts",
    "ClusterCapacity",
    "NodeCapacity",
    "ProductCapacity",
    "by_product",
    "node_capacity",
    "node_condition",
]
