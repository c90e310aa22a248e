"""Per-request DataLoaders: one batched backend call per level of a query."""
