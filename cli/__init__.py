"""The command line, ``openrl-inspect``: serve, demo, summary, mcp, track, tokens and the
schema export, with the wiring each command needs."""
