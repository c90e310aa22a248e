"""The HTTP front: the ASGI app, the GraphQL endpoint, the request guard and body checks,
health and identity, and the server protocol."""
