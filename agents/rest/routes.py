# size: one table of the routes, each with its parameters; a route is a row, not a concept
"""The routes: each a path, its parameters and the named document it runs.

The handler parses the parameters (400 on anything it cannot use), runs the document
through the runner for the request's principal, and answers its ``data`` and
``errors`` with the status their codes call for. A paged route also says where the next
page is (``next``: the same URL with ``after`` set), or null at the end.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from openrl_inspect.agents import narrow
from openrl_inspect.agents.limits import limits
from openrl_inspect.agents.rest.params import (
    ID_PATTERN,
    NODE_PATTERN,
    UUID_PATTERN,
    Param,
    parse_all,
)
from openrl_inspect.agents.rest.status import status
from openrl_inspect.core import domain
from openrl_inspect.core.codes import code_of
from openrl_inspect.core.errors import ClientDisconnected, InvalidInput
from openrl_inspect.core.principal import NOBODY, SCOPE_KEY
from openrl_inspect.execution import Answer, Request, Runner
from openrl_inspect.execution.disconnect import unless_disconnected
from openrl_inspect.schema.logs.types import LogSeverity
from openrl_inspect.telemetry.records import CLIENT_DISCONNECTED, RECORD, RequestRecord
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

# The raw query's bounds on this route: the field's defaults (adapters.prometheus
# RawQuerySettings: 24 h of range, 4 KiB of query, each character up to 4 bytes).
RAW_RANGE_S = 24 * 3600.0
RAW_QUERY_CHARS = 1024
# The GraphQL enums' names (Strawberry names each value by its member's name).
MODEL_STATES = tuple(s.name for s in domain.ModelState)
SEVERITIES = tuple(s.name for s in LogSeverity)


def _id(name: str = "id", what: str = "model", variable: str | None = None) -> Param:
    return Param(
        name,
        "string",
        f"The {what}'s id.",
        variable=variable,
        where="path",
        required=True,
        pattern=ID_PATTERN,
    )


def _first(
    default: int, maximum: int | None = None, name: str = "first", what: str = "items"
) -> Param:
    # Without a maximum of its own, a page's: the server's setting.
    return Param(
        name,
        "integer",
        f"{what} per page (default {default}).",
        minimum=1,
        maximum=maximum,
        limit=None if maximum is not None else "page",
    )


AFTER = Param("after", "string", "The cursor to go on from: the last answer's `next` holds it.")


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
    # The document's variables from the route's (``Param.local`` ones included).
    prepare: Callable[[dict[str, Any], dict[str, Any], float], None] | None = None

    @property
    def name(self) -> str:
        return self.documents[0]


def _window(default: float) -> Param:
    return Param(
        "window",
        "number",
        f"Seconds before now (default {default:g}, at most 31 days).",
        limit="window_s",
    )


def _raw_range(variables: dict[str, Any], local: dict[str, Any], now: float) -> None:
    """``window`` as the field's range: the last ``window`` seconds, ending now."""
    window = local.get("window")
    if window is not None:
        variables["start"] = datetime.fromtimestamp(now - window, UTC).isoformat()
        variables["end"] = datetime.fromtimestamp(now, UTC).isoformat()


def _inventory(data: dict[str, Any], filters: dict[str, Any]) -> None:
    # ``owner`` is the document's (filtered before the page is cut); a model's state
    # under its session is not an argument of a session's models.
    narrow.inventory(data, model_state=filters.get("modelState"))


