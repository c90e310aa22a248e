"""The vocabulary everything shares: domain enums, errors, cursors, principals, settings."""
