"""Modules imported on first use: the backend SDKs load when their backend opens.

The Kubernetes SDK, redis-py, httpx and aiohttp take from 0.1 to 1 s to import; the
CLI's help, the resolvers' unit tests and a demo without that backend need none of
them. A module proxy imports its module when an attribute is first read.
"""

from __future__ import annotations

import importlib
from typing import Any


class _OnFirstUse:
    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def module(name: str) -> Any:
    """A stand-in for ``import name`` that imports it when an attribute is first read."""
    return _OnFirstUse(name)
