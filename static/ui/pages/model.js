// Model: its header, its diagnosis with the evidence it names, and every part behind it.
import {
  GRAPHIQL,
  Verdict,
  ago,
  backendName,
  dur,
  href,
  html,
  paceText,
  time,
  trouble,
  useQuery,
  words,
} from "../lib.js";
import { Banners, Empty, Failed, Loading, Missing, Section } from "../parts.js";
import {
  Events,
  GpuDuty,
  Logs,
  OpenOps,
  Placements,
  Sampler,
  StepOps,
  Timeline,
  WhyWaiting,
} from "./model_parts.js";
import { History } from "./model_history.js";

function kv(obj) {
  const entries = Object.entries(obj || {});
  if (!entries.length) return html`<span class="muted">—</span>`;
  return entries.map(
    ([k, v]) => html`<span class="kv" key=${k}><b>${k}</b> ${Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v)}</span>`,
  );
}

function Header({ m }) {
  const s = m.summary;
  return html`<header class="card head" data-model=${m.id}>
    <h1>${m.id} <${Verdict} v=${s?.verdict} /></h1>
    <dl class="facts">
      <div><dt>State</dt><dd>${m.state} <span class="muted">since ${ago(m.stateSince)}</span></dd></div>
      <div><dt>Base model</dt><dd>${m.baseModel}</dd></div>
      <div><dt>Session</dt><dd><a href=${href("session", m.sessionId)}>${m.sessionId}</a></dd></div>
      <div><dt>Owner</dt><dd>${m.session?.owner || "—"}</dd></div>
      <div><dt>Steps</dt><dd>${m.stepCount} <span class="muted" data-pace>(${paceText(s)}${s?.medianStepSeconds != null ? `, median step ${dur(s.medianStepSeconds)}` : ""})</span></dd></div>
      <div><dt>Workers</dt><dd>${s ? `${s.workersAlive} of ${s.workersTotal} alive` : "—"}</dd></div>
      <div><dt>Ops</dt><dd>${s ? `${s.openOps} open, ${s.stuckOps} stuck, ${s.lostOps} lost, ${s.failedOps} failed` : "—"}</dd></div>
      <div><dt>Created</dt><dd>${ago(m.createdAt)}</dd></div>
      <div class="wide"><dt>LoRA</dt><dd>${kv(m.lora)}</dd></div>
      <div class="wide"><dt>Settings</dt><dd>${kv(m.settings)}</dd></div>
      ${m.failureReason && html`<div class="wide"><dt>Failure</dt><dd class="bad">${m.failureReason}</dd></div>`}
    </dl>
  </header>`;
}

function NextLinks({ id, next, params }) {
  const logs = next.logs;
  return html`<div class="next">
    ${next.pods.map(
      (p) => html`<a
        key=${p.name}
        href=${href("model", id, { ...params, pod: p.name, logsAfter: "" })}
        data-link="pod"
        title="Show this pod's logs below"
        >pod ${p.namespace}/${p.name}</a
      >`,
    )}
    ${next.nodes.map(
      (n) => html`<a key=${n} href=${href("cluster", null, { node: n })} data-link="node">node ${n}</a>`,
    )}
    ${logs &&
    html`<a
      href=${href("model", id, { ...params, since: logs.start, until: logs.end, logsAfter: "" })}
      data-link="logs"
      >logs ${time(logs.start)}–${time(logs.end)}</a
    >`}
    ${logs?.explorerUrl &&
    html`<a href=${logs.explorerUrl} target="_blank" rel="noopener noreferrer" data-link="explorer">Logs Explorer ↗</a>`}
    ${next.graphql &&
    html`<a href=${`${GRAPHIQL}?query=${encodeURIComponent(next.graphql)}`} data-link="graphql">drill in (GraphiQL)</a>`}
  </div>`;
}

function Diagnosis({ m, params }) {
  const s = m.summary;
  if (!s) return html`<${Section} title="Diagnosis" id="diagnosis"><${Missing} what="The diagnosis" /><//>`;
  return html`<${Section} title="Diagnosis" id="diagnosis">
    ${s.unknown.length > 0 &&
    html`<p class="warn" data-unknown>
      ${"Some causes are unknown, not absent: "}
      ${words(s.unknown.map((u) => `${backendName(u.backend)} ${trouble([u.code])}`))}.
    </p>`}
    ${s.causes.length === 0
      ? html`<${Empty}>${s.reasons[0] || "Nothing wrong found."}</${Empty}>`
      : html`<ol class="causes">
          ${s.causes.map(
            (c) => html`<li key=${c.rank} data-cause=${c.kind}>
              <div><span class="kind">${c.kind}</span> ${c.statement}
                ${c.since && html`<span class="muted small"> since ${ago(c.since)}</span>`}</div>
              <details>
                <summary>evidence</summary>
                <dl class="evidence">
                  ${Object.entries(c.facts || {}).map(
                    ([k, v]) => html`<div key=${k}><dt>${k}</dt><dd>${typeof v === "object" ? JSON.stringify(v) : String(v)}</dd></div>`,
                  )}
                </dl>
                ${c.refs.length > 0 && html`<p class="small muted">About: ${c.refs.join(" · ")}</p>`}
              </details>
              <${NextLinks} id=${m.id} next=${c.next} params=${params} />
            </li>`,
          )}
        </ol>`}
    ${s.causesLeftOff > 0 && html`<p class="muted small">${s.causesLeftOff} more causes not listed.</p>`}
  <//>`;
}

// The log filters ride in the URL; everything else on the page ignores them.
function variables(id, p) {
  return {
    id,
    logsAfter: p.logsAfter || null,
    severity: p.severity || null,
    pod: p.pod || null,
    since: p.since || null,
    until: p.until || null,
  };
}

export function Model({ route }) {
  const q = useQuery("model", variables(route.id, route.params));
  if (q.loading && !q.data) return html`<${Loading} what=${`model ${route.id}`} />`;
  const m = q.data?.model;
  if (!m) return html`<${Failed} errors=${q.errors} failure=${q.failure} what="model" id=${route.id} />`;
  const p = route.params;
  return html`<div data-page="model">
    <${Banners} errors=${q.errors} failure=${q.failure} />
    <${Header} m=${m} />
    <${Diagnosis} m=${m} params=${p} />
    ${(m.state === "WAITING" || m.state === "PLACED" || (m.whyWaiting || []).length > 0) &&
    html`<${WhyWaiting} reasons=${m.whyWaiting} />`}
    <div class="grid2">
      <${Timeline} steps=${m.steps} />
      <${GpuDuty} activity=${m.gpuActivity} />
    </div>
    <${StepOps} steps=${m.steps} />
    <${OpenOps} ops=${m.openOps} />
    <${Placements} placements=${m.placements} />
    <${Sampler} stats=${m.samplerBatchStats} />
    <${History} timeline=${m.timeline} />
    <${Events} events=${m.events} />
    <${Logs} id=${m.id} logs=${m.logs} params=${p} />
  </div>`;
}
