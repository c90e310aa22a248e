"""A local fake Kubernetes API server that speaks the real wire format.

Enough of the API for the inspector's adapter, driven by the OFFICIAL client through a
kubeconfig (``write_kubeconfig``):

* core/v1 pods and nodes, ``kueue.x-k8s.io`` workloads (v1beta1 and v1beta2 by
  default), ``resource.k8s.io`` (v1 and/or v1beta2, v1beta1) resourceslices and
  resourceclaims, ``batch/v1`` jobs and ``jobset.x-k8s.io/v1alpha2`` jobsets,
  ``events.k8s.io/v1`` events, cluster-wide and namespaced, and devicetaintrules in
  those of v1, v1beta2 and v1alpha3 that are served (``only_versions`` narrows a
  resource to some versions of its group). Every object is served at the version asked
  for, converted as the API server or the CRD's conversion webhook would
  (``kube_conversion``), whatever version it was written in;
* discovery: ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<group>/<v>``,
  ``/version``;
* LIST with ``metadata.resourceVersion``, ``limit``/``continue`` paging over a consistent
  snapshot (HTTP 410 for a continue token older than the compacted history),
  ``labelSelector`` (``k=v``, ``k!=v``, ``k in (a,b)``, ``k``) and ``fieldSelector``
  (``metadata.name``, ``metadata.namespace``, ``spec.nodeName``, ``spec.driver``);
* WATCH (``?watch=true``): chunked newline-delimited JSON events ADDED, MODIFIED,
  DELETED, BOOKMARK (with ``allowWatchBookmarks``), and an ERROR event carrying a Status
  with code 410 for a resourceVersion older than the compacted history; the server ends
  a watch after ``timeoutSeconds``;
* pod logs (``/api/v1/namespaces/<ns>/pods/<name>/log``, text) with ``container``,
  ``timestamps`` (RFC3339Nano prefix), ``sinceSeconds``, ``tailLines``, ``limitBytes`` and
  ``previous``, counted as ("get", "pods/log"), from lines set with ``add_log``.

Tests mutate objects (``put``/``delete`` emit watch events), ``expire_history`` (force
410s), ``stop``/``start`` on the same port, slow every answer (``delay_s``), fail a
resource (``fail``), hide API groups (``served``), and read ``counts`` of requests by
(verb, resource). It runs in its own threads, independent of the test's event loop.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from support.kube_conversion import convert

Obj = dict[str, Any]
TOKEN = "fake-token-for-tests"


@dataclass(frozen=True)
class Res:
    group: str
    plural: str
    kind: str
    namespaced: bool


RESOURCES = (
    Res("", "pods", "Pod", True),
    Res("", "nodes", "Node", False),
    Res("kueue.x-k8s.io", "workloads", "Workload", True),
    Res("resource.k8s.io", "resourceslices", "ResourceSlice", False),
    Res("resource.k8s.io", "resourceclaims", "ResourceClaim", True),
    Res("batch", "jobs", "Job", True),
    Res("jobset.x-k8s.io", "jobsets", "JobSet", True),
    Res("resource.k8s.io", "devicetaintrules", "DeviceTaintRule", False),
    Res("events.k8s.io", "events", "Event", True),
)
_BY_KIND = {(r.group, r.kind): r for r in RESOURCES}
_BY_PLURAL = {(r.group, r.plural): r for r in RESOURCES}


def status_body(code: int, reason: str, message: str) -> Obj:
    """A ``Status`` failure as the API server answers it."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _split_selector(text: str) -> list[str]:
    """Split on commas that are neither escaped nor inside ``in (...)``."""
    parts, current, depth, escaped = [], "", 0, False
    for ch in text:
        if escaped:
            current += ch
            escaped = False
            continue
        if ch == "\\":
            current += ch
            escaped = True
            continue
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current:
        parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def label_matches(selector: str, labels: Mapping[str, str]) -> bool:
    for req in _split_selector(selector):
        if m := re.fullmatch(r"([^\s!=]+)\s+(in|notin)\s+\((.*)\)", req):
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
            if (labels.get(key) in values) != (op == "in"):
                return False
        elif "!=" in req:
            key, value = req.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in req:
            key, value = req.replace("==", "=").split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif req.startswith("!"):
            if req[1:] in labels:
                return False
        elif req not in labels:
            return False
    return True


