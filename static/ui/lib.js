// Shared by every page: the view library, the GraphQL client with live refresh, the
// hash router and the formatters. No build step: browsers load these modules as they are.
export {
  html,
  render,
  useState,
  useEffect,
  useMemo,
  useRef,
  useCallback,
} from "../static/vendor/htm@3.1.1/preact/standalone.module.js";
import {
  html,
  useEffect,
  useState,
} from "../static/vendor/htm@3.1.1/preact/standalone.module.js";

export const ENDPOINT = "/api/v1/inspect/graphql";
export const GRAPHIQL = "/api/v1/inspect/graphiql";
export const REFRESH_MS = 5000;

// ---- GraphQL: each page's one document lives in queries/<name>.graphql ----------------

const documents = new Map();

async function documentText(name) {
  if (!documents.has(name)) {
    const loading = fetch(`./queries/${name}.graphql`).then((r) => {
      if (!r.ok) throw new Error(`query document ${name}: HTTP ${r.status}`);
      return r.text();
    });
    documents.set(name, loading);
    loading.catch(() => documents.delete(name));
  }
  return documents.get(name);
}

// ---- A bearer token, when the API asks for one -----------------------------------------
// Behind IAP the proxy adds the credential and the API never answers 401, so no form is
// shown. Without a proxy the token is kept for this tab only (sessionStorage), never in
// the URL or localStorage.

const TOKEN_KEY = "openrl-inspect-token";

function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage refused (a sandboxed frame): ask again each time
  }
}

export function setToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // kept nowhere; the next 401 asks again
  }
  live.set({ needsToken: false, tokenVersion: live.tokenVersion + 1 });
}

export class NeedsToken extends Error {}

export async function runQuery(name, variables) {
  const query = await documentText(name);
  const token = storedToken();
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(ENDPOINT, {
    method: "POST",
    headers,
    body: JSON.stringify({ query, variables, operationName: null }),
  });
  if (response.status === 401) {
    live.set({ needsToken: true, tokenRejected: Boolean(token) });
    throw new NeedsToken("a token is needed");
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new Error(`HTTP ${response.status} ${response.statusText}`);
  }
  return { data: body.data ?? null, errors: body.errors ?? [] };
}

// The live state every page shares: paused or not, and when the page last got an answer.
export const live = {
  paused: false,
  needsToken: false,
  tokenRejected: false,
  tokenVersion: 0,
  listeners: new Set(),
  updatedAt: null,
  set(patch) {
    Object.assign(this, patch);
    for (const fn of this.listeners) fn();
  },
};

export function useLive() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const fn = () => setTick((n) => n + 1);
    live.listeners.add(fn);
    return () => live.listeners.delete(fn);
  }, []);
  return live;
}

