"""GraphQL types of the cluster (Kubernetes): Pod, Node, GPU, Workload, claims, capacity,
why a model waits, and the cluster fields of Model, Placement and Worker.
"""
