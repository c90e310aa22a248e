"""What the logs fields do: worker logs (Cloud Logging or pods' logs) and client logs
merged in time order, bounded and paged.
"""