SPECS: tuple[RouteSpec, ...] = (
    RouteSpec(
        "/inventory",
        "Sessions and their models, with placement and live cluster state",
        "Sessions newest first, each with its models: state, step count, latest placement "
        "(node, GPUs) and live pods. Filter sessions by `state` and `owner` (before the page "
        "is cut: full pages, an exact `totalCount`); page with `after`. `modelState` "
        "filters each session's models (their counts stay those before filtering).",
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
            Param("owner", "string", "Only this owner's sessions.", min_length=1, max_length=256),
            Param(
                "modelState", "enum", "Only models in this state.", choices=MODEL_STATES, local=True
            ),
        ),
        page=("sessions",),
        narrow=_inventory,
    ),
    RouteSpec(
        "/models",
        "Models by state, owner, session and base model",
        "Models matching every filter given (at least one), newest first: filtered before "
        "the page is cut, so every page is full unless it is the last and `totalCount` is "
        "exact. Page with `after`.",
        ("models_by_state",),
        "models",
        (
            Param("state", "enum", "Only models in this state.", choices=MODEL_STATES),
            Param("owner", "string", "Only this owner's models.", min_length=1, max_length=256),
            Param("session", "string", "Only this session's models.", pattern=ID_PATTERN),
            Param(
                "baseModel",
                "string",
                "Only models of this base model.",
                min_length=1,
                max_length=256,
            ),
            _first(20, 100, what="Models"),
            AFTER,
        ),
        page=("models",),
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
            Param("steps", "integer", "Recent steps to judge (default 20).", limit="steps"),
        ),
    ),
    RouteSpec(
        "/models/{id}/timeline",
        "A model's timeline",
        "What happened to it, newest first, from every backend: states, steps, failed ops, "
        "workers and placements (Redis); Workload conditions and Events, also of pods long "
        "gone (Kubernetes, then Cloud Logging's events log); idle GPU spans (Prometheus); the "
        "first ERROR of each message (Cloud Logging). Says which sources were unavailable.",
        ("model_timeline",),
        "model",
        (
            _id(),
            Param("since", "datetime", "Window start (ISO 8601 with a zone; default: created)."),
            Param("until", "datetime", "Window end (ISO 8601 with a zone; default: now)."),
            _first(50, 500, what="Entries"),
            AFTER,
        ),
        page=("model", "timeline"),
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
            Param("worst", "integer", "Worst models to list (default 5).", limit="worst"),
        ),
    ),
    RouteSpec(
        "/attention",
        "The models that most need a person",
        "Most urgent first (failed, lost, stuck, stalled, waiting), each with its top cause, "
        "over every live model; `remaining` says how many more need a person, `endCursor` "
        "goes on as `after`.",
        ("attention",),
        "attention",
        (
            Param("first", "integer", "Models to list (default 10).", limit="worst"),
            AFTER,
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
            Param("first", "integer", "Lines per page (default 100).", limit="page"),
            AFTER,
        ),
        page=("model", "logs"),
    ),
    RouteSpec(
        "/models/{id}/activity",
        "GPU duty of the GPUs a model held",
        "Per-GPU DCGM duty (0..1) over `window` seconds of every GPU the model held, and "
        "who holds each now.",
        ("activity_model",),
        "model",
        (_id(variable="model"), _window(3600)),
    ),
    RouteSpec(
        "/nodes/{name}/activity",
        "GPU duty of a node's GPUs",
        "Per-GPU DCGM duty (0..1) over `window` seconds of the node's GPUs, whether each is "
        "held, and by whom.",
        ("activity_node",),
        "node",
        (
            Param(
                "name",
                "string",
                "The node's name.",
                variable="node",
                where="path",
                required=True,
                pattern=NODE_PATTERN,
            ),
            _window(600),
        ),
    ),
    RouteSpec(
        "/gpus/{uuid}/activity",
        "GPU duty of one GPU",
        "One GPU's DCGM duty (0..1) over `window` seconds, its node, and who holds it.",
        ("activity_gpu",),
        "gpu",
        (
            Param(
                "uuid",
                "string",
                "The GPU's device UUID (GPU-... or MIG-...).",
                variable="gpu",
                where="path",
                required=True,
                pattern=UUID_PATTERN,
            ),
            _window(600),
        ),
    ),
    RouteSpec(
        "/query",
        "Raw PromQL (operators; off by default)",
        "An instant query now, or with `window` a range query over the last `window` "
        "seconds, its step the smallest within the caps; capped in range, series and "
        "samples. Answers 403 RAW_QUERY_DISABLED unless OPENRL_INSPECT_PROMETHEUS_RAW_QUERY "
        "is true, and 403 FORBIDDEN to a viewer.",
        ("prometheus_query",),
        "prometheusQuery",
        (
            Param(
                "query",
                "string",
                "The PromQL expression.",
                required=True,
                min_length=1,
                max_length=RAW_QUERY_CHARS,
            ),
            Param(
                "window",
                "number",
                f"A range query over this many seconds before now (1 to {RAW_RANGE_S:g}).",
                minimum=1,
                maximum=RAW_RANGE_S,
                local=True,
            ),
        ),
        prepare=_raw_range,
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
    params = tuple(p.under(limits(runner.settings.bounds)) for p in spec.params)

    async def endpoint(request: HttpRequest) -> Response:
        query: dict[str, list[str]] = {}
        for key, value in request.query_params.multi_items():
            query.setdefault(key, []).append(value)
        try:
            variables = parse_all(params, query, request.path_params)
            name, root = spec.choose(variables) if spec.choose else (spec.name, spec.root)
        except InvalidInput as exc:
            refused = Answer.refused(exc)
            _log(request, spec.name, refused.codes)
            return _json(refused.body(), exc.status)
        local = {p.var for p in spec.params if p.local}
        filters = {k: variables.pop(k) for k in local if k in variables}
        if spec.prepare is not None:
            spec.prepare(variables, filters, time.time())
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


class _AnyText(Convertor[str]):
    """A path parameter that takes any text, slashes and newlines included, so that an id
    the route cannot use is refused by its pattern (BAD_INPUT), not left unrouted (404)."""

    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anytext", _AnyText())


def _starlette_path(path: str) -> str:
    # A path parameter takes any text (``_AnyText``); its pattern then refuses what it
    # cannot use.
    return re.sub(r"\{(\w+)\}", r"{\1:anytext}", path)


def routes(runner: Runner, prefix: str) -> list[Route]:
    # Longest first: ``/models/{id}`` would otherwise take ``/models/x/summary``.
    ordered = sorted(SPECS, key=lambda s: -len(s.path))
    return [
        Route(prefix + _starlette_path(s.path), handler(runner, s), methods=["GET"])
        for s in ordered
    ]
