"""Redis, read-only: OpenRL's state (docs/redis-schema.md) and the clients' logs.

The public surface. ``StateStore`` is the protocol the loaders use;
``RedisStateStore.from_settings`` opens the real one (standalone or Cluster) and
``RedisStateStore.in_memory`` the twin: the same class over an in-process fakeredis, so
the demo and unit tests run the real command path (no ``memory.py`` of its own: the
twin cannot drift from the adapter because it is the adapter). ``RedisClientLogs`` reads the client
logs OpenRL's recorder keeps beside the state.

Private modules::

    _client       opening a client; timeouts and translated errors around each call
    _state        RedisStateStore: batched index reads, one round trip per batch
    _client_logs  RedisClientLogs: a model's or session's client logs, bounded
    _sampler_batches  RedisSamplerBatches: many models' sampler batch records, bounded
    _rollups      the commands and decoding of RedisStateStore.rollups (models' rollups)
"""

from __future__ import annotations

from openrl_inspect.adapters.redis._client import BACKEND, RedisSettings, connect
from openrl_inspect.adapters.redis._client_logs import (
    ClientLogReader,
    ClientLogRequest,
    ClientLogSlice,
    RedisClientLogs,
)
from openrl_inspect.adapters.redis._sampler_batches import (
    MAX_BATCHES,
    RedisSamplerBatches,
    SamplerBatchEntry,
    SamplerBatchReader,
    SamplerBatchRequest,
    SamplerBatchSlice,
)
from openrl_inspect.adapters.redis._state import RedisStateStore, StateStore

__all__ = [
    "BACKEND",
    "MAX_BATCHES",
    "ClientLogReader",
    "ClientLogRequest",
    "ClientLogSlice",
    "RedisClientLogs",
    "RedisSamplerBatches",
    "RedisSettings",
    "RedisStateStore",
    "SamplerBatchEntry",
    "SamplerBatchReader",
    "SamplerBatchRequest",
    "SamplerBatchSlice",
    "StateStore",
    "connect",
]
