"""The GraphQL schema: types that map records, assembled into one root in ``root``."""
