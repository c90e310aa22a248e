// Overview: the models that need a person, then every live session's models.
import { Sparkline, DutyBar } from "../charts.js";
import {
  STATES,
  VERDICTS,
  Verdict,
  ago,
  dur,
  href,
  html,
  navigate,
  paceText,
  pct,
  secondsSince,
  useMemo,
  useQuery,
} from "../lib.js";
import { Banners, Empty, Failed, Loading, Pager, Section } from "../parts.js";

function rows(data) {
  const out = [];
  for (const s of data?.sessions?.nodes || []) {
    if (!s) continue;
    for (const m of s.models?.nodes || []) {
      if (!m) continue;
      const top = m.summary?.causes?.[0] || null;
      out.push({
        id: m.id,
        session: s.id,
        owner: s.owner,
        baseModel: m.baseModel,
        state: m.state,
        stateSince: m.stateSince,
        createdAt: m.createdAt,
        verdict: m.summary?.verdict || null,
        top,
        pace: m.summary?.stepsPerMinute ?? null,
        paceText: paceText(m.summary),
        durations: (m.steps?.nodes || []).filter(Boolean).map((st) => st.durationSeconds).reverse(),
        gpus: m.gpuActivity?.gpuCount ?? null,
        duty: m.gpuActivity?.duty ?? null,
      });
    }
  }
  return out;
}

const SORTS = {
  verdict: (a, b) => VERDICTS.indexOf(a.verdict) - VERDICTS.indexOf(b.verdict),
  pace: (a, b) => (b.pace ?? -1) - (a.pace ?? -1),
  age: (a, b) => Date.parse(b.createdAt || 0) - Date.parse(a.createdAt || 0),
  gpus: (a, b) => (b.gpus ?? -1) - (a.gpus ?? -1),
  state: (a, b) => STATES.indexOf(a.state) - STATES.indexOf(b.state),
};

// The verdict filter's "needs a person": every verdict the attention list takes.
const NEEDS_A_PERSON = "ATTENTION";
const FINE = new Set(["PROGRESSING", "ENDED"]);

function matches(r, p) {
  if (p.state && r.state !== p.state) return false;
  if (p.verdict === NEEDS_A_PERSON) {
    if (!r.verdict || FINE.has(r.verdict)) return false;
  } else if (p.verdict && r.verdict !== p.verdict) return false;
  if (p.owner && r.owner !== p.owner) return false;
  if (p.base && r.baseModel !== p.base) return false;
  if (p.q) {
    const hay = [r.id, r.session, r.owner, r.baseModel, r.top?.statement, r.top?.kind, r.verdict]
      .join(" ")
      .toLowerCase();
    if (!hay.includes(p.q.toLowerCase())) return false;
  }
  return true;
}

// The models below the list: shown in the table, filtered to those that need a person.
function More({ attention, shown }) {
  const more = attention.needing - shown;
  if (more <= 0) return null;
  const open = (e) => {
    e.preventDefault();
    navigate("overview", null, { verdict: NEEDS_A_PERSON, sort: "verdict" });
    document.getElementById("h-models")?.scrollIntoView();
  };
  return html`<p class="more" data-more=${more}>
    ${`${more} more ${more === 1 ? "needs" : "need"} a person. `}
    <a href=${href("overview", null, { verdict: NEEDS_A_PERSON, sort: "verdict" })} onClick=${open} data-link="more"
      >Show all ${attention.needing} in the table below</a>
  </p>`;
}

function Attention({ attention }) {
  if (!attention) return null;
  const list = attention.models || [];
  return html`<${Section}
    title="Needs attention"
    id="attention"
    note=${`${attention.needing} of ${attention.scanned} models judged${attention.truncated ? " (more not judged)" : ""}`}
  >
    ${list.length === 0
      ? html`<${Empty}>No model needs a person right now.</${Empty}>`
      : html`<ul class="attention">
          ${list.map(
            (b) => html`<li key=${b.model.id} data-model=${b.model.id}>
              <${Verdict} v=${b.verdict} />${" "}
              <a href=${href("model", b.model.id)}>${b.model.id}</a>${" "}
              <span class="muted small">${b.model.session?.owner || ""} · ${b.model.baseModel}</span>
              <div class="cause">${b.topCause?.statement || "—"}</div>
            </li>`,
          )}
        </ul>`}
    <${More} attention=${attention} shown=${list.length} />
  <//>`;
}

