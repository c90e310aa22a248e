"""GraphQL types of GPU activity (Prometheus: DCGM and vLLM) and the metrics fields of
Model, Session, Placement, Worker, GPU and Node.
"""
