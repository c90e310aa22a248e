"""What the summary fields do: judge a model from its recent steps and ops."""
