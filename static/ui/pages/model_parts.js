// The model page's evidence sections, each from its part of the one answer.
import { DutyBar, StackedBars } from "../charts.js";
import { Health, ago, dur, href, html, navigate, num, pct, time } from "../lib.js";
import { Empty, Missing, Section, Truncated } from "../parts.js";

// Where the worker logs came from, and why a page of them is short, in words.
const LOG_SOURCES = { CLOUD_LOGGING: "Cloud Logging", KUBERNETES: "the pods' logs (Kubernetes)" };
const LOG_CUTS = {
  LIMIT: "one page shown: “older →” for more",
  MAX_ENTRIES: "stopped at the most lines the server returns at once",
  MAX_BYTES: "stopped at the most text the server returns at once",
  SCAN_BUDGET: "stopped after reading too many lines: narrow the time or the severity",
};

const SEVERITIES = ["DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL"];

export function Timeline({ steps }) {
  const list = (steps?.nodes || []).filter(Boolean).slice().reverse();
  const kinds = [];
  const bars = list.map((st) => {
    const by = new Map();
    let wait = 0;
    for (const op of st.ops?.nodes || []) {
      if (!op) continue;
      if (!kinds.includes(op.kind)) kinds.push(op.kind);
      by.set(op.kind, (by.get(op.kind) || 0) + (op.durationSeconds || 0));
      wait += op.queueWaitSeconds || 0;
    }
    const parts = [...by].map(([kind, seconds]) => ({ kind, seconds }));
    parts.push({ kind: "queue wait", seconds: wait });
    const title = `step ${st.number}: ${dur(st.durationSeconds)}; ${parts.map((p) => `${p.kind} ${dur(p.seconds)}`).join(", ")}`;
    return { label: String(st.number), parts, span: st.durationSeconds, title };
  });
  kinds.push("queue wait");
  return html`<${Section} title="Step timeline" id="timeline" note="op run time by kind, and queue wait, per step">
    ${bars.length === 0
      ? html`<${Empty}>No steps recorded yet.</${Empty}>`
      : html`<div class="scroll"><${StackedBars} bars=${bars} kinds=${kinds} /></div>`}
  <//>`;
}

function OpRow({ op, step }) {
  const bad = op.health === "STUCK" || op.health === "LOST" || op.status === "failed";
  return html`<tr key=${op.id} class=${bad ? "bad-row" : ""} data-op=${op.id}>
    ${step !== undefined && html`<td class="num">${step}</td>`}
    <td>${op.kind}</td><td>${op.status}</td><td><${Health} h=${op.health} /></td>
    <td class="num">${dur(op.queueWaitSeconds)}</td><td class="num">${dur(op.durationSeconds)}</td>
    <td class="small">${op.workerId || "—"}</td><td class="small bad">${op.error || ""}</td>
  </tr>`;
}

export function StepOps({ steps }) {
  const recent = (steps?.nodes || []).filter(Boolean).slice(0, 6);
  return html`<${Section} title="Ops of the recent steps" id="ops">
    ${recent.length === 0
      ? html`<${Empty}>No steps recorded yet.</${Empty}>`
      : html`<div class="scroll"><table>
          <thead><tr><th>Step</th><th>Kind</th><th>Status</th><th>Health</th><th>Queue wait</th><th>Ran</th><th>Worker</th><th>Error</th></tr></thead>
          <tbody>${recent.flatMap((st) => (st.ops?.nodes || []).filter(Boolean).map((op) => html`<${OpRow} op=${op} step=${st.number} />`))}</tbody>
        </table></div>`}
  <//>`;
}

export function OpenOps({ ops }) {
  const list = (ops?.nodes || []).filter(Boolean);
  return html`<${Section} title="Open ops" id="open-ops" note=${ops ? `${ops.totalCount} open` : ""}>
    ${list.length === 0
      ? html`<${Empty}>No op is open.</${Empty}>`
      : html`<div class="scroll"><table>
          <thead><tr><th>Step</th><th>Kind</th><th>Status</th><th>Health</th><th>Queue wait</th><th>Ran</th><th>Worker</th><th>Error</th></tr></thead>
          <tbody>${list.map((op) => html`<${OpRow} op=${{ ...op, durationSeconds: op.startedAt ? (Date.now() - Date.parse(op.startedAt)) / 1000 : null }} step=${op.step ?? "—"} />`)}</tbody>
        </table></div>`}
    <${Truncated} when=${ops?.truncated} what="open ops" />
  <//>`;
}

