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
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from openrl_inspect.agents.limits import limits
from openrl_inspect.agents.mcp import schemas
from openrl_inspect.agents.mcp.answer import Result, ToolAnswer, compact, fitted
from openrl_inspect.agents.mcp.budget import TOKENS, tokens
from openrl_inspect.agents.mcp.schemas import Bound
from openrl_inspect.core import cursor as codec
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.core.principal import Principal
from openrl_inspect.execution import Answer, Request, Runner
from openrl_inspect.resolvers.context import Backends
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
Window = Annotated[
    float, Field(description="Seconds before now to average duty over."), Bound("window_s")
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

    def _page(self, size: int) -> int:
        # A tool's own page sizes stay within the server's, whatever it is set to.
        return min(size, self.runner.settings.bounds.max_page_size)

    async def _run(self, ctx: Context, name: str, variables: dict[str, Any]) -> Answer:
        backends, principal = self.caller(ctx)
        document = Request(self.runner.documents[name].text, variables)
        return await self.runner.run(document, backends, principal)

    async def attention(
        self,
        ctx: Context,
        first: Annotated[int, Field(description="Models to list."), Bound("worst")] = 10,
    ) -> Result:
        return compact(fitted(await self._run(ctx, "attention", {"first": first}), TOKENS))

    async def list_models(
        self,
        ctx: Context,
        state: ModelState | None = None,
        owner: Annotated[str | None, Field(description="Only this session owner's.")] = None,
        session: Annotated[str | None, Field(description="Only this session's.")] = None,
        base_model: Annotated[
            str | None, Field(description="Only models of this base model.")
        ] = None,
        session_state: SessionState = "LIVE",
        cursor: Cursor = None,
    ) -> Result:
        if state is not None or owner is not None or session is not None or base_model:
            # Filtered by the API before the page is cut: full pages, exact totals.
            variables: dict[str, Any] = {
                "state": state,
                "owner": owner,
                "session": session,
                "baseModel": base_model,
                "after": cursor,
            }

            async def page(n: int) -> Answer:
                return await self._run(ctx, "models_by_state", {**variables, "first": n})

            return compact(await _paged(page, self._page(20), ("models",), TOKENS))

        async def sessions(n: int) -> Answer:
            return await self._run(
                ctx, "inventory", {"state": session_state, "after": cursor, "first": n}
            )

        return compact(await _paged(sessions, self._page(10), ("sessions",), TOKENS))

    async def model_summary(
        self,
        ctx: Context,
        model_id: ModelId,
        steps: Annotated[int, Field(description="Recent steps to judge."), Bound("steps")] = 20,
    ) -> Result:
        answer = await self._run(ctx, "model_summary", {"id": model_id, "steps": steps})
        return compact(fitted(answer, TOKENS))

    async def session_summary(
        self,
        ctx: Context,
        session_id: Annotated[
            str, Field(description="The session's id.", min_length=1, max_length=128)
        ],
        worst: Annotated[int, Field(description="Worst models to list."), Bound("worst")] = 5,
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
            float | None, Field(description="The last this many minutes."), Bound("log_minutes")
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

        return compact(await _paged(page, self._page(50), ("model", "logs"), TOKENS, window))

    # A model's GPUs and a node's are two tools, not one with "exactly one of model_id or
    # node": that needs a oneOf at the input schema's root, which model APIs refuse.
    async def gpu_activity(
        self, ctx: Context, model_id: ModelId, window_seconds: Window = 3600
    ) -> Result:
        variables = {"model": model_id, "window": window_seconds}
        return compact(fitted(await self._run(ctx, "activity_model", variables), TOKENS))

    async def node_activity(
        self,
        ctx: Context,
        node: Annotated[str, Field(description="The node's name.", min_length=1, max_length=253)],
        window_seconds: Window = 600,
    ) -> Result:
        variables = {"node": node, "window": window_seconds}
        return compact(fitted(await self._run(ctx, "activity_node", variables), TOKENS))

    async def step_timeline(
        self,
        ctx: Context,
        model_id: ModelId,
        last: Annotated[int, Field(description="Steps to show."), Bound("page")] = 10,
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
        "Models with their state, step count and placement. With any of `state`, "
        "`owner`, `session`, `base_model`: the models matching all of them, newest first "
        "(by the time they entered `state` when given), filtered before the page is cut "
        "with an exact total. Without: live sessions' models, newest session first "
        "(`session_state` CLOSED for closed ones)." + _BUDGET,
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
        "A model's GPU activity",
        "Per-GPU DCGM duty (0..1) over the last `window_seconds` of the GPUs the model "
        "held, with the seconds each was held and covered by samples." + _BUDGET,
    ),
    "node_activity": (
        "A node's GPU activity",
        "Per-GPU DCGM duty (0..1) over the last `window_seconds` of a node's GPUs, whether "
        "each is held, and by which model." + _BUDGET,
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


def tools_for(runner: Runner, caller: Caller) -> list[Tool]:
    """The tools, their input schemas bounded as the server's settings bound them and
    their output schemas typed by the documents they run (``schemas``)."""
    methods = Tools(runner, caller)
    named = limits(runner.settings.bounds)
    out = []
    for name, (title, description) in TOOLS.items():
        fn = getattr(methods, name)
        tool = Tool.from_function(
            fn, name=name, title=title, description=description, annotations=READ_ONLY
        )
        # Both are the SDK's public fields: ``parameters`` is what tools/list publishes,
        # and FuncMetadata reads ``output_schema`` live (the ``ToolAnswer`` model still
        # validates each answer).
        tool.parameters = schemas.input_schema(tool.parameters, schemas.bounds_of(fn), named)
        tool.fn_metadata.output_schema = schemas.output_schema(name, runner.types, runner.documents)
        out.append(tool)
    return out


def register(server: MCPServer[Any], runner: Runner) -> None:
    """The resources beside the tools (which the server takes when it is built)."""

    @server.resource(
        "openrl-inspect://schema.graphql",
        name="schema",
        title="The GraphQL schema (SDL)",
        description="The inspector's GraphQL schema, for the `graphql` tool.",
        mime_type="text/plain",
    )
    def schema() -> str:
        return str(runner.schema.as_str())