// Runs a page's document now and again REFRESH_MS after each answer, while the tab is
// visible and the refresh is not paused. One request at a time: on a fixed interval a
// query slower than the interval was abandoned for the next one and never drawn, and the
// piled-up requests slowed the server further. A failed refresh keeps the last answer
// (marked stale).
export function useQuery(name, variables) {
  const key = JSON.stringify(variables ?? {});
  const tokenVersion = useLive().tokenVersion;
  const [state, setState] = useState({ loading: true, data: null, errors: [], failure: null });

  useEffect(() => {
    let stopped = false;
    let running = false;
    let timer = null;
    setState({ loading: true, data: null, errors: [], failure: null });
    const wanted = () => !live.paused && !live.needsToken && document.visibilityState === "visible";
    const schedule = () => {
      clearTimeout(timer);
      if (!stopped) timer = setTimeout(() => (wanted() ? load() : schedule()), REFRESH_MS);
    };
    const load = async () => {
      if (running || stopped) return;
      running = true;
      try {
        const answer = await runQuery(name, JSON.parse(key));
        if (stopped) return;
        setState({ loading: false, data: answer.data, errors: answer.errors, failure: null });
        live.set({ updatedAt: Date.now() });
      } catch (err) {
        if (stopped) return;
        setState((s) => ({ ...s, loading: false, failure: String(err.message || err) }));
      } finally {
        running = false;
        schedule();
      }
    };
    load();
    const onVisible = () => {
      if (wanted()) load();
    };
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, [name, key, tokenVersion]);
  return state;
}

// ---- Errors: a field null with a coded error names the part that is missing -----------

// Each backend as people know it, and how a person turns it on (the flags and
// environment variables of `openrl-inspect serve`; tests/dashboard checks they exist).
const BACKENDS = {
  redis: { name: "Redis (OpenRL's state)", setup: "--redis-url redis://HOST:6379 (or OPENRL_INSPECT_REDIS_URL)" },
  kubernetes: {
    name: "Kubernetes",
    setup:
      "--kubeconfig PATH, or --in-cluster when it runs in the cluster " +
      "(or OPENRL_INSPECT_KUBERNETES_KUBECONFIG=PATH, OPENRL_INSPECT_KUBERNETES_IN_CLUSTER=true)",
  },
  prometheus: { name: "Prometheus", setup: "--prometheus-url URL (or OPENRL_INSPECT_PROMETHEUS_URL)" },
  cloud_logging: {
    name: "Cloud Logging",
    setup: "--logging-project PROJECT (or OPENRL_INSPECT_CLOUD_LOGGING_PROJECT)",
  },
  logs: { name: "the logs", setup: null },
};

export function groupErrors(errors) {
  const groups = new Map();
  for (const e of errors || []) {
    const ext = e.extensions || {};
    const key = ext.backend || ext.code || "error";
    const g = groups.get(key) || {
      key,
      backend: ext.backend || null,
      codes: new Set(),
      paths: new Set(),
      message: e.message,
    };
    if (ext.code) g.codes.add(ext.code);
    if (e.path) g.paths.add(e.path.filter((p) => typeof p === "string").join("."));
    groups.set(key, g);
  }
  return [...groups.values()];
}

export function backendName(key) {
  return BACKENDS[key]?.name || key;
}

// How to turn a backend on, or null.
export function backendSetup(key) {
  return BACKENDS[key]?.setup || null;
}

// What an error code means, in words, for a backend ("is not set up here").
const TROUBLE = {
  BACKEND_NOT_CONFIGURED: "is not set up for this inspector",
  BACKEND_UNAVAILABLE: "could not be reached",
  BACKEND_TIMEOUT: "did not answer in time",
  BACKEND_PROTOCOL_ERROR: "answered something this inspector cannot read",
  BACKEND_BUSY: "is busy",
  SCHEMA_VERSION_UNSUPPORTED: "holds records of a version this inspector cannot read",
  API_VERSION_UNSUPPORTED: "serves its objects at versions this inspector cannot read",
  BAD_RECORD: "holds a record that could not be read",
  DEADLINE_EXCEEDED: "took longer than the answer's deadline",
};

export function trouble(codes) {
  for (const c of codes) if (TROUBLE[c]) return TROUBLE[c];
  return "failed";
}

// The parts of a page an error path names, in words ("sessions.nodes.models.nodes.gpuActivity"
// is "GPU duty").
const PART_WORDS = {
  gpuActivity: "GPU duty",
  duty: "GPU duty",
  logs: "logs",
  events: "Kubernetes events",
  whyWaiting: "why it waits",
  placements: "placements",
  livePods: "live pods",
  liveGpus: "live GPUs",
  liveNode: "live nodes",
  samplerBatchStats: "sampler throughput",
  summary: "the diagnosis",
  attention: "the models needing attention",
  sessions: "sessions and their models",
  session: "the session",
  model: "the model",
  capacity: "GPU capacity",
  nodes: "nodes and their GPUs",
  workloads: "pending workloads",
  steps: "steps",
  openOps: "open ops",
};

export function partWords(paths) {
  const out = new Set();
  for (const p of paths) {
    const field = p.split(".").filter(Boolean).pop() || "";
    out.add(PART_WORDS[field] || field.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase());
  }
  return [...out];
}

// A list in words: "a, b and c".
export function words(list) {
  return list.length < 2 ? list.join("") : `${list.slice(0, -1).join(", ")} and ${list[list.length - 1]}`;
}

// Errors under one path prefix (e.g. "model.logs"): the part of the page they spoil.
export function errorsAt(errors, prefix) {
  return (errors || []).filter((e) => (e.path || []).join(".").startsWith(prefix));
}

// ---- Routing: the hash holds page, ids and filters (deep links, the back button) ------

export function parseRoute(hash) {
  const raw = (hash || "").replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = Object.fromEntries(new URLSearchParams(query));
  const page = parts[0] || "overview";
  return { page, id: parts[1] || null, params };
}

export function href(page, id, params) {
  let out = `#/${page}`;
  if (id) out += `/${encodeURIComponent(id)}`;
  const kept = Object.entries(params || {}).filter(([, v]) => v !== "" && v != null);
  if (kept.length) out += `?${new URLSearchParams(kept)}`;
  return out;
}

// A filter change is a new history entry (so Back undoes it); typing replaces the entry.
export function navigate(page, id, params, replace = false) {
  const target = href(page, id, params);
  if (replace) {
    history.replaceState(null, "", target);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else {
    location.hash = target;
  }
}

// ---- Formatting ---------------------------------------------------------------------

export function secondsSince(iso) {
  if (!iso) return null;
  return (Date.now() - Date.parse(iso)) / 1000;
}

export function dur(s) {
  if (s == null || !isFinite(s)) return "—";
  const a = Math.abs(s);
  if (a === 0) return "0 s";
  if (a < 0.001) return `${(s * 1e6).toFixed(a < 1e-5 ? 1 : 0).replace(/\.0$/, "")} µs`;
  if (a < 1) return `${(s * 1000).toFixed(a < 0.01 ? 1 : 0).replace(/\.0$/, "")} ms`;
  if (a < 60) return `${s.toFixed(a < 10 ? 1 : 0)} s`;
  if (a < 3600) return `${Math.floor(a / 60)}m ${Math.round(a % 60)}s`;
  if (a < 86400) return `${Math.floor(a / 3600)}h ${Math.round((a % 3600) / 60)}m`;
  return `${Math.floor(a / 86400)}d ${Math.round((a % 86400) / 3600)}h`;
}

export function ago(iso) {
  const s = secondsSince(iso);
  return s == null ? "—" : `${dur(s)} ago`;
}

// A model's pace in words: "11.1/min", or how long since its last step when it has no
// pace now (the API gives none for a failed, ended or stalled model).
export function paceText(summary) {
  if (!summary) return "—";
  if (summary.stepsPerMinute != null) return `${num(summary.stepsPerMinute)}/min`;
  if (summary.secondsSinceLastStep != null) return `no step for ${dur(summary.secondsSinceLastStep)}`;
  return "no step yet";
}

export function num(x, digits = 1) {
  return x == null || !isFinite(x) ? "—" : Number(x).toFixed(digits);
}

export function pct(x) {
  return x == null || !isFinite(x) ? "—" : `${Math.round(x * 100)}%`;
}

export function time(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

// Verdicts, most serious first (the schema's order).
export const VERDICTS = [
  "FAILED",
  "LOST_OPS",
  "STUCK",
  "STALLED",
  "WAITING",
  "IDLE",
  "SLOW",
  "PROGRESSING",
  "ENDED",
];
export const STATES = ["WAITING", "PLACED", "ACTIVE", "FAILED", "ENDED"];

export function Verdict({ v }) {
  if (!v) return html`<span class="badge">—</span>`;
  return html`<span class=${`badge v-${v}`} data-verdict=${v}>${v.replace("_", " ")}</span>`;
}

export function Health({ h }) {
  return html`<span class=${`badge h-${h}`}>${h}</span>`;
}
