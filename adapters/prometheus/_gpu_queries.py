"""The PromQL shapes of the GPU layer, as pure functions (``gpu_metrics_prom`` runs them).

Per GPU (duty, charts, activity; ``M`` a DCGM metric, ``U`` the UUID set, ``H`` the
node set of keys that carry node + index)::

    sum by (UUID) (sum_over_time(M{UUID=~U}[w])) / sum by (UUID) (count_over_time(M{UUID=~U}[w]))
    or
    sum by (Hostname, gpu) (sum_over_time(M{Hostname=~H,UUID=""}[w]))
      / sum by (Hostname, gpu) (count_over_time(M{Hostname=~H,UUID=""}[w]))

Per vLLM pod (``P`` the pod set), whether the pod name is in ``pod`` or ``exported_pod``::

    sum by (pod) (M{pod=~P})
    or sum by (pod) (label_replace(M{exported_pod=~P}, "pod", "$1", "exported_pod", "(.*)"))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from openrl_inspect.adapters.prometheus._gpu import (
    VLLM_GENERATION_TOKENS,
    VLLM_KV_CACHE,
    VLLM_KV_CACHE_OLD,
    VLLM_RUNNING,
    VLLM_TTFT_BUCKET,
    VLLM_WAITING,
)
from openrl_inspect.adapters.prometheus._promql import Matcher, eq, in_set, quote, selector

Branch = Callable[[Sequence[Matcher], str], str]
PodQuery = Callable[[Sequence[str]], str]
TTFT_QUANTILES = (0.5, 0.95)


def mean_branch(metric: str, rng: str) -> Branch:
    def build(matchers: Sequence[Matcher], by: str) -> str:
        sel = selector(metric, matchers)
        return (
            f"sum by ({by}) (sum_over_time({sel}[{rng}]))"
            f" / sum by ({by}) (count_over_time({sel}[{rng}]))"
        )

    return build


def per_gpu_query(sets: Mapping[str, Sequence[str]], branch: Branch) -> str:
    """The UUID branch and the Hostname fallback branch (series without a UUID)."""
    parts: list[str] = []
    if sets.get("UUID"):
        parts.append(branch([in_set("UUID", sets["UUID"])], "UUID"))
    if sets.get("Hostname"):
        host = [in_set("Hostname", sets["Hostname"]), eq("UUID", "")]
        parts.append(branch(host, "Hostname, gpu"))
    return " or ".join(f"({p})" for p in parts)


def per_pod_query(
    metric: str, pods: Sequence[str], agg: str, fn: Callable[[str], str], by: str = "pod"
) -> str:
    """``metric`` aggregated per pod, whether the pod is in ``pod`` or ``exported_pod``."""
    left = f"{agg} by ({by}) ({fn(selector(metric, [in_set('pod', pods)]))})"
    moved = fn(selector(metric, [in_set("exported_pod", pods)]))
    relabel = f'label_replace({moved}, "pod", "$1", "exported_pod", "(.*)")'
    return f"({left}) or ({agg} by ({by}) ({relabel}))"


def tag(expr: str, label: str, value: str) -> str:
    return f'label_replace({expr}, "{label}", {quote(value)}, "", "")'


def vllm_builders(rng: str) -> dict[str, PodQuery]:
    """One query builder per vLLM statistic (pods -> query); ``rng`` is the window of
    the rates. Answers are per ``pod`` (and per ``quantile`` for ``ttft``)."""

    def ident(sel: str) -> str:
        return sel

    def rate(sel: str) -> str:
        return f"rate({sel}[{rng}])"

    def ttft(ps: Sequence[str]) -> str:
        hist = per_pod_query(VLLM_TTFT_BUCKET, ps, "sum", rate, by="le, pod")
        return " or ".join(
            tag(f"histogram_quantile({q!r}, {hist})", "quantile", repr(q)) for q in TTFT_QUANTILES
        )

    return {
        "running": lambda ps: per_pod_query(VLLM_RUNNING, ps, "sum", ident),
        "waiting": lambda ps: per_pod_query(VLLM_WAITING, ps, "sum", ident),
        # The current name first; ``or`` keeps it where both exist.
        "kv": lambda ps: (
            f"({per_pod_query(VLLM_KV_CACHE, ps, 'avg', ident)})"
            f" or ({per_pod_query(VLLM_KV_CACHE_OLD, ps, 'avg', ident)})"
        ),
        "gen": lambda ps: per_pod_query(VLLM_GENERATION_TOKENS, ps, "sum", rate),
        "ttft": ttft,
    }