def _field_value(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def field_matches(selector: str, obj: Obj) -> bool:
    for req in _split_selector(selector):
        negate = "!=" in req
        key, raw = re.split(r"!=|==|=", req, maxsplit=1)
        value = re.sub(r"\\(.)", r"\1", raw)
        if (_field_value(obj, key.strip()) == value) == negate:
            return False
    return True


@dataclass
class _Event:
    rv: int
    res: Res
    type: str
    obj: Obj


class FakeKube:
    """The fake API server's state and its HTTP front end (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._objects: dict[Res, dict[tuple[str, str], Obj]] = {r: {} for r in RESOURCES}
        self._history: list[_Event] = []
        self._snapshots: dict[str, tuple[int, list[Obj]]] = {}
        self._bookmarks = 0
        self._epoch = 0  # bumped to end every open watch
        self._expire_next_continue = False
        self.expired_watches = 0  # ERROR 410 events sent
        self.expired_continues = 0  # HTTP 410 answers to a continue token
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (verb, path, query)
        self.rv = 1000
        self.compacted_rv = 0
        self.counts: Counter[tuple[str, str]] = Counter()
        self.delay_s = 0.0
        self.failures: dict[str, int] = {}
        # (namespace, pod, container, previous) -> [(epoch seconds, line)], oldest first
        self.logs: dict[tuple[str, str, str, bool], list[tuple[float, str]]] = {}
        self.log_clock: Any = time.time  # the kubelet's "now", for sinceSeconds
        # group -> served versions, the server's preferred first (newest, as the API
        # server sorts them whatever the storage version).
        self.served: dict[str, tuple[str, ...]] = {
            "kueue.x-k8s.io": ("v1beta2", "v1beta1"),
            "batch": ("v1",),
            "jobset.x-k8s.io": ("v1alpha2",),
            "resource.k8s.io": ("v1", "v1beta1"),
            "events.k8s.io": ("v1",),
        }
        # plural -> the versions of its group that have it (absent: all served ones)
        self.only_versions: dict[str, tuple[str, ...]] = {
            "devicetaintrules": ("v1", "v1beta2", "v1alpha3"),
        }
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()
        self._running = threading.Event()
        self._open_watches = 0

    # --- lifecycle ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Listen (on the previous port after a ``stop``, else on a free one)."""
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self.port = server.server_address[1]
        self._server = server
        self._running.set()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and cut every open connection (watches included)."""
        if self._server is None:
            return
        self._running.clear()
        with self._cond:
            self._cond.notify_all()
        self._server.shutdown()
        self._server.server_close()
        with self._cond:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeKube:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- mutations (each emits a watch event) -------------------------------------------

    def put(self, *objects: Mapping[str, Any]) -> None:
        """Create or replace objects (by apiVersion group, kind, namespace and name)."""
        for raw in objects:
            obj = copy.deepcopy(dict(raw))
            res = _BY_KIND[(obj["apiVersion"].rpartition("/")[0], obj["kind"])]
            meta = obj.setdefault("metadata", {})
            key = (meta.get("namespace", "") if res.namespaced else "", meta["name"])
            with self._cond:
                self.rv += 1
                meta["resourceVersion"] = str(self.rv)
                meta.setdefault("uid", f"uid-{res.plural}-{key[0]}-{key[1]}")
                meta.setdefault("creationTimestamp", "2026-01-05T10:00:00Z")
                kind = "MODIFIED" if key in self._objects[res] else "ADDED"
                self._objects[res][key] = obj
                self._history.append(_Event(self.rv, res, kind, copy.deepcopy(obj)))
                self._cond.notify_all()

    def delete(self, ref: Mapping[str, Any]) -> None:
        """Delete the object ``ref`` names (its apiVersion, kind, namespace and name)."""
        res = _BY_KIND[(ref["apiVersion"].rpartition("/")[0], ref["kind"])]
        meta = ref["metadata"]
        key = (meta.get("namespace", "") if res.namespaced else "", meta["name"])
        with self._cond:
            obj = self._objects[res].pop(key)
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._history.append(_Event(self.rv, res, "DELETED", obj))
            self._cond.notify_all()

    def expire_history(self) -> None:
        """Compact the history: every watch open now ends, and resuming from any
        resourceVersion seen so far (or a continue token) gets 410 Gone; a fresh LIST
        gives a resourceVersion that can be watched again."""
        with self._cond:
            self.rv += 1
            self.compacted_rv = self.rv
            self._history.clear()
            self._snapshots.clear()
            self._epoch += 1
            self._cond.notify_all()

    def end_watches(self) -> None:
        """End every open watch cleanly (as the server's own timeout would)."""
        with self._cond:
            self._epoch += 1
            self._cond.notify_all()

    def expire_next_continue(self) -> None:
        """Answer the next LIST continuation with HTTP 410 (a stale continue token)."""
        with self._cond:
            self._expire_next_continue = True

    def bookmark(self) -> None:
        """Send a BOOKMARK (at the current resourceVersion) on every watch that asked."""
        with self._cond:
            self._bookmarks += 1
            self._cond.notify_all()

    def add_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        lines: Iterable[tuple[float, str]],
        *,
        previous: bool = False,
    ) -> None:
        """Append log lines (epoch seconds, text) to a container (or its previous instance)."""
        with self._cond:
            stored = self.logs.setdefault((namespace, pod, container, previous), [])
            stored.extend(lines)
            stored.sort(key=lambda line: line[0])

    def count(self, verb: str, plural: str) -> int:
        with self._cond:
            return self.counts[verb, plural]

    def total_requests(self) -> int:
        with self._cond:
            return sum(self.counts.values())

    def open_watches(self) -> int:
        with self._cond:
            return self._open_watches

    # --- request handling ---------------------------------------------------------------

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._cond:
            (self._sockets.add if add else self._sockets.discard)(sock)

    def _wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self._running.is_set() and time.monotonic() < deadline:
            time.sleep(min(0.02, deadline - time.monotonic()))

    def handle(self, h: _Handler) -> None:
        url = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if h.headers.get("Authorization") != f"Bearer {TOKEN}":
            return h.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
        parts = [p for p in url.path.split("/") if p]
        if discovery := self._discovery(parts):
            with self._cond:
                self.counts["get", "discovery"] += 1
            return h.send_json(200, discovery)
        if (
            len(parts) == 7
            and parts[:3] == ["api", "v1", "namespaces"]
            and parts[4:7:2]
            == [
                "pods",
                "log",
            ]
        ):
            return self._log(h, parts[3], parts[5], url.path, query)
        route = self._route(parts)
        if route is None:
            return h.send_json(404, status_body(404, "NotFound", "the server could not find it"))
        res, version, namespace, name = route
        watching = query.get("watch") in ("true", "1")
        verb = "watch" if watching else ("get" if name else "list")
        with self._cond:
            self.counts[verb, res.plural] += 1
            self.requests.append((verb, url.path, query))
        if self.delay_s:
            self._wait(self.delay_s)
        if res.plural in self.failures:
            code = self.failures[res.plural]
            return h.send_json(code, status_body(code, "Failure", "injected failure"))
        if watching:
            return self._watch(h, res, version, namespace, query)
        if name:
            with self._cond:
                obj = self._objects[res].get((namespace or "", name))
            if obj is None:
                return h.send_json(
                    404, status_body(404, "NotFound", f'{res.plural} "{name}" not found')
                )
            return h.send_json(200, convert(obj, res.group, version))
        return self._list(h, res, version, namespace, query)

    def _discovery(self, parts: list[str]) -> Obj | None:
        if parts == ["version"]:
            return {"major": "1", "minor": "34", "gitVersion": "v1.34.0-fake"}
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["api", "v1"]:
            return self._resource_list("v1", "")
        if parts == ["apis"]:
            groups = [self._group(g) for g in self.served if self.served[g]]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if len(parts) == 2 and parts[0] == "apis" and self.served.get(parts[1]):
            return {"kind": "APIGroup", "apiVersion": "v1", **self._group(parts[1])}
        if len(parts) == 3 and parts[0] == "apis" and parts[2] in self.served.get(parts[1], ()):
            return self._resource_list(f"{parts[1]}/{parts[2]}", parts[1])
        return None

    def _group(self, group: str) -> Obj:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.served[group]]
        return {"name": group, "versions": versions, "preferredVersion": versions[0]}

    def _has(self, res: Res, version: str) -> bool:
        return version in self.only_versions.get(res.plural, (version,))

    def _resource_list(self, group_version: str, group: str) -> Obj:
        resources = [
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "list", "watch"],
            }
            for r in RESOURCES
            if r.group == group and self._has(r, group_version.rpartition("/")[2])
        ]
        return {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}

    def _route(self, parts: list[str]) -> tuple[Res, str, str | None, str | None] | None:
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis" and parts[2] in self.served.get(parts[1], ()):
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if len(rest) not in (1, 2):
            return None
        res = _BY_PLURAL.get((group, rest[0]))
        if res is None or (namespace is not None and not res.namespaced):
            return None
        if not self._has(res, version):
            return None
        return res, version, namespace, rest[1] if len(rest) == 2 else None

    def _log(
        self, h: _Handler, namespace: str, name: str, path: str, query: Mapping[str, str]
    ) -> None:
        with self._cond:
            self.counts["get", "pods/log"] += 1
            self.requests.append(("get", path, dict(query)))
            pod = self._objects[_BY_PLURAL["", "pods"]].get((namespace, name))
        if self.delay_s:
            self._wait(self.delay_s)
        if "pods/log" in self.failures:
            code = self.failures["pods/log"]
            return h.send_json(code, status_body(code, "Failure", "injected failure"))
        if pod is None:
            return h.send_json(404, status_body(404, "NotFound", f'pods "{name}" not found'))
        names = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        container = query.get("container")
        if container is None:
            if len(names) != 1:
                message = f"a container name must be specified for pod {name}"
                return h.send_json(400, status_body(400, "BadRequest", message))
            container = names[0]
        if container not in names:
            message = f"container {container} is not valid for pod {name}"
            return h.send_json(400, status_body(400, "BadRequest", message))
        previous = query.get("previous") in ("true", "1")
        with self._cond:
            lines = self.logs.get((namespace, name, container, previous))
            lines = list(lines) if lines is not None else None
        if lines is None and previous:
            message = f'previous terminated container "{container}" in pod "{name}" not found'
            return h.send_json(400, status_body(400, "BadRequest", message))
        lines = lines or []
        if "sinceSeconds" in query:
            since = self.log_clock() - int(query["sinceSeconds"])
            lines = [line for line in lines if line[0] >= since]
        if "tailLines" in query:
            tail = int(query["tailLines"])
            lines = lines[-tail:] if tail else []
        stamped = query.get("timestamps") in ("true", "1")
        body = "".join(
            (f"{_rfc3339_nano(at)} {text}\n" if stamped else f"{text}\n") for at, text in lines
        ).encode()
        if "limitBytes" in query:
            body = body[: int(query["limitBytes"])]
        h.send_bytes(200, body, "text/plain")

    def _matching(
        self, res: Res, version: str, namespace: str | None, query: Mapping[str, str]
    ) -> list[Obj]:
        labels, fields = query.get("labelSelector"), query.get("fieldSelector")
        out = []
        for key in sorted(self._objects[res]):
            obj = self._objects[res][key]
            if self._selected(obj, namespace, labels, fields):
                out.append(convert(obj, res.group, version))
        return out

    @staticmethod
    def _selected(obj: Obj, namespace: str | None, labels: str | None, fields: str | None) -> bool:
        meta = obj.get("metadata", {})
        if namespace is not None and meta.get("namespace") != namespace:
            return False
        if labels and not label_matches(labels, meta.get("labels") or {}):
            return False
        return not fields or field_matches(fields, obj)

    def _list(
        self, h: _Handler, res: Res, version: str, namespace: str | None, query: Mapping[str, str]
    ) -> None:
        limit = int(query.get("limit") or 0)
        with self._cond:
            if token := query.get("continue"):
                snapshot = self._snapshots.pop(token, None)
                if self._expire_next_continue:
                    self._expire_next_continue, snapshot = False, None
                if snapshot is None:
                    self.expired_continues += 1
                    message = (
                        "The provided continue parameter is too old "
                        "to display a consistent list result."
                    )
                    return h.send_json(410, status_body(410, "Expired", message))
                rv, items = snapshot
            else:
                rv, items = self.rv, self._matching(res, version, namespace, query)
            metadata: Obj = {"resourceVersion": str(rv)}
            if limit and len(items) > limit:
                items, rest = items[:limit], items[limit:]
                token = base64.urlsafe_b64encode(
                    f"{rv}:{len(self._snapshots)}:{time.monotonic_ns()}".encode()
                ).decode()
                self._snapshots[token] = (rv, rest)
                metadata["continue"] = token
                metadata["remainingItemCount"] = len(rest)
        group_version = f"{res.group}/{version}" if res.group else version
        body = {
            "kind": f"{res.kind}List",
            "apiVersion": group_version,
            "metadata": metadata,
            "items": items,
        }
        h.send_json(200, body)

    def _watch(
        self, h: _Handler, res: Res, version: str, namespace: str | None, query: Mapping[str, str]
    ) -> None:
        labels, fields = query.get("labelSelector"), query.get("fieldSelector")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
        group_version = f"{res.group}/{version}" if res.group else version
        h.start_stream()
        with self._cond:
            self._open_watches += 1
            start = query.get("resourceVersion") or ""
            pending: list[Obj] = []
            position = self.rv
            if start in ("", "0"):
                # No position: synthetic ADDED events for the current state first.
                current = self._matching(res, version, namespace, query)
                pending = [{"type": "ADDED", "object": o} for o in current]
            elif int(start) < self.compacted_rv:
                message = f"too old resource version: {start} ({self.compacted_rv})"
                pending = [{"type": "ERROR", "object": status_body(410, "Expired", message)}]
                position = -1
                self.expired_watches += 1
            else:
                position = int(start)
            seen_bookmarks = self._bookmarks
            epoch = self._epoch
        try:
            for event in pending:
                h.send_chunk(event)
            while position >= 0:
                with self._cond:
                    events = [
                        {"type": e.type, "object": convert(e.obj, res.group, version)}
                        for e in self._history
                        if e.rv > position
                        and e.res == res
                        and self._selected(e.obj, namespace, labels, fields)
                    ]
                    position = max(position, self.rv)
                    bookmark = bookmarks and self._bookmarks != seen_bookmarks
                    seen_bookmarks = self._bookmarks
                    if not events and not bookmark:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0 or not self._running.is_set() or self._epoch != epoch:
                            break
                        self._cond.wait(min(remaining, 0.5))
                        continue
                for event in events:
                    h.send_chunk(event)
                if bookmark:
                    meta = {"resourceVersion": str(position)}
                    obj = {"kind": res.kind, "apiVersion": group_version, "metadata": meta}
                    h.send_chunk({"type": "BOOKMARK", "object": obj})
            h.end_stream()
        except OSError:
            pass  # the client went away, or stop() cut the connection
        finally:
            with self._cond:
                self._open_watches -= 1

    # --- object access for assertions ---------------------------------------------------

    def objects(self, plural: str) -> Iterator[Obj]:
        with self._cond:
            res = next(r for r in RESOURCES if r.plural == plural)
            return iter([copy.deepcopy(o) for o in self._objects[res].values()])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        try:
            self.server.fake.handle(self)
        except OSError:
            self.close_connection = True

    def send_json(self, code: int, body: Obj) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_bytes(self, code: int, data: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def send_chunk(self, event: Obj) -> None:
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _rfc3339_nano(at: float) -> str:
    """As the kubelet stamps lines: RFC3339Nano, UTC, trailing zeros dropped."""
    moment = datetime.fromtimestamp(at, tz=UTC)
    fraction = f"{moment.microsecond * 1000:09d}".rstrip("0")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def write_kubeconfig(
    path: Path, server_url: str, *, context: str = "fake", token: str = TOKEN
) -> Path:
    """A kubeconfig (JSON is YAML) with one cluster, user and context for the fake."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server_url}}],
        "users": [{"name": f"{context}-user", "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": f"{context}-user"}}],
        "current-context": context,
    }
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.fixture
def fake_kube() -> Iterator[FakeKube]:
    """A started fake API server holding nothing; stopped after the test."""
    fake = FakeKube()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
