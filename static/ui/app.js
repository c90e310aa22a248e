// The dashboard's shell: navigation, live controls and the page the URL names.
import {
  GRAPHIQL,
  html,
  live,
  parseRoute,
  render,
  setToken,
  useEffect,
  useLive,
  useState,
} from "./lib.js";
import { Cluster } from "./pages/cluster.js";
import { Model } from "./pages/model.js";
import { Overview } from "./pages/overview.js";
import { SessionPage } from "./pages/session.js";

const PAGES = { overview: Overview, model: Model, session: SessionPage, cluster: Cluster };

function useRoute() {
  const [route, setRoute] = useState(parseRoute(location.hash));
  useEffect(() => {
    const fn = () => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", fn);
    return () => window.removeEventListener("hashchange", fn);
  }, []);
  return route;
}

function LiveControls() {
  const state = useLive();
  const [, setNow] = useState(0);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const age = state.updatedAt == null ? null : Math.max(0, Math.round((Date.now() - state.updatedAt) / 1000));
  return html`<div class="live">
    <span class="muted small" aria-live="polite" data-updated>
      ${age == null ? "not loaded yet" : `updated ${age} s ago`}${state.paused ? " · paused" : ""}
    </span>
    <button type="button" onClick=${() => live.set({ paused: !live.paused })} aria-pressed=${state.paused} data-pause>
      ${state.paused ? "Resume" : "Pause"}
    </button>
  </div>`;
}

// Shown when the API answered 401: a token for this tab (sent as a Bearer credential).
function TokenForm() {
  const state = useLive();
  const [value, setValue] = useState("");
  if (!state.needsToken) return null;
  const submit = (e) => {
    e.preventDefault();
    if (value.trim()) setToken(value.trim());
    setValue("");
  };
  return html`<form class="state token" data-token-form onSubmit=${submit} role="alert">
    <p>
      ${state.tokenRejected
        ? "The token was not accepted. Enter another."
        : "This inspector needs a bearer token."}
      It is kept for this tab only.
    </p>
    <label>Token <input type="password" autocomplete="off" name="token" value=${value}
      onInput=${(e) => setValue(e.target.value)} data-token-input /></label>
    <button type="submit">Use token</button>
  </form>`;
}

function Nav({ route }) {
  const link = (page, label) =>
    html`<a href=${`#/${page}`} aria-current=${route.page === page ? "page" : null}>${label}</a>`;
  return html`<nav aria-label="Pages">
    <a class="brand" href="#/overview">OpenRL Inspector</a>
    ${link("overview", "Overview")} ${link("cluster", "Cluster")}
    <a href=${GRAPHIQL}>GraphiQL</a>
  </nav>`;
}

function App() {
  const route = useRoute();
  const Page = PAGES[route.page];
  useEffect(() => {
    document.title = `${route.id ? `${route.id} · ` : ""}${route.page} · OpenRL Inspector`;
  }, [route.page, route.id]);
  return html`<header class="top"><${Nav} route=${route} /><${LiveControls} /></header>
    <main id="main">
      <${TokenForm} />
      ${Page
        ? html`<${Page} route=${route} key=${`${route.page}/${route.id || ""}`} />`
        : html`<div class="state failed" role="alert">Unknown page “${route.page}”. <a href="#/overview">Go to the overview.</a></div>`}
    </main>`;
}

const root = document.getElementById("app");
root.textContent = ""; // the boot message; Preact renders into what it finds
render(html`<${App} />`, root);
