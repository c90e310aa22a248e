"""A model's (or a session's) history across every backend, newest first.

``sources`` reads each backend for one model (Redis: states, steps, failed ops,
workers, placements; Kubernetes: Workload conditions, Events of its pods, Workloads,
nodes and GPUs, from the watch cache and then Cloud Logging's events log; Prometheus:
idle spans on its GPUs; Cloud Logging: the first ERROR or CRITICAL line of each
distinct message); ``build`` merges them, bounds the answer and pages it with the one
cursor codec.
"""