function GpuChips({ gpus }) {
  if (gpus == null) return html`<span class="muted small">unavailable</span>`;
  return gpus.map(
    (g) => html`<a key=${g.uuid} class=${`chip ${g.health === "UNHEALTHY" ? "bad" : ""}`}
      href=${href("cluster", null, { node: g.nodeName || "", gpu: g.uuid || "" })} title=${g.uuid}>${g.device} ${g.health === "UNHEALTHY" ? "unhealthy" : ""}</a>`,
  );
}

export function Placements({ placements }) {
  const list = (placements?.nodes || []).filter(Boolean);
  return html`<${Section} title="Placements" id="placements" note="history from Redis, with what is live now">
    ${list.length === 0
      ? html`<${Empty}>Never placed.</${Empty}>`
      : html`<div class="scroll"><table>
          <thead><tr><th>Placement</th><th>Node</th><th>Admitted</th><th>Held</th><th>Live pods</th><th>Live GPUs</th></tr></thead>
          <tbody>${list.map(
            (p) => html`<tr key=${p.id} data-placement=${p.id}>
              <td>${p.id}<div class="muted small">${p.namespace}/${p.workload}</div></td>
              <td><a href=${href("cluster", null, { node: p.node })}>${p.node}</a>
                ${p.liveNode == null ? html`<div class="muted small">gone</div>` : p.liveNode.ready === false ? html`<div class="bad small">not ready</div>` : ""}</td>
              <td class="small">${ago(p.admittedAt)}</td>
              <td class="small">${p.releasedAt ? `${dur(p.heldSeconds)} (released)` : "held now"}</td>
              <td class="small">${p.livePods == null ? "unavailable" : p.livePods.length === 0 ? "none" : p.livePods.map((pod) => html`<div key=${pod.name}>${pod.name} <span class="muted">${pod.phase}${pod.restarts ? `, ${pod.restarts} restarts` : ""}</span></div>`)}</td>
              <td><${GpuChips} gpus=${p.liveGpus} /></td>
            </tr>`,
          )}</tbody>
        </table></div>`}
  <//>`;
}

export function GpuDuty({ activity }) {
  if (!activity) return html`<${Section} title="GPU duty" id="gpu-duty"><${Missing} what="GPU duty" /><//>`;
  return html`<${Section} title="GPU duty" id="gpu-duty" note=${`last hour, ${activity.gpuCount} GPUs, all ${pct(activity.duty)}`}>
    ${activity.gpus.length === 0
      ? html`<${Empty}>No GPU held in the last hour.</${Empty}>`
      : html`<table>
          <tbody>${activity.gpus.map(
            (g) => html`<tr key=${g.uuid}>
              <td class="small" title=${g.uuid}>${g.node || "?"} · ${g.uuid.slice(0, 12)}…</td>
              <td><${DutyBar} duty=${g.duty} label=${g.uuid} /></td><td class="num">${pct(g.duty)}</td>
              <td class="small muted">held ${dur(g.heldSeconds)}</td>
            </tr>`,
          )}</tbody>
        </table>`}
    <${Truncated} when=${activity.truncated} what="GPUs" />
  <//>`;
}

export function Sampler({ stats }) {
  if (!stats) return html`<${Section} title="Sampler throughput" id="sampler"><${Missing} what="Sampler throughput" /><//>`;
  return html`<${Section} title="Sampler throughput" id="sampler" note="last 15 minutes, from the batches its samplers recorded">
    ${stats.batchesRead === 0
      ? html`<${Empty}>No sampler batch in the window.</${Empty}>`
      : html`<dl class="facts">
            <div><dt>Tokens/s</dt><dd>${num(stats.tokensPerSecond, 0)}</dd></div>
            <div><dt>While running</dt><dd>${num(stats.batchTokensPerSecond, 0)}</dd></div>
            <div><dt>Against baseline</dt><dd>${stats.ratioToBaseline == null ? "—" : pct(stats.ratioToBaseline)}</dd></div>
            <div><dt>Batch size</dt><dd>${num(stats.batchSizeMedian, 0)}</dd></div>
            <div><dt>Latency</dt><dd>${dur(stats.latencyMedianSeconds)}</dd></div>
            <div><dt>Queue depth</dt><dd>${stats.queueDepthLatest ?? "—"}</dd></div>
          </dl>
          <table><thead><tr><th>Worker</th><th>Batches</th><th>Tokens/s</th><th>Batch</th><th>Latency</th><th>Queue</th></tr></thead>
            <tbody>${stats.workers.map((w) => html`<tr key=${w.worker || "?"}><td>${w.worker || "—"}</td><td class="num">${w.batchesRead}</td><td class="num">${num(w.tokensPerSecond, 0)}</td><td class="num">${num(w.batchSizeMedian, 0)}</td><td class="num">${dur(w.latencyMedianSeconds)}</td><td class="num">${w.queueDepthLatest ?? "—"}</td></tr>`)}</tbody>
          </table>`}
  <//>`;
}

