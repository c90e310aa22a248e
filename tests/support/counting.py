"""A state store that counts every backend call, to prove a refusal made none."""

from __future__ import annotations

from typing import Any

from openrl_inspect.adapters.redis import RedisStateStore

CALLS = (
    "pages", "sessions", "models", "steps", "ops", "op_models", "workers", "placements", "rollups",
    "model_pages", "session_pages", "live_models",
)  # fmt: skip


class CountingStore:
    """Wraps a ``RedisStateStore``; ``calls`` counts the reads made through it, and
    ``records`` what they read (the keys asked for, a page's entries)."""

    def __init__(self, store: RedisStateStore, delay_s: float = 0.0) -> None:
        self._store = store
        self.calls = 0
        self.records = 0
        self.delay_s = delay_s

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._store, name)
        if name not in CALLS:
            return target

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.delay_s:
                import asyncio

                await asyncio.sleep(self.delay_s)
            out = await target(*args, **kwargs)
            batch = args[0] if args else None
            self.records += len(batch) if isinstance(batch, list | tuple) else 1
            if name in ("pages", "model_pages", "session_pages"):
                self.records += sum(len(getattr(page, "items", ())) for page in out)
            return out

        return counted
