"""What the GPU-activity fields do: duty, series, activity and vLLM stats through the
metrics loaders.
"""
