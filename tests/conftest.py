"""Shared fixtures. Servers that tests need are started on free loopback ports."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
