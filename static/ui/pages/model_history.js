// The model page's history lane: its timeline across every backend, newest first.
import { ago, html, time } from "../lib.js";
import { Empty, Missing, Section, Truncated } from "../parts.js";

const SOURCES = { REDIS: "OpenRL", KUBERNETES: "Kubernetes", PROMETHEUS: "DCGM", CLOUD_LOGGING: "Logs" };
// Entries that mark trouble, shown as warnings.
const TROUBLE = new Set(["OP_FAILED", "WORKER_LOST", "DEVICE_TAINT", "GPU_IDLE", "LOG_ERROR"]);

function unavailableNote(timeline) {
  const gone = (timeline.unavailable || []).map((u) => `${SOURCES[u.source] || u.source}: ${u.code}`);
  return gone.length ? `not read: ${gone.join(", ")}` : "newest first, every backend";
}

export function History({ timeline }) {
  if (!timeline) return html`<${Section} title="History" id="history"><${Missing} what="The timeline" /><//>`;
  const entries = timeline.entries || [];
  return html`<${Section} title="History" id="history" note=${unavailableNote(timeline)}>
    ${entries.length === 0
      ? html`<${Empty}>Nothing recorded in its window.</${Empty}>`
      : html`<ol class="lane" data-lane="timeline">${entries.map(
          (e, i) => html`<li key=${i} data-kind=${e.kind} data-source=${e.source}
              class=${TROUBLE.has(e.kind) || /Warning|Evict|Preempt|OOM/.test(e.statement) ? "warn-row" : ""}>
            <span class="small muted" title=${time(e.at)}>${ago(e.at)}</span>
            <span class="kind">${SOURCES[e.source] || e.source}</span>
            ${e.statement}
            ${e.refs.length > 0 && html`<div class="muted small">${e.refs.slice(0, 3).join(" · ")}</div>`}
          </li>`,
        )}</ol>`}
    <${Truncated} when=${timeline.truncated} what="entries" />
  <//>`;
}
