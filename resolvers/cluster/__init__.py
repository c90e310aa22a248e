"""What the cluster fields do: pods, nodes, GPUs, workloads and claims through the
Kubernetes loaders; capacity counting; why a model waits.
"""
