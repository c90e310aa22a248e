"""OpenRL's state in Redis: the key layout and encodings shared by writers and readers.

docs/redis-schema.md is the prose version of this package; keep them together.
"""
