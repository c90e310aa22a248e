// Page furniture: the states a part of a page can be in (loading, empty, failed, partial).
import { backendName, groupErrors, href, html } from "./lib.js";

// One banner per backend that failed: which part of the page is missing, and why.
export function Banners({ errors, failure }) {
  const groups = groupErrors(errors);
  return html`
    ${failure &&
    html`<div class="banner banner-error" role="alert" data-banner="network">
      Could not refresh: ${failure}. Showing the last answer.
    </div>`}
    ${groups.map(
      (g) => html`<div
        class="banner"
        role="status"
        data-banner=${g.backend || g.key}
        key=${g.key}
      >
        <strong>${g.backend ? `${backendName(g.backend)} is unavailable` : [...g.codes][0] || "Error"}</strong>
        ${" "}(${[...g.codes].join(", ") || "error"}): ${g.message}
        ${g.paths.size > 0 &&
        html`<span class="muted"> — missing: ${[...g.paths].slice(0, 4).join(", ")}${g.paths.size > 4 ? ` and ${g.paths.size - 4} more` : ""}</span>`}
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

// The whole answer is missing (data null): say why, from the errors.
export function Failed({ errors, failure }) {
  const groups = groupErrors(errors);
  return html`<div class="state failed" role="alert" data-state="error">
    <strong>Nothing to show.</strong>
    ${failure && html`<p>${failure}</p>`}
    ${groups.map(
      (g) =>
        html`<p data-banner=${g.backend || g.key}>
          ${g.backend ? `${backendName(g.backend)} is unavailable` : [...g.codes][0] || "Error"}:
          ${g.message}
        </p>`,
    )}
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
