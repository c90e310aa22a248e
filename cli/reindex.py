"""``openrl-inspect reindex``: build the model indexes for data written before them.

The writing side: it runs with the recorder's credentials (``OPENRL_INSPECT_RECORDER_*``
settings, ``--redis-url`` / ``--redis-cluster`` first), never the inspector's read-only
ones. One pass, idempotent (``recorder.reindex``); prints what it found.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from openrl_inspect.core import settings
from openrl_inspect.recorder import RecorderSettings, reindex_with


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    config = settings.load(
        RecorderSettings,
        "OPENRL_INSPECT_RECORDER_",
        env,
        {"url": args.redis_url, "cluster": args.redis_cluster},
        {"url": "--redis-url", "cluster": "--redis-cluster"},
    )
    found = reindex_with(config)
    print(
        f"reindexed {found.models} models: {found.owners} owners, {found.base_models} base "
        f"models, {found.live} live; {found.without_owner} without an owner (session gone), "
        f"{found.pruned} stale entries pruned; {found.failing} live with a failed op, "
        f"{found.paced} with a pace, {found.open_ops} open ops; {found.sessions} sessions "
        "indexed by owner"
    )
    return 0
