"""The CLI's demo over a real socket: uvicorn in a subprocess, real HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
from support.ports import free_port, wait_for_port


def test_demo_serves_live_simulated_data_over_a_socket() -> None:
    port = free_port()
    env = {**os.environ, "OPENRL_INSPECT_DEMO_TICK_S": "0.2"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openrl_inspect.cli",
            "demo",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            # Every interface: the demo asks for consent (it has no authentication).
            "--allow-unauthenticated-non-loopback",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        wait_for_port(port, timeout_s=30)
        url = f"http://127.0.0.1:{port}/api/v1/inspect/graphql"
        query = {
            "query": "{ models(state: ACTIVE, first: 100) { nodes { id latestStep openOps { totalCount } } } }"
        }
        first = httpx.post(url, json=query, timeout=10).json()
        assert "errors" not in first
        steps_before = {m["id"]: m["latestStep"] for m in first["data"]["models"]["nodes"]}
        assert steps_before
        # the simulator keeps working: some model takes a step within a few seconds
        deadline = time.monotonic() + 20
        moved = False
        while not moved and time.monotonic() < deadline:
            time.sleep(0.5)
            now = httpx.post(url, json=query, timeout=10).json()["data"]["models"]["nodes"]
            moved = any((m["latestStep"] or 0) > (steps_before.get(m["id"]) or 0) for m in now)
        assert moved, "nothing moved in the demo"
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=15)
    # the printed URL maps the wildcard listen address to loopback
    assert f"http://127.0.0.1:{port}/api/v1/inspect/graphiql" in out
    # the warning that it serves every interface without authentication, then the
    # dashboard's URL first
    warning, dashboard = out.splitlines()[:2]
    assert warning.startswith("WARNING: the demo serves '0.0.0.0' without authentication")
    assert dashboard.endswith(f"http://127.0.0.1:{port}/api/v1/inspect/ui/")
