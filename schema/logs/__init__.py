"""GraphQL types of logs (Cloud Logging, pods' logs, clients' logs) and the logs fields of
Model, Session and Pod.
"""
