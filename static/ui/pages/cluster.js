// Cluster: capacity by GPU product, every node's GPUs by duty and holder (a GPU partitioned
// into MIG slices as one box of its slices), pending workloads.
import { dutyColour } from "../charts.js";
import { ago, backendSetup, href, html, navigate, pct, useQuery } from "../lib.js";
import { Banners, Empty, Failed, Loading, Missing, Pager, Section, Truncated } from "../parts.js";

// "3 held, 5 free of 16" MIG slices, or a dash where none are published.
function slices(c) {
  return c.slices.total ? `${c.slices.held} held, ${c.slices.free} free of ${c.slices.total}` : "—";
}

// Unhealthy GPUs, held or not: "2 (1 held)" when a model still holds one of them.
function unhealthy(c) {
  return c.unhealthyHeld ? `${c.unhealthy} (${c.unhealthyHeld} held)` : String(c.unhealthy);
}

function Capacity({ cap }) {
  if (!cap) return html`<${Section} title="Capacity" id="capacity"><${Missing} what="Capacity" /><//>`;
  const note = `${cap.nodes} nodes${cap.partitioned ? `, ${cap.partitioned} GPUs in MIG slices (each counted once)` : ""}${cap.degraded ? ", cache not in sync" : ""}`;
  const row = (c) => html`<td class="num">${c.total}</td><td class="num">${c.held}</td><td class="num">${c.free}</td><td class="num" data-unhealthy>${unhealthy(c)}</td><td class="num">${c.tainted}</td><td class="num" data-slices>${slices(c)}</td>`;
  return html`<${Section} title="Capacity" id="capacity" note=${note}>
    <table>
      <thead><tr><th>GPU product</th><th>Nodes</th><th>GPUs</th><th>Held</th><th>Free</th><th>Unhealthy</th><th>Tainted</th><th>MIG slices</th></tr></thead>
      <tbody>
        ${cap.byProduct.map(
          (p) => html`<tr key=${p.product} data-product=${p.product}><td>${p.product}</td><td class="num">${p.nodes}</td>${row(p)}</tr>`,
        )}
        <tr class="total"><td>All</td><td class="num">${cap.nodes}</td>${row(cap)}</tr>
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

function GpuCell({ g, node, selected, slice = false }) {
  const holder = g.heldBy[0];
  const modelId = holder?.model?.id || holder?.modelId || null;
  const state = gpuState(g, node);
  const duty = g.duty?.value ?? null;
  const tip = [
    `${node.name} ${g.device}`,
    slice ? `MIG ${g.profile || "slice"} of ${g.parentDevice || g.parentUuid || "its GPU"}` : null,
    `${state}`,
    `duty ${pct(duty)}`,
    modelId ? `model ${modelId}` : null,
    holder?.pod ? `pod ${holder.pod.namespace}/${holder.pod.name}` : null,
    ...g.taints.map((t) => `taint ${t.key}:${t.effect}`),
  ].filter(Boolean).join("\n");
  const cls = `${slice ? "slice" : "gpu"} gpu-${state}${selected ? " selected" : ""}`;
  const style = `--duty:${dutyColour(duty)}`;
  const what = slice ? `MIG slice ${g.profile || ""} ${g.device}` : g.device;
  const label = `${what}, ${state}, duty ${pct(duty)}${modelId ? `, held by ${modelId}` : ""}`;
  const text = slice ? "" : g.index ?? g.minor ?? "";
  if (modelId) {
    return html`<a class=${cls} style=${style} href=${href("model", modelId)} title=${tip} aria-label=${label} data-gpu=${g.uuid} data-holder=${modelId}>${text}</a>`;
  }
  return html`<span class=${cls} style=${style} title=${tip} aria-label=${label} tabindex="0" role="img" data-gpu=${g.uuid}>${text}</span>`;
}

// A GPU partitioned into MIG slices: one GPU-sized box holding its slices, each shown as
// a GPU would be (state, duty, holder); the box is outlined held when any slice is.
function PartitionedGpu({ parent, parts, node, params }) {
  const held = parts.some((g) => g.held);
  const cols = Math.ceil(Math.sqrt(parts.length));
  return html`<span class=${`gpu gpu-mig${held ? " gpu-held" : ""}`} style=${`--cols:${cols}`} data-parent=${parent}
      title=${`${node.name} ${parts[0].parentDevice || parent}: ${parts.length} MIG slices, ${parts.filter((g) => g.held).length} held`}>
    ${parts.map((g) => html`<${GpuCell} key=${g.uuid || g.device} g=${g} node=${node} selected=${params.gpu === g.uuid} slice=${true} />`)}
  </span>`;
}

// The node's devices in order, a partitioned GPU's slices gathered where its first one is.
function gpuBoxes(gpus) {
  const out = [];
  const groups = new Map();
  for (const g of gpus) {
    if (g.kind !== "MIG") {
      out.push({ key: g.uuid || g.device, gpu: g });
      continue;
    }
    const parent = g.parentUuid || g.parentDevice || g.device;
    if (!groups.has(parent)) {
      groups.set(parent, []);
      out.push({ key: parent, parent, parts: groups.get(parent) });
    }
    groups.get(parent).push(g);
  }
  return out;
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
        ${n.capacity.partitioned ? html` · <span data-node-slices>${n.capacity.slices.held}/${n.capacity.slices.total} MIG slices held</span>` : ""}
        ${n.capacity.condition !== "ok" ? html` · <span class="bad">${n.capacity.condition}</span>` : ""}</div>
    </div>
    <div class="gpus">
      ${gpuBoxes(n.gpus?.nodes || []).map((b) =>
        b.gpu
          ? html`<${GpuCell} key=${b.key} g=${b.gpu} node=${n} selected=${params.gpu === b.gpu.uuid} />`
          : html`<${PartitionedGpu} key=${b.key} parent=${b.parent} parts=${b.parts} node=${n} params=${params} />`,
      )}
      ${n.gpus?.nodes?.length === 0 && html`<span class="muted small">no DRA GPUs</span>`}
      <${Truncated} when=${n.gpus?.truncated} what="GPUs of this node" />
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

// Every colour the grid uses: a held GPU takes its duty's colour, anywhere on the scale
// from idle to busy (the scale drawn whole, with its stops), grey when DCGM has no samples.
function Legend() {
  const stops = [0, 0.25, 0.5, 0.75, 1];
  const scale = `linear-gradient(to right, ${stops.map((d) => `${dutyColour(d)} ${d * 100}%`).join(", ")})`;
  return html`<div class="legend" data-legend>
    <span data-legend-state="held"><i class="gpu gpu-held sample"></i>held (filled with its duty)</span>
    <span data-legend-state="free"><i class="gpu gpu-free sample"></i>free</span>
    <span data-legend-state="unhealthy"><i class="gpu gpu-unhealthy sample"></i>unhealthy</span>
    <span data-legend-state="tainted"><i class="gpu gpu-tainted sample"></i>tainted or cordoned</span>
    <span data-legend-state="mig"><i class="gpu gpu-mig sample" style="--cols:2"><b class="slice gpu-held"></b><b class="slice gpu-held"></b><b class="slice gpu-free"></b><b class="slice gpu-free"></b></i>a GPU in MIG slices</span>
    <span data-legend-duty>duty over 10 min: idle 0%
      <i class="scale" style=${`background:${scale}`} data-scale=${stops.map(dutyColour).join(" ")}></i> 100% busy</span>
    <span data-legend-nodata><i class="sample" style=${`background:${dutyColour(null)}`}></i>no duty samples</span>
  </div>`;
}

// Served without Kubernetes: no cluster to show, and the setting that turns it on.
function NoKubernetes() {
  return html`<div data-page="cluster">
    <${Section} title="Cluster" id="no-kubernetes">
      <div class="state empty" data-state="no-kubernetes">
        <p><strong>This inspector was started without Kubernetes</strong>, so it has no nodes, GPUs
          or pending workloads to show.</p>
        <p>To see them, start it with <code data-setup>${backendSetup("kubernetes")}</code>.</p>
      </div>
    <//>
  </div>`;
}

function kubernetesUnset(errors) {
  return (errors || []).some(
    (e) => e.extensions?.backend === "kubernetes" && e.extensions?.code === "BACKEND_NOT_CONFIGURED",
  );
}

export function Cluster({ route }) {
  // One page of nodes at a time (``after`` in the route), the next when asked for.
  const q = useQuery("cluster", { after: route.params.after || null });
  if (q.loading && !q.data) return html`<${Loading} what="the cluster" />`;
  if (kubernetesUnset(q.errors)) return html`<${NoKubernetes} />`;
  if (!q.data) return html`<${Failed} errors=${q.errors} failure=${q.failure} />`;
  const nodes = q.data.nodes;
  return html`<div data-page="cluster">
    <${Banners} errors=${q.errors} failure=${q.failure} />
    <${Capacity} cap=${q.data.capacity} />
    <${Section} title="GPUs" id="gpus" note="colour: duty over 10 min; hover or focus for the holder, click to open it">
      <${Legend} />
      ${nodes == null
        ? html`<${Missing} what="Nodes" />`
        : nodes.nodes.length === 0
          ? html`<${Empty}>No nodes.</${Empty}>`
          : html`<div class="nodes">${nodes.nodes.map((n) => html`<${NodeRow} key=${n.name} n=${n} params=${route.params} />`)}</div>`}
      <${Truncated} when=${nodes?.truncated} what="nodes" />
      <${Pager} page="cluster" params=${route.params} pageInfo=${nodes?.pageInfo} what="nodes" />
    <//>
    <${Pending} workloads=${q.data.workloads} />
  </div>`;
}
