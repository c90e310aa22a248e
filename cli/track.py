"""``openrl-inspect track-placements``: the placement tracker's flags and start-up.

Settings come from the command line, then the environment (``OPENRL_INSPECT_REDIS_*``,
``OPENRL_INSPECT_KUBERNETES_*``, ``OPENRL_INSPECT_TRACKER_*``, ``OPENRL_INSPECT_LEADER_*``),
then defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Mapping

from openrl_inspect import auth
from openrl_inspect.adapters import kubernetes
from openrl_inspect.adapters.redis import RedisSettings
from openrl_inspect.core import settings
from openrl_inspect.tracker import run as tracker
from openrl_inspect.tracker.leader import ElectionSettings


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    redis = settings.load(
        RedisSettings,
        "OPENRL_INSPECT_REDIS_",
        env,
        {"url": args.redis_url, "cluster": args.redis_cluster},
        {"url": "--redis-url", "cluster": "--redis-cluster"},
    )
    for warning in auth.redis_secrets(redis, args.redis_url):
        logging.getLogger("openrl_inspect.auth").warning(warning)
    kube = kubernetes.load_settings(
        env,
        {
            "in_cluster": args.in_cluster,
            "kubeconfig": args.kubeconfig,
            "context": args.kube_context,
        },
    )
    if not (kube.in_cluster or kube.kubeconfig):
        print(
            "openrl-inspect: track-placements needs --in-cluster or --kubeconfig", file=sys.stderr
        )
        return 2
    config = settings.load(
        tracker.TrackerSettings,
        "OPENRL_INSPECT_TRACKER_",
        env,
        {
            "interval_s": args.interval,
            "namespace": args.namespace,
            "leader_elect": args.leader_elect,
        },
    )
    election = _election(args, env) if config.leader_elect else None
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(tracker.main(redis, kube, config, election))
    return 0


def _election(args: argparse.Namespace, env: Mapping[str, str]) -> ElectionSettings:
    """Who campaigns for which Lease; the identity defaults to the host (pod) name."""
    return settings.load(
        ElectionSettings,
        "OPENRL_INSPECT_LEADER_",
        {"OPENRL_INSPECT_LEADER_IDENTITY": socket.gethostname(), **env},
        {"lease_name": args.lease_name, "namespace": args.lease_namespace},
    )
