"""What the state fields do: look up sessions, models, steps, ops, workers and placements
through the Redis loaders.
"""
