// Session: its client, its models rolled up, and its models.
import {
  VERDICTS,
  Verdict,
  ago,
  backendName,
  dur,
  href,
  html,
  num,
  paceText,
  secondsSince,
  trouble,
  useQuery,
  words,
} from "../lib.js";
import { Banners, Empty, Failed, Loading, Section, Truncated } from "../parts.js";

// The session's pace: its stepping models' paces added up, or why there is none.
function sessionPace(s) {
  if (s.stepsPerMinute == null) return "no model of it is stepping now, so it has no pace";
  const median = s.medianStepSeconds != null ? ` (median step ${dur(s.medianStepSeconds)})` : "";
  return `its stepping models make ${num(s.stepsPerMinute)} steps/min together${median}`;
}

function Summary({ s }) {
  if (!s) return null;
  return html`<${Section} title="Summary" id="summary" note=${`${s.models} models${s.truncated ? " (newest page)" : ""}`}>
    <div class="counts">
      ${s.byVerdict.map((c) => html`<span class="count" key=${c.verdict} data-count=${c.verdict}><${Verdict} v=${c.verdict} /> ${c.count}</span>`)}
    </div>
    <p>${s.failedOps} failed, ${s.lostOps} lost and ${s.stuckOps} stuck ops; <span data-pace>${sessionPace(s)}</span>.</p>
    ${s.unknown.length > 0 && html`<p class="warn">Some causes are unknown, not absent: ${words(s.unknown.map((u) => `${backendName(u.backend)} ${trouble([u.code])}`))}.</p>`}
    ${s.worst.length > 0 &&
    html`<h3>Worst</h3><ul class="attention">
      ${s.worst.map(
        (b) => html`<li key=${b.model.id} data-model=${b.model.id}>
          <${Verdict} v=${b.verdict} /> <a href=${href("model", b.model.id)}>${b.model.id}</a>
          <div class="cause">${b.topCause?.statement || "—"}</div>
        </li>`,
      )}
    </ul>`}
  <//>`;
}

export function SessionPage({ route }) {
  const q = useQuery("session", { id: route.id });
  if (q.loading && !q.data) return html`<${Loading} what=${`session ${route.id}`} />`;
  const s = q.data?.session;
  if (!s) return html`<${Failed} errors=${q.errors} failure=${q.failure} what="session" id=${route.id} />`;
  const models = (s.models?.nodes || []).filter(Boolean);
  models.sort((a, b) => VERDICTS.indexOf(a.summary?.verdict) - VERDICTS.indexOf(b.summary?.verdict));
  return html`<div data-page="session">
    <${Banners} errors=${q.errors} failure=${q.failure} />
    <header class="card head" data-session=${s.id}>
      <h1>${s.id} <span class="badge">${s.state}</span></h1>
      <dl class="facts">
        <div><dt>Owner</dt><dd>${s.owner}</dd></div>
        <div><dt>Created</dt><dd>${ago(s.createdAt)}</dd></div>
        <div><dt>Last activity</dt><dd>${ago(s.lastActivityAt)}</dd></div>
        ${s.closedAt && html`<div><dt>Closed</dt><dd>${ago(s.closedAt)}</dd></div>`}
        ${Object.entries(s.client || {}).map(([k, v]) => html`<div key=${k}><dt>client ${k}</dt><dd>${typeof v === "object" ? JSON.stringify(v) : String(v)}</dd></div>`)}
      </dl>
    </header>
    <${Summary} s=${s.summary} />
    <${Section} title="Models" id="models" note=${`${s.models.totalCount} in all`}>
      ${models.length === 0
        ? html`<${Empty}>No models in this session.</${Empty}>`
        : html`<div class="scroll"><table>
            <thead><tr><th>Model</th><th>Verdict</th><th>Top cause</th><th>State</th><th>Steps</th><th>Pace</th><th>Base model</th><th>Age</th></tr></thead>
            <tbody>${models.map(
              (m) => html`<tr key=${m.id} data-model=${m.id}>
                <td><a href=${href("model", m.id)}>${m.id}</a></td>
                <td><${Verdict} v=${m.summary?.verdict} /></td>
                <td class="cause">${m.summary?.causes?.[0]?.statement || html`<span class="muted">—</span>`}</td>
                <td>${m.state} <span class="muted small">${dur(secondsSince(m.stateSince))}</span></td>
                <td class="num">${m.stepCount}</td><td class="num" data-pace>${paceText(m.summary)}</td>
                <td class="small">${m.baseModel}</td><td class="small">${ago(m.createdAt)}</td>
              </tr>`,
            )}</tbody>
          </table></div>`}
      <${Truncated} when=${s.models.truncated} what="models" />
    <//>
  </div>`;
}
