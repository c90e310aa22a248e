"""OpenRL Inspector: one read-only GraphQL API over OpenRL's state and its cluster."""

__version__ = "0.1.0"
