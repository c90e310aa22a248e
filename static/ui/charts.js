// Hand-written SVG charts: a sparkline, stacked bars and duty bars. Small on purpose.
import { dur, html } from "./lib.js";

export function Sparkline({ values, width = 90, height = 22, label }) {
  const pts = (values || []).filter((v) => v != null && isFinite(v));
  if (pts.length < 2) return html`<span class="muted small">—</span>`;
  const max = Math.max(...pts) || 1;
  const min = Math.min(...pts);
  const span = max - min || 1;
  const step = width / (pts.length - 1);
  const d = pts
    .map((v, i) => `${i ? "L" : "M"}${(i * step).toFixed(1)},${(height - 2 - ((v - min) / span) * (height - 4)).toFixed(1)}`)
    .join(" ");
  return html`<svg class="spark" width=${width} height=${height} role="img" aria-label=${label}>
    <path d=${d} fill="none" stroke="currentColor" stroke-width="1.5" />
  </svg>`;
}

// A palette the light and dark themes both read; op kinds take colours in order seen.
const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f"];

export function colourOf(kinds, kind) {
  return kind === "queue wait" ? "var(--queue)" : PALETTE[kinds.indexOf(kind) % PALETTE.length];
}

// The smallest of 1, 2 and 5 times a power of ten at or above x: an axis's top.
export function niceCeil(x) {
  if (!(x > 0) || !isFinite(x)) return 1;
  const power = 10 ** Math.floor(Math.log10(x));
  const top = [1, 2, 5, 10].map((m) => m * power).find((v) => v >= x * (1 - 1e-9));
  return top ?? 10 * power;
}

// bars: [{label, parts: [{kind, seconds}], span, title}], oldest left. The axis reaches
// the longest bar or step (``span``, the step's whole duration, drawn as an outline), so
// ops of a microsecond in a two-second step are a sliver, not a full bar.
export function StackedBars({ bars, kinds, height = 160 }) {
  const totals = bars.map((b) => b.parts.reduce((a, p) => a + (p.seconds || 0), 0));
  const spans = bars.map((b) => b.span || 0);
  const max = niceCeil(Math.max(...totals, ...spans));
  const top = height - 14;
  const bw = 18;
  const gap = 6;
  const width = bars.length * (bw + gap) + 52;
  return html`<figure class="chart">
    <svg width=${width} height=${height + 20} role="img" aria-label="Step duration by op kind" data-axis-max=${max}>
      <text x="0" y=${height - top + 4} class="axis" data-axis-top>${dur(max)}</text>
      <text x="0" y=${height - top / 2 + 4} class="axis">${dur(max / 2)}</text>
      <text x="0" y=${height} class="axis">0</text>
      <line x1="50" x2=${width} y1=${height - top} y2=${height - top} class="axis-grid" />
      <line x1="50" x2=${width} y1=${height} y2=${height} class="axis-line" />
      ${bars.map((b, i) => {
        let y = height;
        const x = 52 + i * (bw + gap);
        const span = ((b.span || 0) / max) * top;
        return html`<g key=${b.label}>
          <title>${b.title}</title>
          ${span > 0 && html`<rect class="span" x=${x - 1} y=${height - span} width=${bw + 2} height=${span} />`}
          ${b.parts.map((p) => {
            const h = ((p.seconds || 0) / max) * top;
            y -= h;
            return html`<rect x=${x} y=${y} width=${bw} height=${Math.max(0, h)} fill=${colourOf(kinds, p.kind)} data-kind=${p.kind} />`;
          })}
          <text x=${x + bw / 2} y=${height + 14} class="axis" text-anchor="middle">${b.label}</text>
        </g>`;
      })}
    </svg>
    <figcaption class="legend">
      ${kinds.map(
        (k) => html`<span key=${k}><i style=${`background:${colourOf(kinds, k)}`}></i>${k}</span>`,
      )}
      ${spans.some((s) => s > 0) && html`<span><i class="span-sample"></i>the whole step</span>`}
    </figcaption>
  </figure>`;
}

// Duty 0..1 as a colour: cool when idle, warm when busy; null (no samples) is grey.
export function dutyColour(duty) {
  if (duty == null || !isFinite(duty)) return "var(--nodata)";
  const d = Math.max(0, Math.min(1, duty));
  return `hsl(${Math.round(210 - d * 170)} 70% ${Math.round(62 - d * 14)}%)`;
}

export function DutyBar({ duty, label }) {
  const w = duty == null ? 0 : Math.round(Math.max(0, Math.min(1, duty)) * 100);
  return html`<span class="dutybar" role="img" aria-label=${`${label || "duty"} ${duty == null ? "no samples" : `${w}%`}`}>
    <span style=${`width:${w}%;background:${dutyColour(duty)}`}></span>
  </span>`;
}
