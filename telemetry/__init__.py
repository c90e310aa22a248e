"""The inspector's own metrics, at ``/api/v1/inspect/metrics`` (Prometheus text format).

What is counted, every label value from a fixed vocabulary (no owner, id, principal
name, host or free text ever becomes a label):

- requests by route, GraphQL operation and outcome, with a latency histogram
  (``openrl_inspect_requests_total``, ``openrl_inspect_request_duration_seconds``); an
  operation is named only when it is one of the dashboard's documents or listed in
  ``MetricsSettings.operations``, else ``other``;
- GraphQL errors by code, refused requests by reason, failed authentications by reason;
- backend calls by backend and outcome, with latency (through ``backend_calls``);
- the Kubernetes watch cache per kind (served, synced, objects, LIST age, relists), each
  backend's last probed state, and the process's memory and CPU.

Each app owns its ``CollectorRegistry`` (never the global one), so two apps in one
process (the tests) keep separate counts.

Private modules::

    _registry   InspectorMetrics: the families, the observers, the watch-cache collector
    _http       the request middleware and the endpoint
"""

from __future__ import annotations

from openrl_inspect.telemetry._http import RequestMetrics, metrics_endpoint
from openrl_inspect.telemetry._registry import (
    ACCESS_MODES,
    InspectorMetrics,
    MetricsSettings,
    dashboard_operations,
)

__all__ = [
    "ACCESS_MODES",
    "InspectorMetrics",
    "MetricsSettings",
    "RequestMetrics",
    "dashboard_operations",
    "metrics_endpoint",
]
