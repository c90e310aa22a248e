"""GraphQL types of the agents' summary of a model: verdict, reasons, pace, op timings."""
