"""A bounded memo of decoded records by their stored text.

Records are frozen, so one decoded value can serve every request that reads the same
stored text again (a dashboard polling the same models every few seconds). Only values
are kept, never errors: a ``BadRecord`` is raised into each request's own result and
must not be shared. Used from the event loop's thread (the inspector is one asyncio
loop); a lost update under threads costs a decode, not a wrong answer.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """Least recently used first out, at most ``size`` values."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        value = self._values.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        self._values.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._values[key] = value
        if len(self._values) > self.size:
            with contextlib.suppress(KeyError):  # emptied meanwhile by another thread
                self._values.popitem(last=False)

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        self._values.clear()