export function WhyWaiting({ reasons }) {
  return html`<${Section} title="Why it waits" id="why-waiting">
    ${reasons == null
      ? html`<${Missing} what="Why it waits" />`
      : reasons.length === 0
        ? html`<${Empty}>Nothing found that holds it.</${Empty}>`
        : html`<ol class="causes">${reasons.map(
            (r) => html`<li key=${r.rank} data-wait=${r.kind}>
              <span class="kind">${r.kind}</span> ${r.message}
              <div class="muted small">${r.source}${r.object ? ` · ${r.object}` : ""}${r.waitedSeconds != null ? ` · waiting ${dur(r.waitedSeconds)}` : ""}${r.queuePosition != null ? ` · ${r.queuePosition} of ${r.queueLength} in its queue` : ""}</div>
            </li>`,
          )}</ol>`}
  <//>`;
}

export function Events({ events }) {
  if (!events) return html`<${Section} title="Events" id="events"><${Missing} what="Events" /><//>`;
  return html`<${Section} title="Events" id="events" note=${events.degraded ? "events cache not in sync" : "live, newest first"}>
    ${events.nodes.length === 0
      ? html`<${Empty}>No Kubernetes events about it.</${Empty}>`
      : html`<div class="scroll"><table>
          <thead><tr><th>Last</th><th>Type</th><th>Reason</th><th>Object</th><th>Note</th><th>Count</th></tr></thead>
          <tbody>${events.nodes.map(
            (e, i) => html`<tr key=${i} class=${e.type === "Warning" ? "warn-row" : ""}>
              <td class="small">${ago(e.lastAt)}</td><td>${e.type || "—"}</td><td>${e.reason || "—"}</td>
              <td class="small">${e.regarding.kind} ${e.regarding.name}</td><td class="small">${e.note || ""}</td><td class="num">${e.count}</td>
            </tr>`,
          )}</tbody>
        </table></div>`}
    <${Truncated} when=${events.truncated} what="events" />
  <//>`;
}

function LogFilters({ id, params }) {
  const set = (patch) => navigate("model", id, { ...params, ...patch, logsAfter: "" });
  return html`<div class="filters">
    <label>Severity at least
      <select name="severity" value=${params.severity || ""} onChange=${(e) => set({ severity: e.target.value })}>
        <option value="">any</option>
        ${SEVERITIES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select>
    </label>
    ${params.pod && html`<span class="chip">pod ${params.pod} <button type="button" onClick=${() => set({ pod: "" })} aria-label="Clear the pod filter">×</button></span>`}
    ${params.since && html`<span class="chip">${time(params.since)}–${time(params.until)} <button type="button" onClick=${() => set({ since: "", until: "" })} aria-label="Clear the time window">×</button></span>`}
  </div>`;
}

export function Logs({ id, logs, params }) {
  return html`<${Section} title="Logs" id="logs" note=${logs?.backend ? `from ${LOG_SOURCES[logs.backend] || logs.backend}, newest first` : ""}>
    <${LogFilters} id=${id} params=${params} />
    ${logs == null
      ? html`<${Missing} what="Logs" />`
      : logs.nodes.length === 0
        ? html`<${Empty}>No log lines in the window.</${Empty}>`
        : html`<div class="scroll logs"><table>
            <tbody>${logs.nodes.map(
              (l, i) => html`<tr key=${i} class=${`sev-${l.severity}`}>
                <td class="small nowrap">${time(l.time)}</td><td class="small">${l.severity}</td>
                <td class="small">${l.source.kind.toLowerCase()}${l.source.role ? ` ${l.source.role}` : ""}${l.source.pod ? ` ${l.source.pod}` : ""}</td>
                <td class="msg">${l.message}</td>
              </tr>`,
            )}</tbody>
          </table></div>`}
    <div class="pager">
      ${params.logsAfter && html`<a href=${href("model", id, { ...params, logsAfter: "" })}>newest</a>`}
      ${logs?.pageInfo?.hasNextPage && html`<a href=${href("model", id, { ...params, logsAfter: logs.pageInfo.endCursor })} data-link="older">older →</a>`}
      ${logs?.truncated && html`<span class="muted small" data-cut>${LOG_CUTS[logs.truncatedReason] || "more lines exist than shown"}</span>`}
      ${logs?.explorerUrl && html`<a href=${logs.explorerUrl} target="_blank" rel="noopener noreferrer">open in Logs Explorer ↗</a>`}
    </div>
  <//>`;
}