function Filters({ params, all }) {
  const set = (k, v, replace = false) => navigate("overview", null, { ...params, [k]: v }, replace);
  const options = (key) => [...new Set(all.map((r) => r[key]).filter(Boolean))].sort();
  const select = (key, label, values) => html`<label>
    ${label}
    <select value=${params[key] || ""} onChange=${(e) => set(key, e.target.value)} name=${key}>
      <option value="">all</option>
      ${values.map((v) => html`<option value=${v}>${v}</option>`)}
    </select>
  </label>`;
  return html`<form class="filters" role="search" onSubmit=${(e) => e.preventDefault()}>
    <label>
      Search
      <input
        type="search"
        name="q"
        placeholder="id, owner, cause…"
        value=${params.q || ""}
        onInput=${(e) => set("q", e.target.value, true)}
      />
    </label>
    ${select("state", "State", STATES)}
    <label>
      Verdict
      <select value=${params.verdict || ""} onChange=${(e) => set("verdict", e.target.value)} name="verdict">
        <option value="">all</option>
        <option value=${NEEDS_A_PERSON}>needs a person</option>
        ${VERDICTS.map((v) => html`<option value=${v}>${v}</option>`)}
      </select>
    </label>
    ${select("owner", "Owner", options("owner"))} ${select("base", "Base model", options("baseModel"))}
    <label>
      Sort
      <select value=${params.sort || "verdict"} onChange=${(e) => set("sort", e.target.value)} name="sort">
        ${Object.keys(SORTS).map((k) => html`<option value=${k}>${k}</option>`)}
      </select>
    </label>
  </form>`;
}

function Counts({ all, params }) {
  const counts = new Map();
  for (const r of all) counts.set(r.verdict, (counts.get(r.verdict) || 0) + 1);
  return html`<div class="counts" aria-label="Models by verdict">
    ${VERDICTS.filter((v) => counts.has(v)).map(
      (v) => html`<a
        class=${`count ${params.verdict === v ? "on" : ""}`}
        href=${href("overview", null, { ...params, verdict: params.verdict === v ? "" : v })}
        data-count=${v}
        ><${Verdict} v=${v} /> ${counts.get(v)}</a
      >`,
    )}
  </div>`;
}

function ModelRow({ r }) {
  return html`<tr data-model=${r.id}>
    <td><a href=${href("model", r.id)}>${r.id}</a></td>
    <td><${Verdict} v=${r.verdict} /></td>
    <td class="cause">${r.top ? html`<span class="kind">${r.top.kind}</span> ${r.top.statement}` : html`<span class="muted">—</span>`}</td>
    <td>${r.state}<div class="muted small">${dur(secondsSince(r.stateSince))}</div></td>
    <td class="num"><span data-pace>${r.paceText}</span> <${Sparkline} values=${r.durations} label=${`step durations of ${r.id}`} /></td>
    <td class="num">${r.gpus ?? "—"} <${DutyBar} duty=${r.duty} /> <span class="small">${pct(r.duty)}</span></td>
    <td><a href=${href("session", r.session)}>${r.owner}</a></td>
    <td class="small">${r.baseModel}</td>
    <td class="small">${ago(r.createdAt)}</td>
  </tr>`;
}

export function Overview({ route }) {
  // One page of sessions at a time (``after`` in the route): attention and about a
  // hundred rows in the first answer, never every model with its summary at once.
  const q = useQuery("overview", { after: route.params.after || null });
  const params = route.params;
  const all = useMemo(() => rows(q.data), [q.data]);
  const shown = useMemo(
    () => all.filter((r) => matches(r, params)).sort(SORTS[params.sort] || SORTS.verdict),
    [all, params],
  );
  if (q.loading && !q.data) return html`<${Loading} what="the overview" />`;
  if (!q.data) return html`<${Failed} errors=${q.errors} failure=${q.failure} home=${false} />`;
  const sessions = q.data.sessions;
  return html`<div data-page="overview">
    <${Banners} errors=${q.errors} failure=${q.failure} />
    <${Attention} attention=${q.data.attention} />
    <${Section}
      title="Live sessions and their models"
      id="models"
      note=${sessions ? `${sessions.totalCount} live sessions, ${all.length} models on this page${sessions.truncated ? " (not every session)" : ""}` : ""}
    >
      <${Counts} all=${all} params=${params} />
      <${Filters} params=${params} all=${all} />
      ${shown.length === 0
        ? html`<${Empty}>${all.length ? "No model matches these filters." : "No live sessions."}</${Empty}>`
        : html`<div class="scroll"><table class="models">
            <thead><tr>
              <th>Model</th><th>Verdict</th><th>Top cause</th><th>State</th><th>Pace</th>
              <th>GPUs · duty</th><th>Owner</th><th>Base model</th><th>Age</th>
            </tr></thead>
            <tbody>${shown.map((r) => html`<${ModelRow} r=${r} key=${r.id} />`)}</tbody>
          </table></div>`}
      <${Pager} page="overview" params=${params} pageInfo=${sessions?.pageInfo} what="sessions" />
    <//>
  </div>`;
}
