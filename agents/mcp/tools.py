"""The tools: each runs one of the registered documents for the caller, and fits
its answer to a token budget (``budget``).

They only read. Their inputs are typed (an enum where the API has one), their outputs
are ``ToolAnswer``; ids, states and codes are the API's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from openrl_inspect.agents import narrow
from openrl_inspect.agents.mcp.answer import Result, ToolAnswer, compact, fitted
from openrl_inspect.agents.mcp.budget import TOKENS, tokens
from openrl_inspect.core import cursor as codec
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.core.principal import Principal
from openrl_inspect.execution import Answer, Request, Runner
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.resolvers.summary.rollup import MAX_WORST
from pydantic import Field

#: Who calls, and over which backends: the HTTP endpoint reads them off the request,
#: stdio has its own.
Caller = Callable[[Context], tuple[Backends, Principal]]

# The GraphQL enums' names, spelt out for the tools' input schemas (a test holds them
# to the schema's).
ModelState = Literal["WAITING", "PLACED", "ACTIVE", "FAILED", "ENDED"]
Severity = Literal["DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL"]
SessionState = Literal["LIVE", "CLOSED"]
#: The GraphQL tool's node cost limit: a tenth of an ordinary request's default.
GRAPHQL_MAX_NODES = 25_000
GRAPHQL_TOKENS = 4000
LOGS_CURSOR = "mcp-logs"

ModelId = Annotated[str, Field(description="The model's id.", min_length=1, max_length=128)]
Cursor = Annotated[
    str | None,
    Field(description="The `cursor` of the previous answer, to go on.", max_length=codec.MAX_CHARS),
]
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_BUDGET = f" Answers within {TOKENS} tokens; `truncated`, `cut` and `cursor` say what was left."


def _page(data: Any, *path: str) -> tuple[str | None, bool]:
    node = data
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    info = node.get("pageInfo") if isinstance(node, dict) else None
    if isinstance(info, dict) and info.get("hasNextPage"):
        return info.get("endCursor"), True
    return None, False


async def _paged(
    run: Callable[[int], Awaitable[Answer]],
    first: int,
    path: tuple[str, ...],
    budget: int,
    wrap: Callable[[str, Any], str] | None = None,
) -> ToolAnswer:
    """Ask for ``first`` items, then fewer until the answer fits: the cursor then goes
    on from the last item shown. ``wrap`` makes the tool's cursor of the API's."""
    answer = await run(first)
    while first > 1 and answer.data is not None and tokens(answer.data) > budget - 300:
        first = max(1, first // 2)
        answer = await run(first)
    cursor, more = _page(answer.data, *path)
    if cursor is not None and wrap is not None:
        cursor = wrap(cursor, answer.data)
    return fitted(answer, budget, cursor, more)


class Tools:
    """The tools over ``runner``, answering for whoever ``caller`` says is asking; their
    titles and descriptions are in ``TOOLS``."""

    def __init__(self, runner: Runner, caller: Caller) -> None:
        self.runner = runner
        self.caller = caller

    async def _run(self, ctx: Context, name: str, variables: dict[str, Any]) -> Answer:
        backends, principal = self.caller(ctx)
        document = Request(self.runner.documents[name].text, variables)
        return await self.runner.run(document, backends, principal)

    async def attention(
        self,
        ctx: Context,
        first: Annotated[int, Field(ge=1, le=MAX_WORST, description="Models to list.")] = 10,
    ) -> Result:
        return compact(fitted(await self._run(ctx, "attention", {"first": first}), TOKENS))

    async def list_models(
        self,
        ctx: Context,
        state: ModelState | None = None,
        owner: Annotated[str | None, Field(description="Only this session owner's.")] = None,
        session: Annotated[str | None, Field(description="Only this session's.")] = None,
        session_state: SessionState = "LIVE",
        cursor: Cursor = None,
    ) -> Result:
        if state is not None:
            variables: dict[str, Any] = {"state": state, "after": cursor}

            async def page(n: int) -> Answer:
                found = await self._run(ctx, "models_by_state", {**variables, "first": n})
                if found.data is not None:
                    narrow.models(found.data, owner, session)
                return found

            return compact(await _paged(page, 20, ("models",), TOKENS))

        async def sessions(n: int) -> Answer:
            found = await self._run(
                ctx, "inventory", {"state": session_state, "after": cursor, "first": n}
            )
            if found.data is not None:
                narrow.inventory(found.data, owner, session)
            return found

        return compact(await _paged(sessions, 10, ("sessions",), TOKENS))

    async def model_summary(
        self,
        ctx: Context,
        model_id: ModelId,
        steps: Annotated[int, Field(ge=1, le=100, description="Recent steps to judge.")] = 20,
    ) -> Result:
        answer = await self._run(ctx, "model_summary", {"id": model_id, "steps": steps})
        return compact(fitted(answer, TOKENS))

    async def session_summary(
        self,
        ctx: Context,
        session_id: Annotated[
            str, Field(description="The session's id.", min_length=1, max_length=128)
        ],
        worst: Annotated[int, Field(ge=1, le=20, description="Worst models to list.")] = 5,
    ) -> Result:
        answer = await self._run(ctx, "session_summary", {"id": session_id, "worst": worst})
        return compact(fitted(answer, TOKENS))

    async def why_waiting(self, ctx: Context, model_id: ModelId) -> Result:
        return compact(fitted(await self._run(ctx, "why_waiting", {"id": model_id}), TOKENS))

    async def model_logs(
        self,
        ctx: Context,
        model_id: ModelId,
        minutes: Annotated[
            float | None, Field(gt=0, le=44640, description="The last this many minutes.")
        ] = None,
        since: Annotated[datetime | None, Field(description="Window start, with a zone.")] = None,
        until: Annotated[datetime | None, Field(description="Window end, with a zone.")] = None,
        severity: Severity | None = None,
        text: Annotated[
            str | None, Field(max_length=256, description="Only lines containing this.")
        ] = None,
        cursor: Cursor = None,
    ) -> Result:
        after = None
        if cursor is not None:
            # The window travels with the cursor: "the last hour" must not move under it.
            try:
                after, since_s, until_s = codec.decode(LOGS_CURSOR, cursor, 3)
            except InvalidInput as exc:
                return compact(fitted(Answer.refused(exc), TOKENS))
            since, until = datetime.fromisoformat(since_s), datetime.fromisoformat(until_s)
        elif minutes is not None:
            until = datetime.now(UTC)
            since = until - timedelta(minutes=minutes)
        variables = {
            "model": model_id,
            "since": since and since.isoformat(),
            "until": until and until.isoformat(),
            "severity": severity,
            "text": text,
            "after": after,
        }

        async def page(n: int) -> Answer:
            return await self._run(ctx, "logs", {**variables, "first": n})

        def window(after: str, data: Any) -> str:
            logs = data["model"]["logs"]
            return codec.encode(LOGS_CURSOR, after, logs["since"], logs["until"])

        return compact(await _paged(page, 50, ("model", "logs"), TOKENS, window))

    async def gpu_activity(
        self,
        ctx: Context,
        model_id: Annotated[str | None, Field(description="A model's id.", max_length=128)] = None,
        node: Annotated[str | None, Field(description="A node's name.", max_length=253)] = None,
        window_seconds: Annotated[float, Field(gt=0, le=31 * 86400)] = 3600,
    ) -> Result:
        if (model_id is None) == (node is None):
            raise ValueError("give exactly one of model_id or node")
        if model_id is not None:
            answer = await self._run(
                ctx, "activity_model", {"model": model_id, "window": window_seconds}
            )
        else:
            answer = await self._run(ctx, "activity_node", {"node": node, "window": window_seconds})
        return compact(fitted(answer, TOKENS))

    async def step_timeline(
        self,
        ctx: Context,
        model_id: ModelId,
        last: Annotated[int, Field(ge=1, le=100, description="Steps to show.")] = 10,
        cursor: Cursor = None,
    ) -> Result:
        async def page(n: int) -> Answer:
            return await self._run(
                ctx, "model_steps", {"id": model_id, "first": n, "after": cursor, "ops": 10}
            )

        return compact(await _paged(page, last, ("model", "steps"), TOKENS))

    async def model_timeline(
        self,
        ctx: Context,
        model_id: ModelId,
        since: Annotated[datetime | None, Field(description="Window start, with a zone.")] = None,
        until: Annotated[datetime | None, Field(description="Window end, with a zone.")] = None,
        first: Annotated[int, Field(ge=1, le=500, description="Entries to show.")] = 30,
        cursor: Cursor = None,
    ) -> Result:
        window = {
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
        }

        async def page(n: int) -> Answer:
            variables = {"id": model_id, "first": n, "after": cursor, **window}
            return await self._run(ctx, "model_timeline", variables)

        return compact(await _paged(page, first, ("model", "timeline"), TOKENS))

    async def graphql(
        self,
        ctx: Context,
        query: Annotated[str, Field(max_length=20000, description="A GraphQL query document.")],
        variables: Annotated[dict[str, Any] | None, Field(description="Its variables.")] = None,
    ) -> Result:
        backends, principal = self.caller(ctx)
        answer = await self.runner.run(
            Request(query, variables), backends, principal, max_nodes=GRAPHQL_MAX_NODES
        )
        return compact(fitted(answer, GRAPHQL_TOKENS))


#: name -> (title, description), in the order a client lists them.
TOOLS: dict[str, tuple[str, str]] = {
    "attention": (
        "Models that need attention",
        "The models that most need a person, most urgent first (failed, lost ops, "
        "stuck, stalled, waiting, slow), each with its verdict and top cause." + _BUDGET,
    ),
    "list_models": (
        "List models",
        "Models with their state, step count and placement. With `state`: the "
        "models in that state, latest to enter it first. Without: live sessions' models, "
        "newest session first (`session_state` CLOSED for closed ones). `owner` and "
        "`session` filter the page." + _BUDGET,
    ),
    "model_summary": (
        "Model summary (diagnosis)",
        "Why is this model slow, stuck, waiting or dead? Its verdict, the ranked "
        "causes with their evidence (facts), and where to look next: the pods, nodes, the "
        "Cloud Logging filter and window, a GraphQL query to drill in." + _BUDGET,
    ),
    "session_summary": (
        "Session summary",
        "A session's models rolled up: counts by verdict, the worst models with "
        "their top cause, pace, failed/lost/stuck ops." + _BUDGET,
    ),
    "why_waiting": (
        "Why is it waiting",
        "Why a WAITING (or PLACED, not yet running) model has no GPUs, most likely "
        "cause first: Kueue quota and admission, unschedulable pods, unallocated DRA claims, "
        "with the queue position and shortfall." + _BUDGET,
    ),
    "model_logs": (
        "Model logs",
        "A model's worker and client log lines, oldest first, over a window (the "
        "last `minutes`, or `since`..`until` in ISO 8601; by default around a failure, else "
        "the last hour), at least `severity`, containing `text`. Also the Cloud Logging "
        "filter and Logs Explorer link for everything else." + _BUDGET,
    ),
    "gpu_activity": (
        "GPU activity",
        "Per-GPU DCGM duty (0..1) over the last `window_seconds`: of the GPUs a "
        "model held (`model_id`), or of a node's GPUs (`node`), with who holds each." + _BUDGET,
    ),
    "step_timeline": (
        "Step timeline",
        "A model's last `last` steps, newest first: each step's duration and its "
        "ops (kind, status, health, queue wait, duration, worker, error)." + _BUDGET,
    ),
    "model_timeline": (
        "Model timeline",
        "What happened to a model, newest first, from every backend: its states, first "
        "and last step, failed ops, workers and placements (Redis); Workload conditions and "
        "the Events of its pods, Workloads, nodes and GPUs, also long deleted ones "
        "(Kubernetes, then Cloud Logging's events log); idle GPU spans (Prometheus); the "
        "first ERROR or CRITICAL line of each message (Cloud Logging). Says which sources "
        "were unavailable and when it was cut." + _BUDGET,
    ),
    "graphql": (
        "GraphQL query",
        "Any read query of the inspector's GraphQL API (the SDL is the resource "
        f"`openrl-inspect://schema.graphql`), with a tighter cost limit: at most "
        f"{GRAPHQL_MAX_NODES} nodes. Answers within {GRAPHQL_TOKENS} tokens (lists cut from "
        "the end, `cut` says where); ask for smaller pages to see the rest.",
    ),
}


def register(server: MCPServer[Any], runner: Runner, caller: Caller) -> None:
    tools = Tools(runner, caller)
    for name, (title, description) in TOOLS.items():
        server.add_tool(
            getattr(tools, name),
            name=name,
            title=title,
            description=description,
            annotations=READ_ONLY,
        )

    @server.resource(
        "openrl-inspect://schema.graphql",
        name="schema",
        title="The GraphQL schema (SDL)",
        description="The inspector's GraphQL schema, for the `graphql` tool.",
        mime_type="text/plain",
    )
    def schema() -> str:
        return str(runner.schema.as_str())
