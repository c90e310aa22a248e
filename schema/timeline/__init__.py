"""GraphQL types of a model's (and a session's) timeline."""
