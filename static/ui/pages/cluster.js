// Cluster: capacity by GPU product, every node's GPUs by duty and holder, pending workloads.
import { dutyColour } from "../charts.js";
import { ago, href, html, navigate, pct, useQuery } from "../lib.js";
import { Banners, Empty, Failed, Loading, Missing, Section, Truncated } from "../parts.js";

function Capacity({ cap }) {
  if (!cap) return html`<${Section} title="Capacity" id="capacity"><${Missing} what="Capacity" /><//>`;
  return html`<${Section} title="Capacity" id="capacity" note=${`${cap.nodes} nodes${cap.degraded ? ", cache not in sync" : ""}`}>
    <table>
      <thead><tr><th>GPU product</th><th>Nodes</th><th>Total</th><th>Held</th><th>Free</th><th>Unhealthy</th><th>Tainted</th></tr></thead>
      <tbody>
        ${cap.byProduct.map(
          (p) => html`<tr key=${p.product} data-product=${p.product}><td>${p.product}</td><td class="num">${p.nodes}</td><td class="num">${p.total}</td><td class="num">${p.held}</td><td class="num">${p.free}</td><td class="num">${p.unhealthy}</td><td class="num">${p.tainted}</td></tr>`,
        )}
        <tr class="total"><td>All</td><td class="num">${cap.nodes}</td><td class="num">${cap.total}</td><td class="num">${cap.held}</td><td class="num">${cap.free}</td><td class="num">${cap.unhealthy}</td><td class="num">${cap.tainted}</td></tr>
      </tbody>
    </table>
    <${Truncated} when=${cap.truncated} what="nodes or GPUs" />
  <//>`;
}

function gpuState(g, node) {
  if (g.health === "UNHEALTHY") return "unhealthy";
  if (g.held) return "held";
  if (g.taints.length > 0 || node.unschedulable || node.capacity.condition === "tainted") return "tainted";
  if (node.ready === false || node.capacity.condition === "unhealthy") return "unhealthy";
  return "free";
}

function GpuCell({ g, node, selected }) {
  const holder = g.heldBy[0];
  const modelId = holder?.model?.id || holder?.modelId || null;
  const state = gpuState(g, node);
  const duty = g.duty?.value ?? null;
  const tip = [
    `${node.name} ${g.device}`,
    `${state}`,
    `duty ${pct(duty)}`,
    modelId ? `model ${modelId}` : null,
    holder?.pod ? `pod ${holder.pod.namespace}/${holder.pod.name}` : null,
    ...g.taints.map((t) => `taint ${t.key}:${t.effect}`),
  ].filter(Boolean).join("\n");
  const cls = `gpu gpu-${state}${selected ? " selected" : ""}`;
  const style = `--duty:${dutyColour(duty)}`;
  const label = `${g.device}, ${state}, duty ${pct(duty)}${modelId ? `, held by ${modelId}` : ""}`;
  if (modelId) {
    return html`<a class=${cls} style=${style} href=${href("model", modelId)} title=${tip} aria-label=${label} data-gpu=${g.uuid} data-holder=${modelId}>${g.index ?? ""}</a>`;
  }
  return html`<span class=${cls} style=${style} title=${tip} aria-label=${label} tabindex="0" role="img" data-gpu=${g.uuid}>${g.index ?? ""}</span>`;
}

function NodeRow({ n, params }) {
  const selected = params.node === n.name;
  return html`<div class=${`node ${selected ? "selected" : ""}`} data-node=${n.name} id=${`node-${n.name}`}>
    <div class="node-name">
      <a href=${href("cluster", null, { ...params, node: selected ? "" : n.name })} onClick=${(e) => {
        e.preventDefault();
        navigate("cluster", null, { ...params, node: selected ? "" : n.name, gpu: "" });
      }}>${n.name}</a>
      <div class="muted small">${n.gpuProduct || "no GPU product"} · ${n.capacity.held}/${n.capacity.total} held
        ${n.capacity.condition !== "ok" ? html` · <span class="bad">${n.capacity.condition}</span>` : ""}</div>
    </div>
    <div class="gpus">
      ${(n.gpus?.nodes || []).map((g) => html`<${GpuCell} key=${g.uuid || g.device} g=${g} node=${n} selected=${params.gpu === g.uuid} />`)}
      ${n.gpus?.nodes?.length === 0 && html`<span class="muted small">no DRA GPUs</span>`}
    </div>
  </div>`;
}

const PENDING = new Set(["pending", "quota_reserved", "evicted", "inactive"]);

function Pending({ workloads }) {
  if (!workloads) return html`<${Section} title="Pending workloads" id="pending"><${Missing} what="Workloads" /><//>`;
  const list = workloads.nodes.filter((w) => PENDING.has(w.status));
  return html`<${Section} title="Pending workloads" id="pending" note=${`${list.length} of ${workloads.nodes.length}`}>
    ${list.length === 0
      ? html`<${Empty}>No workload is waiting.</${Empty}>`
      : html`<table>
          <thead><tr><th>Workload</th><th>Model</th><th>Queue</th><th>Priority</th><th>Status</th><th>Age</th></tr></thead>
          <tbody>${list.map(
            (w) => html`<tr key=${w.name} data-workload=${w.name}>
              <td>${w.namespace}/${w.name}</td>
              <td>${w.modelId ? html`<a href=${href("model", w.modelId)}>${w.modelId}</a>` : "—"}</td>
              <td>${w.queueName || "—"}</td><td class="num">${w.priority ?? "—"}</td><td>${w.status}</td><td class="small">${ago(w.createdAt)}</td>
            </tr>`,
          )}</tbody>
        </table>`}
    <${Truncated} when=${workloads.truncated} what="workloads" />
  <//>`;
}

export function Cluster({ route }) {
  const q = useQuery("cluster", {});
  if (q.loading && !q.data) return html`<${Loading} what="the cluster" />`;
  if (!q.data) return html`<${Failed} errors=${q.errors} failure=${q.failure} />`;
  const nodes = q.data.nodes;
  return html`<div data-page="cluster">
    <${Banners} errors=${q.errors} failure=${q.failure} />
    <${Capacity} cap=${q.data.capacity} />
    <${Section} title="GPUs" id="gpus" note="colour: duty over 10 min; hover or focus for the holder, click to open it">
      <div class="legend">
        <span><i class="gpu gpu-held sample"></i>held</span><span><i class="gpu gpu-free sample"></i>free</span>
        <span><i class="gpu gpu-unhealthy sample"></i>unhealthy</span><span><i class="gpu gpu-tainted sample"></i>tainted</span>
        <span><i class="sample" style=${`background:${dutyColour(0)}`}></i>idle</span><span><i class="sample" style=${`background:${dutyColour(1)}`}></i>busy</span>
      </div>
      ${nodes == null
        ? html`<${Missing} what="Nodes" />`
        : nodes.nodes.length === 0
          ? html`<${Empty}>No nodes.</${Empty}>`
          : html`<div class="nodes">${nodes.nodes.map((n) => html`<${NodeRow} key=${n.name} n=${n} params=${route.params} />`)}</div>`}
      <${Truncated} when=${nodes?.truncated} what="nodes" />
    <//>
    <${Pending} workloads=${q.data.workloads} />
  </div>`;
}
