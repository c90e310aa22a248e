"""A real Prometheus for tests and benchmarks, loaded with known series.

Series are written as OpenMetrics text, backfilled into TSDB blocks with
``promtool tsdb create-blocks-from openmetrics`` *before* Prometheus starts, and then
queried through the normal HTTP API. Prometheus runs on a free loopback port with its
own temporary storage directory and an empty scrape configuration.

Time ranges: blocks are cut on 2-hour boundaries and loaded whatever their age inside
the retention (set to 30 days here); the data sets of the tests lie between 3 hours and
2 hours before "now", in the past of Prometheus' (empty) head block.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from support.ports import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def require_prometheus() -> None:
    """Skip (locally) or fail (under CI=true) when Prometheus is not installed."""
    missing = [p for p in (PROMETHEUS, PROMTOOL) if not Path(p).exists()]
    if missing:
        reason = (
            "Prometheus is not installed (apt-get install -y --no-install-recommends "
            f"prometheus): missing {', '.join(missing)}"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _om_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _om_number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


@dataclass
class OpenMetrics:
    """Series to backfill: ``add(metric, labels, samples)``; ``text()`` renders them
    grouped by metric family, each series' samples in time order, ending in ``# EOF``."""

    families: dict[str, dict[tuple[tuple[str, str], ...], dict[float, float]]] = field(
        default_factory=dict
    )

    def add(
        self, metric: str, labels: Mapping[str, str], samples: Iterable[tuple[float, float]]
    ) -> None:
        key = tuple(sorted(labels.items()))
        self.families.setdefault(metric, {}).setdefault(key, {}).update(samples)

    def samples(self) -> int:
        return sum(len(s) for fam in self.families.values() for s in fam.values())

    def write(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as out:
            for metric, series in sorted(self.families.items()):
                out.write(f"# TYPE {metric} unknown\n")
                for key, samples in sorted(series.items()):
                    labels = ",".join(f'{k}="{_om_escape(v)}"' for k, v in key)
                    prefix = f"{metric}{{{labels}}}" if labels else metric
                    out.writelines(
                        f"{prefix} {_om_number(v)} {t:.3f}\n" for t, v in sorted(samples.items())
                    )
            out.write("# EOF\n")


def steps(start: float, end: float, every: float) -> list[float]:
    """Sample times ``start, start + every, ... < end``."""
    n = math.ceil((end - start) / every)
    return [start + i * every for i in range(n) if start + i * every < end]


class PrometheusServer:
    """``prometheus`` on a free loopback port over a backfilled temporary TSDB."""

    def __init__(self, data: OpenMetrics | None = None, *, extra_args: Sequence[str] = ()) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="oi-prometheus-"))
        self.data = data
        self.extra_args = list(extra_args)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def backfill(self) -> None:
        if self.data is None or not self.data.families:
            return
        src = self.dir / "data.om"
        self.data.write(src)
        (self.dir / "tsdb").mkdir(exist_ok=True)
        subprocess.run(
            [
                PROMTOOL,
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                str(src),
                str(self.dir / "tsdb"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=600,
        )
        src.unlink()

    def start(self, timeout_s: float = 60.0) -> PrometheusServer:
        self.backfill()
        config = self.dir / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
        for _attempt in range(3):
            self.port = free_port()
            log = (self.dir / "prometheus.log").open("wb")
            self.proc = subprocess.Popen(
                [
                    PROMETHEUS,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.dir / 'tsdb'}",
                    "--storage.tsdb.retention.time=30d",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    *self.extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()
            if self._wait_ready(timeout_s):
                return self
            self.stop()
        raise RuntimeError(f"prometheus did not start; see {self.dir / 'prometheus.log'}")

    def _wait_ready(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False  # exited: most likely the port was taken meanwhile
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class StubReply:
    status: int = 200
    body: bytes = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
    content_type: str = "application/json"
    delay_s: float = 0.0


@dataclass
class StubRequest:
    method: str
    path: str
    headers: dict[str, str]
    form: dict[str, list[str]]


class StubPrometheus:
    """A tiny HTTP server on a free loopback port that answers every request with
    ``reply`` (or ``reply_for(request)``) and records what it was sent. A delayed
    reply waits on an event that ``stop`` sets, so no thread outlives the test."""

    def __init__(self, reply: StubReply | None = None) -> None:
        import http.server
        import threading
        import urllib.parse

        self.reply = reply or StubReply()
        self.requests: list[StubRequest] = []
        self._released = threading.Event()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8") if length else ""
                stub.requests.append(
                    StubRequest(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        urllib.parse.parse_qs(raw, keep_blank_values=True),
                    )
                )
                reply = stub.reply
                if reply.delay_s:
                    stub._released.wait(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = _answer
            do_POST = _answer

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StubPrometheus:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
