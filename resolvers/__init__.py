"""What fields do: fetch through the per-request loaders and return records.

Resolvers never build schema types and never call an adapter directly; the schema maps
the records they return.
"""
