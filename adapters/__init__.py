"""One module per backend, each behind a small async protocol with an in-memory twin."""
