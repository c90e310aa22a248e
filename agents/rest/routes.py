"""The routes: each a path, its parameters and the named document it runs.

The handler parses the parameters (400 on anything it cannot use), runs the document
through the runner for the request's principal, and answers its ``data`` and
``errors`` with the status their codes call for. A paged route also says where the next
page is (``next``: the same URL with ``after`` set), or null at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from openrl_inspect.agents import narrow
from openrl_inspect.agents.rest.params import ID_PATTERN, Param, parse_all
from openrl_inspect.agents.rest.status import status
from openrl_inspect.core import domain
from openrl_inspect.core.errors import ClientDisconnected, InvalidInput, code_of
from openrl_inspect.core.principal import NOBODY, SCOPE_KEY
from openrl_inspect.execution import Answer, Request, Runner
from openrl_inspect.execution.disconnect import unless_disconnected
from openrl_inspect.schema.logs.types import LogSeverity
from openrl_inspect.telemetry.records import CLIENT_DISCONNECTED, RECORD, RequestRecord
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

WINDOW_MAX = 31 * 86400.0
# The GraphQL enums' names (Strawberry names each value by its member's name).
MODEL_STATES = tuple(s.name for s in domain.ModelState)
SEVERITIES = tuple(s.name for s in LogSeverity)


def _id(name: str = "id", what: str = "model") -> Param:
    return Param(
        name, "string", f"The {what}'s id.", where="path", required=True, pattern=ID_PATTERN
    )


def _first(default: int, maximum: int = 100, name: str = "first", what: str = "items") -> Param:
    return Param(
        name, "integer", f"{what} per page (default {default}).", minimum=1, maximum=maximum
    )


AFTER = Param("after", "string", "The cursor to go on from: the last answer's `next` holds it.")
WINDOW = Param(
    "window",
    "number",
    "Seconds before now (at most 31 days).",
    minimum=0,
    exclusive_minimum=True,
    maximum=WINDOW_MAX,
)


@dataclass(frozen=True)
class RouteSpec:
    path: str
    summary: str
    description: str
    documents: tuple[str, ...]
    root: str  # the field whose null answer takes the error's status
    params: tuple[Param, ...] = ()
    page: tuple[str, ...] | None = None  # where the pageInfo is, under data
    # Several documents: which one a request runs, from its variables.
    choose: Callable[[dict[str, Any]], tuple[str, str]] | None = None
    # Filters of the page (``Param.local``): applied to the answer, in place.
    narrow: Callable[[dict[str, Any], dict[str, Any]], None] | None = None

    @property
    def name(self) -> str:
        return self.documents[0]


def _activity(variables: dict[str, Any]) -> tuple[str, str]:
    given = [k for k in ("model", "node", "gpu") if k in variables]
    if len(given) != 1:
        raise InvalidInput(parameter="model", message="give exactly one of model, node or gpu")
    return {
        "model": ("activity_model", "model"),
        "node": ("activity_node", "node"),
        "gpu": ("activity_gpu", "gpu"),
    }[given[0]]


def _inventory(data: dict[str, Any], filters: dict[str, Any]) -> None:
    narrow.inventory(data, owner=filters.get("owner"), model_state=filters.get("modelState"))


SPECS: tuple[RouteSpec, ...] = (
    RouteSpec(
        "/inventory",
        "Sessions and their models, with placement and live cluster state",
        "Sessions newest first, each with its models: state, step count, latest placement "
        "(node, GPUs) and live pods. Filter sessions by `state`; page with `after`. `owner` "
        "and `modelState` filter each page (counts stay those of the page before filtering).",
        ("inventory",),
        "sessions",
        (
            Param(
                "state",
                "enum",
                "Live or closed sessions (default LIVE).",
                choices=tuple(s.name for s in domain.SessionState),
            ),
            _first(10, 50, what="Sessions"),
            AFTER,
            _first(20, 50, name="models", what="Models of each session"),
            Param("owner", "string", "Only this owner's sessions.", local=True),
            Param(
                "modelState", "enum", "Only models in this state.", choices=MODEL_STATES, local=True
            ),
        ),
        page=("sessions",),
        narrow=_inventory,
    ),
    RouteSpec(
        "/models/{id}/summary",
        "A model's diagnosis",
        "Why the model is slow, stuck, waiting or dead: one verdict, the ranked causes with "
        "their evidence and where to look next (logs, pods, nodes, a drill-in query).",
        ("model_summary",),
        "model",
        (
            _id(),
            Param(
                "steps", "integer", "Recent steps to judge (default 20).", minimum=1, maximum=100
            ),
        ),
    ),
    RouteSpec(
        "/models/{id}/steps",
        "A model's steps and their ops",
        "Steps newest first, each with its ops (kind, status, health, queue wait, duration).",
        ("model_steps",),
        "model",
        (_id(), _first(20, what="Steps"), AFTER, _first(20, name="ops", what="Ops of each step")),
        page=("model", "steps"),
    ),
    RouteSpec(
        "/models/{id}",
        "A model",
        "Its state and history, placements, workers, open ops and live pods.",
        ("model",),
        "model",
        (_id(),),
    ),
    RouteSpec(
        "/sessions/{id}/summary",
        "A session's summary",
        "Its models rolled up: counts by verdict, the worst ones with their top cause, pace.",
        ("session_summary",),
        "session",
        (
            _id(what="session"),
            Param("worst", "integer", "Worst models to list (default 5).", minimum=1, maximum=20),
        ),
    ),
    RouteSpec(
        "/attention",
        "The models that most need a person",
        "Most urgent first (failed, lost, stuck, stalled, waiting, slow), each with its top cause.",
        ("attention",),
        "attention",
        (
            Param("first", "integer", "Models to list (default 10).", minimum=1, maximum=100),
            Param(
                "scan",
                "integer",
                "Newest models of each live state to judge (default 50).",
                minimum=1,
                maximum=100,
            ),
        ),
    ),
    RouteSpec(
        "/logs",
        "A model's logs",
        "Worker and client lines, oldest first, bounded; with the Cloud Logging filter and a "
        "Logs Explorer link for everything else. Page with `after`.",
        ("logs",),
        "model",
        (
            Param("model", "string", "The model's id.", required=True, pattern=ID_PATTERN),
            Param("since", "datetime", "Window start (ISO 8601 with a zone)."),
            Param("until", "datetime", "Window end (ISO 8601 with a zone)."),
            Param("severity", "enum", "Only lines at least this severe.", choices=SEVERITIES),
            Param("text", "string", "Only lines containing this (any case)."),
            Param("first", "integer", "Lines per page (default 100).", minimum=1, maximum=100),
            AFTER,
        ),
        page=("model", "logs"),
    ),
    RouteSpec(
        "/activity",
        "GPU duty: of a model's GPUs, a node's, or one GPU",
        "Exactly one of `model`, `node` or `gpu`: per-GPU DCGM duty (0..1) over `window` "
        "seconds, and who holds each GPU.",
        ("activity_model", "activity_node", "activity_gpu"),
        "model",
        (
            Param("model", "string", "A model's id: the GPUs it held.", pattern=ID_PATTERN),
            Param("node", "string", "A node's name: its GPUs."),
            Param("gpu", "string", "A GPU's device UUID."),
            WINDOW,
        ),
        choose=_activity,
    ),
    RouteSpec(
        "/query",
        "Raw PromQL (operators; off by default)",
        "An instant query at `time` (default now), or a range `start`..`end` by `step`; capped "
        "in range, series and samples. Answers 403 RAW_QUERY_DISABLED unless "
        "OPENRL_INSPECT_PROMETHEUS_RAW_QUERY is true, and 403 FORBIDDEN to a viewer.",
        ("prometheus_query",),
        "prometheusQuery",
        (
            Param("query", "string", "The PromQL expression.", required=True),
            Param("time", "datetime", "Instant queries: evaluate at."),
            Param("start", "datetime", "Range start."),
            Param("end", "datetime", "Range end."),
            Param(
                "step",
                "number",
                "Range step, seconds.",
                minimum=0,
                exclusive_minimum=True,
                maximum=86400,
            ),
        ),
    ),
)


def _json(body: dict[str, Any], code: int) -> Response:
    return JSONResponse(body, status_code=code, headers={"cache-control": "no-store"})


def _next(request: HttpRequest, spec: RouteSpec, data: dict[str, Any] | None) -> str | None:
    node: Any = data
    for key in spec.page or ():
        node = node.get(key) if isinstance(node, dict) else None
    info = node.get("pageInfo") if isinstance(node, dict) else None
    if not isinstance(info, dict) or not info.get("hasNextPage") or not info.get("endCursor"):
        return None
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "after"]
    query.append(("after", info["endCursor"]))
    return f"{request.url.path}?{urlencode(query)}"


def _log(request: HttpRequest, operation: str, codes: list[str]) -> None:
    # The request's log line names the document and its codes, as for /graphql.
    record = request.scope.get(RECORD)
    if isinstance(record, RequestRecord):
        record.operation = operation
        record.codes.extend(codes)


def handler(runner: Runner, spec: RouteSpec) -> Callable[[HttpRequest], Any]:
    async def endpoint(request: HttpRequest) -> Response:
        query: dict[str, list[str]] = {}
        for key, value in request.query_params.multi_items():
            query.setdefault(key, []).append(value)
        try:
            variables = parse_all(spec.params, query, request.path_params)
            name, root = spec.choose(variables) if spec.choose else (spec.name, spec.root)
        except InvalidInput as exc:
            refused = Answer.refused(exc)
            _log(request, spec.name, refused.codes)
            return _json(refused.body(), exc.status)
        local = {p.var for p in spec.params if p.local}
        filters = {k: variables.pop(k) for k in local if k in variables}
        principal = request.scope.get(SCOPE_KEY, NOBODY)
        document = Request(runner.documents[name].text, variables)
        running = runner.run(document, request.app.state.backends, principal)
        try:
            answer: Answer = await unless_disconnected(request.receive, running)
        except ClientDisconnected:
            # Its work cancelled (unless shared); the response goes nowhere.
            _log(request, name, [CLIENT_DISCONNECTED])
            return Response(status_code=499)
        _log(request, name, answer.codes)
        if spec.narrow is not None and answer.data is not None:
            spec.narrow(answer.data, filters)
        out = answer.body()
        if spec.page is not None:
            out["next"] = _next(request, spec, answer.data)
        code = status(answer.data, root, answer.codes)
        response = _json(out, code)
        waits = [w for w in (code_of(c).retry_after_s for c in answer.codes) if w is not None]
        if code == 429 and waits:
            response.headers["retry-after"] = str(max(waits))
        return response

    return endpoint


def _starlette_path(path: str) -> str:
    # Ids may hold a slash (``state.keys``): the id parameter takes the rest of the path.
    return path.replace("{id}", "{id:path}")


def routes(runner: Runner, prefix: str) -> list[Route]:
    # Longest first: ``/models/{id}`` would otherwise take ``/models/x/summary``.
    ordered = sorted(SPECS, key=lambda s: -len(s.path))
    return [
        Route(prefix + _starlette_path(s.path), handler(runner, s), methods=["GET"])
        for s in ordered
    ]
