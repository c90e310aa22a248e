"""The placement tracker: which node and GPUs each model's workers were given, recorded
into Redis from the cluster's Workloads and pods, by one elected leader at a time."""
