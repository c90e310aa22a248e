"""A local API server for ``coordination.k8s.io/v1`` Leases, in the real wire format.

GET, POST (create; 409 ``AlreadyExists`` when it exists) and PUT (replace; 409
``Conflict`` when the body's ``metadata.resourceVersion`` is not the stored one) on
``/apis/coordination.k8s.io/v1/namespaces/<ns>/leases[/<name>]``, with a bearer token,
as the API server answers them (``Status`` objects on failure, ``resourceVersion`` and
``uid`` set by the server). Every body written is checked against the official client's
``V1Lease`` model. ``requests`` records (verb, path); ``fail_with`` answers every request
with that HTTP status (an API server in trouble). Discovery (``/apis``,
``/apis/coordination.k8s.io/<version>``) answers with the versions in ``served``, counted
in ``discoveries``, not in ``requests``.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.client_models import roundtrip
from support.fake_kube import TOKEN, status_body

GROUP = "coordination.k8s.io"
_PATH = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/?]+))?$")


class FakeLeases:
    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail_with: int | None = None
        self.served: tuple[str, ...] = ("v1",)
        self.discoveries = 0
        self._rv = 100
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _discovery(self, path: str) -> tuple[int, Any] | None:
        parts = [p for p in path.split("?")[0].split("/") if p]
        versions = [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in self.served]
        if parts == ["apis"]:
            group: dict[str, Any] = {"name": GROUP, "versions": versions}
            if versions:
                group["preferredVersion"] = versions[0]
            groups = [group] if versions else []
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if len(parts) == 3 and parts[:2] == ["apis", GROUP] and parts[2] in self.served:
            resource = {"name": "leases", "singularName": "lease", "namespaced": True}
            resource |= {"kind": "Lease", "verbs": ["create", "get", "list", "update"]}
            body = {"kind": "APIResourceList", "apiVersion": "v1"}
            return 200, body | {"groupVersion": f"{GROUP}/{parts[2]}", "resources": [resource]}
        return None

    def handle(self, verb: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        with self._lock:
            if verb == "GET" and (discovered := self._discovery(path)) is not None:
                self.discoveries += 1
                return discovered
            self.requests.append((verb, path.split("?")[0]))
            if self.fail_with is not None:
                return self.fail_with, status_body(self.fail_with, "InternalError", "failing")
            match = _PATH.match(path.split("?")[0])
            if not match:
                return 404, status_body(404, "NotFound", "the server could not find the resource")
            namespace, name = match.group(1), match.group(2)
            if verb == "GET" and name:
                found = self.leases.get((namespace, name))
                if found is None:
                    return 404, status_body(404, "NotFound", f'leases "{name}" not found')
                return 200, found
            if verb == "POST" and not name and body is not None:
                return self._create(namespace, body)
            if verb == "PUT" and name and body is not None:
                return self._replace(namespace, name, body)
            return 405, status_body(405, "MethodNotAllowed", "not supported here")

    def _create(self, namespace: str, body: dict[str, Any]) -> tuple[int, Any]:
        name = body["metadata"]["name"]
        if (namespace, name) in self.leases:
            return 409, status_body(409, "AlreadyExists", f'leases "{name}" already exists')
        body["metadata"].update(namespace=namespace, uid=str(uuid.uuid4()))
        return 201, self._store(namespace, name, body)

    def _replace(self, namespace: str, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        current = self.leases.get((namespace, name))
        if current is None:
            return 404, status_body(404, "NotFound", f'leases "{name}" not found')
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            message = (
                f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": the '
                "object has been modified; please apply your changes to the latest version "
                "and try again"
            )
            return 409, status_body(409, "Conflict", message)
        body["metadata"]["uid"] = current["metadata"]["uid"]
        return 200, self._store(namespace, name, body)

    def _store(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self._rv += 1
        body["metadata"]["resourceVersion"] = str(self._rv)
        roundtrip(body, "V1Lease")
        self.leases[namespace, name] = body
        return body

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, verb: str) -> None:
                if self.headers.get("authorization") != f"Bearer {TOKEN}":
                    status, answer = 401, status_body(401, "Unauthorized", "Unauthorized")
                else:
                    length = int(self.headers.get("content-length") or 0)
                    body = json.loads(self.rfile.read(length)) if length else None
                    status, answer = fake.handle(verb, self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def do_PUT(self) -> None:
                self._answer("PUT")

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@contextmanager
def fake_leases() -> Iterator[FakeLeases]:
    fake = FakeLeases()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
