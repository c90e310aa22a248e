"""The entries for agents and scripts: REST routes, the MCP server, and the documents they run."""
