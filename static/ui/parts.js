// Page furniture: the states a part of a page can be in (loading, empty, failed, partial).
import { backendName, backendSetup, groupErrors, href, html, partWords, trouble, words } from "./lib.js";

// One sentence per backend (or code) that failed: what is missing, why, and what to do,
// in the words people use; the code and the server's own message under "details".
function Sentence({ g }) {
  const parts = partWords(g.paths);
  const missing = parts.length ? `, so ${words(parts.slice(0, 4))}${parts.length > 4 ? ` and ${parts.length - 4} more` : ""} ${parts.length === 1 && !parts[0].endsWith("s") ? "is" : "are"} not shown` : "";
  const codes = [...g.codes];
  const unset = g.codes.has("BACKEND_NOT_CONFIGURED");
  const setup = unset ? backendSetup(g.backend) : null;
  const who = g.backend ? backendName(g.backend) : "Part of the answer";
  return html`<strong>${who} ${trouble(codes)}</strong>${missing}.
    ${setup ? html` To add it, start the inspector with <code data-setup>${setup}</code>.` : ""}
    ${!unset && g.backend ? " The page tries again every few seconds." : ""}
    <details class="small"><summary>details</summary>${codes.join(", ") || "error"}: ${g.message}</details>`;
}

// One banner per backend that failed: which part of the page is missing, and why.
export function Banners({ errors, failure }) {
  const groups = groupErrors(errors);
  return html`
    ${failure &&
    html`<div class="banner banner-error" role="alert" data-banner="network">
      Could not refresh: ${failure}. Showing the last answer.
    </div>`}
    ${groups.map(
      (g) => html`<div class="banner" role="status" data-banner=${g.backend || g.key} key=${g.key}>
        <${Sentence} g=${g} />
      </div>`,
    )}
  `;
}

export function Loading({ what }) {
  return html`<div class="state" aria-busy="true" data-state="loading">Loading ${what}…</div>`;
}

export function Empty({ children }) {
  return html`<div class="state empty" data-state="empty">${children}</div>`;
}

// The whole answer is missing (data null): say why in a sentence, and a way back.
// `what` and `id` name what the page asked for ("model", "lora-7").
export function Failed({ errors, failure, what, id, home = true }) {
  const groups = groupErrors(errors);
  const notFound = groups.some((g) => g.codes.has("NOT_FOUND"));
  return html`<div class="state failed" role="alert" data-state="error">
    ${notFound
      ? html`<p data-not-found><strong>There is no ${what || "such thing"} “${id}” here.</strong>${" "}
          It may have ended and been cleaned up, or the link may be mistyped.</p>`
      : html`<p><strong>Nothing to show.</strong></p>`}
    ${failure && html`<p>The inspector could not be reached: ${failure}.</p>`}
    ${groups
      .filter((g) => !g.codes.has("NOT_FOUND"))
      .map((g) => html`<p data-banner=${g.backend || g.key} key=${g.key}><${Sentence} g=${g} /></p>`)}
    ${home && html`<p><a href="#/overview" data-link="overview">Go to the overview</a></p>`}
  </div>`;
}

export function Section({ title, id, children, note }) {
  return html`<section class="card" aria-labelledby=${`h-${id}`} data-section=${id}>
    <h2 id=${`h-${id}`}>${title}${note && html` <span class="muted small">${note}</span>`}</h2>
    ${children}
  </section>`;
}

// A part whose field came back null: a line saying so instead of an empty table.
export function Missing({ what }) {
  return html`<p class="muted" data-missing>${what} unavailable (see the banner above).</p>`;
}

export function Truncated({ when, what }) {
  return when ? html`<p class="muted small">More ${what} exist than shown.</p>` : null;
}

// Paging through a connection: the first page and the next, kept in the route's ``after``
// so that back and forward move between pages.
export function Pager({ page, params, pageInfo, what }) {
  if (!pageInfo) return null;
  const first = params.after ? html`<a href=${href(page, null, { ...params, after: "" })} data-page-first>First page of ${what}</a>` : null;
  const next = pageInfo.hasNextPage && pageInfo.endCursor
    ? html`<a href=${href(page, null, { ...params, after: pageInfo.endCursor })} data-page-next>Next page of ${what}</a>`
    : null;
  if (!first && !next) return null;
  return html`<nav class="pager" aria-label=${`pages of ${what}`}>${first} ${next}</nav>`;
}
