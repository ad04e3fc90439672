// The inspector's web page: one HTML document with its style and script, served at "/". It uses no
// external resources (no CDN, no fonts): the chart is drawn on a canvas and the tree as SVG by the
// script below. It polls the JSON endpoints four times a second (docs/debugging.md lists them) and
// sends commands with POST and the X-Ebt-Inspector header.
#include <ebt/debug/inspector.hpp>

namespace ebt::debug {

namespace {

constexpr std::string_view kPage = R"EBTPAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ebt inspector</title>
<link rel="icon" href="data:,">
<style>
  :root { --bg:#f4f5f7; --card:#fff; --ink:#1f2933; --muted:#6b7785; --line:#e1e5ea; --accent:#2563eb;
          --running:#f59e0b; --success:#16a34a; --failure:#dc2626; --aborted:#7c3aed; --idle:#d5dbe3; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--ink); }
  header { display:flex; align-items:center; gap:18px; padding:10px 18px; background:#111827; color:#f9fafb; }
  header h1 { font-size:17px; margin:0; font-weight:600; letter-spacing:.3px; }
  header .stat { color:#cbd5e1; } header .stat b { color:#fff; font-variant-numeric:tabular-nums; }
  .pill { padding:2px 10px; border-radius:999px; font-size:12px; font-weight:600; }
  .pill.running { background:#065f46; color:#d1fae5; } .pill.paused { background:#92400e; color:#fef3c7; }
  header .spacer { flex:1; }
  body.read-only .command { display:none; } #read-only { display:none; } body.read-only #read-only { display:inline; }
  button { font:inherit; border:1px solid var(--line); background:#fff; color:var(--ink); padding:5px 12px;
           border-radius:6px; cursor:pointer; }
  button:hover { border-color:var(--accent); color:var(--accent); }
  header button { background:#1f2937; color:#f9fafb; border-color:#374151; }
  header button:hover { border-color:#93c5fd; color:#bfdbfe; }
  button.danger { color:var(--failure); border-color:#f3c4c4; } button.danger:hover { background:#fef2f2; }
  main { display:grid; grid-template-columns: 430px 1fr; gap:14px; padding:14px; }
  .card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 14px; }
  .card h2 { font-size:13px; text-transform:uppercase; letter-spacing:.6px; color:var(--muted); margin:0 0 8px; }
  .col { display:flex; flex-direction:column; gap:14px; min-width:0; }
  canvas { width:100%; height:170px; display:block; }
  .legend { display:flex; gap:14px; font-size:12px; color:var(--muted); }
  .legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:5px; vertical-align:-1px; }
  input, select { font:inherit; padding:5px 8px; border:1px solid var(--line); border-radius:6px; }
  #search { width:100%; margin-bottom:8px; }
  table { width:100%; border-collapse:collapse; font-size:13px; }
  th { text-align:left; color:var(--muted); font-weight:500; border-bottom:1px solid var(--line); padding:4px 6px; }
  td { padding:4px 6px; border-bottom:1px solid #f0f2f5; white-space:nowrap; overflow:hidden; text-overflow:ellipsis; max-width:190px; }
  #agents tr { cursor:pointer; } #agents tr:hover { background:#eef4ff; } #agents tr.selected { background:#dbeafe; }
  .agents-box { max-height:360px; overflow:auto; }
  .muted { color:var(--muted); }
  .dot { display:inline-block; width:8px; height:8px; border-radius:50%; margin-right:6px; }
  #tree-box { overflow:auto; min-height:120px; }
  #tree svg text { font-size:12px; pointer-events:none; }
  .row { display:flex; gap:8px; align-items:center; flex-wrap:wrap; }
  .grid2 { display:grid; grid-template-columns: 1fr 1fr; gap:14px; }
  #events { font:12px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; max-height:260px; overflow:auto; margin:0; padding:0; list-style:none; }
  #events li { border-bottom:1px solid #f0f2f5; padding:1px 0; }
  #msg { min-height:20px; font-size:13px; } #msg.error { color:var(--failure); } #msg.ok { color:var(--success); }
  .statuses { display:flex; gap:12px; font-size:12px; color:var(--muted); }
</style>
</head>
<body>
<header>
  <h1>ebt inspector</h1>
  <span class="stat">frame <b id="frame">-</b></span>
  <span class="stat">time <b id="time">-</b> s</span>
  <span class="stat">agents <b id="count">-</b></span>
  <span id="run-state" class="pill running">running</span>
  <span class="spacer"></span>
  <span id="read-only" class="pill paused">read-only</span>
  <button id="btn-pause" class="command">Pause</button>
  <button id="btn-resume" class="command">Resume</button>
  <button id="btn-step" class="command">Step one frame</button>
</header>
<main>
  <div class="col">
    <div class="card">
      <h2>Frames</h2>
      <canvas id="chart" width="800" height="340"></canvas>
      <div class="legend"><span><i style="background:#2563eb"></i>frame time (ms)</span>
        <span><i style="background:#f59e0b"></i>events per frame</span><span id="chart-max" class="muted"></span></div>
    </div>
    <div class="card">
      <h2>Agents <span id="agents-count" class="muted"></span></h2>
      <input id="search" type="search" placeholder="Search by handle, tree or running behavior (e.g. Attack)">
      <div class="agents-box">
        <table><thead><tr><th>handle</th><th>tree</th><th>running</th></tr></thead><tbody id="agents"></tbody></table>
      </div>
    </div>
  </div>
  <div class="col">
    <div class="card">
      <div class="row" style="justify-content:space-between">
        <h2 id="agent-title" style="margin:0">No agent selected</h2>
        <div class="row"><span id="agent-info" class="muted"></span><button id="btn-abort" class="danger command" disabled>Abort agent</button></div>
      </div>
      <div class="statuses" style="margin:6px 0">
        <span><i class="dot" style="background:var(--running)"></i>Running</span>
        <span><i class="dot" style="background:var(--success)"></i>Success</span>
        <span><i class="dot" style="background:var(--failure)"></i>Failure</span>
        <span><i class="dot" style="background:var(--aborted)"></i>Aborted</span>
        <span><i class="dot" style="background:var(--idle)"></i>not run</span>
      </div>
      <div id="tree-box"><p class="muted">Select an agent in the list.</p></div>
      <div id="msg"></div>
    </div>
    <div class="grid2">
      <div class="card">
        <h2>Blackboard</h2>
        <table><thead><tr><th>key</th><th>type</th><th>value</th></tr></thead><tbody id="bb"></tbody></table>
        <form id="write-form" class="row command" style="margin-top:10px">
          <select id="write-key"></select>
          <input id="write-value" placeholder="value" size="10">
          <button id="btn-write" type="submit" disabled>Write</button>
        </form>
      </div>
      <div class="card">
        <h2>Recent trace events</h2>
        <ul id="events"></ul>
      </div>
    </div>
  </div>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const colors = { Running:"#f59e0b", Success:"#16a34a", Failure:"#dc2626", Aborted:"#7c3aed", Invalid:"#d5dbe3" };
let selected = null, query = "", keysShown = "", busy = false;

function text(s) { return document.createTextNode(s); }
function cell(row, s, title) { const td = row.insertCell(); td.textContent = s; if (title) td.title = title; return td; }

// The token the page was opened with (/?token=...), sent with every request when there is one.
const token = new URLSearchParams(location.search).get("token") || "";
const tokenHeader = token ? { "X-Ebt-Token": token } : {};
async function getJson(path) {
  const r = await fetch(path, { cache: "no-store", headers: tokenHeader });
  return r.json();
}
async function command(path, fields) {
  const r = await fetch(path, { method: "POST", body: new URLSearchParams(fields || {}),
    headers: { ...tokenHeader, "X-Ebt-Inspector": "1", "Content-Type": "application/x-www-form-urlencoded" } });
  const j = await r.json();
  return { ok: r.ok, json: j };
}
function say(message, ok) { const m = $("msg"); m.textContent = message; m.className = ok ? "ok" : "error"; }

function drawChart(frames) {
  const c = $("chart"), g = c.getContext("2d"), W = c.width, H = c.height, pad = 34;
  g.clearRect(0, 0, W, H);
  g.font = "20px system-ui, sans-serif";
  g.strokeStyle = "#e1e5ea"; g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) { const y = pad / 2 + (H - pad) * i / 4; g.beginPath(); g.moveTo(pad, y); g.lineTo(W - pad, y); g.stroke(); }
  if (!frames.length) { g.fillStyle = "#6b7785"; g.fillText("no frames yet", W / 2 - 60, H / 2); return; }
  const maxMs = Math.max(0.001, ...frames.map(f => f.wall_ms)), maxEv = Math.max(1, ...frames.map(f => f.events));
  const x = (i) => pad + (W - 2 * pad) * (frames.length === 1 ? 1 : i / (frames.length - 1));
  const line = (get, max, color, fill) => {
    g.beginPath();
    frames.forEach((f, i) => { const y = pad / 2 + (H - pad) * (1 - get(f) / max); i ? g.lineTo(x(i), y) : g.moveTo(x(i), y); });
    g.strokeStyle = color; g.lineWidth = 2.5; g.stroke();
    if (fill) { g.lineTo(x(frames.length - 1), H - pad / 2); g.lineTo(x(0), H - pad / 2); g.closePath(); g.fillStyle = fill; g.fill(); }
  };
  line(f => f.wall_ms, maxMs, "#2563eb", "rgba(37,99,235,0.10)");
  line(f => f.events, maxEv, "#f59e0b", null);
  g.fillStyle = "#2563eb"; g.fillText(maxMs.toFixed(3) + " ms", 4, 18);
  g.fillStyle = "#b45309"; const t = maxEv + " ev"; g.fillText(t, W - g.measureText(t).width - 4, 18);
  g.fillStyle = "#6b7785"; g.fillText("frame " + frames[0].frame, pad, H - 4);
  const last = "frame " + frames[frames.length - 1].frame; g.fillText(last, W - pad - g.measureText(last).width, H - 4);
  $("chart-max").textContent = "last " + frames.length + " frames";
}

function drawAgents(list) {
  $("agents-count").textContent = list.pending ? "" : "(" + list.matched + " of " + list.total + ")";
  // Rows are updated in place, not rebuilt, so that a click is not lost to a refresh.
  const body = $("agents");
  list.agents.forEach((a, i) => {
    let row = body.rows[i];
    if (!row) {
      row = body.insertRow();
      for (let c = 0; c < 3; c++) row.insertCell();
      const dot = document.createElement("i"); dot.className = "dot"; row.cells[2].appendChild(dot);
      row.cells[2].appendChild(text(""));
      row.onclick = () => select(row.dataset.handle);
    }
    row.dataset.handle = a.handle;
    row.className = a.handle === selected ? "selected" : "";
    if (row.cells[0].textContent !== a.handle) row.cells[0].textContent = a.handle;
    if (row.cells[1].textContent !== a.tree) row.cells[1].textContent = a.tree;
    row.cells[2].lastChild.nodeValue = a.running === null ? "-" : a.running;
    row.cells[2].title = a.path || "";
    row.cells[2].firstChild.style.background = colors[a.status] || colors.Invalid;
  });
  while (body.rows.length > list.agents.length) body.deleteRow(-1);
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function drawTree(nodes) {
  const kids = nodes.map(() => []);
  nodes.forEach(n => { if (n.parent >= 0) kids[n.parent].push(n.index); });
  const BW = 128, BH = 36, GX = 12, GY = 44, pos = [];
  let nextLeaf = 0;
  const place = (i, depth) => {
    if (!kids[i].length) pos[i] = { x: nextLeaf++, d: depth };
    else { kids[i].forEach(k => place(k, depth + 1)); pos[i] = { x: (pos[kids[i][0]].x + pos[kids[i][kids[i].length - 1]].x) / 2, d: depth }; }
  };
  if (nodes.length) place(0, 0);
  const depth = Math.max(0, ...pos.map(p => p.d));
  const W = Math.max(1, nextLeaf) * (BW + GX) + GX, H = (depth + 1) * (BH + GY) - GY + 16;
  // Scaled down to the card's width (never up): the whole tree stays in view.
  const root = svg("svg", { width: "100%", viewBox: "0 0 " + W + " " + H, style: "max-width:" + W + "px; display:block; margin:auto" });
  const cx = (i) => GX + pos[i].x * (BW + GX) + BW / 2, cy = (i) => 8 + pos[i].d * (BH + GY);
  nodes.forEach(n => { if (n.parent >= 0) {
    const y1 = cy(n.parent) + BH, y2 = cy(n.index), m = (y1 + y2) / 2;
    svg("path", { d: `M${cx(n.parent)},${y1} C${cx(n.parent)},${m} ${cx(n.index)},${m} ${cx(n.index)},${y2}`,
                  fill: "none", stroke: "#c3cad3", "stroke-width": 1.5 }, root);
  }});
  nodes.forEach(n => {
    const g = svg("g", { class: "node", "data-index": n.index, "data-status": n.status }, root);
    const idle = n.status === "Invalid";
    svg("rect", { x: cx(n.index) - BW / 2, y: cy(n.index), width: BW, height: BH, rx: 7,
                  fill: colors[n.status] || colors.Invalid, stroke: n.guard ? "#111827" : "none",
                  "stroke-width": n.guard ? 1.5 : 0, "stroke-dasharray": n.guard ? "4 3" : "" }, g);
    const title = svg("title", {}, g);
    title.textContent = n.index + " " + n.kind + (n.label !== n.kind ? " '" + n.label + "'" : "") +
      (n.guard ? " [guard, abort " + n.guard + "]" : "") + ": " + n.status;
    const fg = idle ? "#1f2933" : "#ffffff";
    // A long label is cut, and one that would still not fit the box is narrowed to its width.
    const label = n.label.length > 20 ? n.label.slice(0, 19) + "\u2026" : n.label;
    const t1 = svg("text", { x: cx(n.index), y: cy(n.index) + 15, "text-anchor": "middle", fill: fg, "font-weight": 600 }, g);
    if (label.length > 14) { t1.setAttribute("textLength", BW - 12); t1.setAttribute("lengthAdjust", "spacingAndGlyphs"); }
    t1.textContent = label;
    const t2 = svg("text", { x: cx(n.index), y: cy(n.index) + 29, "text-anchor": "middle", fill: fg, opacity: 0.85, "font-size": 10 }, g);
    t2.textContent = (n.label !== n.kind ? n.kind + " \u00b7 " : "") + (idle ? "\u2013" : n.status);
  });
  const box = $("tree-box"); box.textContent = ""; box.appendChild(root);
}

function drawAgent(a) {
  if (a.pending) return;
  if (a.gone) {
    $("agent-title").textContent = "Agent " + a.handle + " is gone";
    $("btn-abort").disabled = true; $("btn-write").disabled = true;
    return;
  }
  $("agent-title").textContent = "Agent " + a.handle + " \u00b7 " + a.tree;
  $("agent-info").textContent = a.mode + " mode, " + a.ticks + " ticks";
  $("btn-abort").disabled = false; $("btn-write").disabled = false;
  drawTree(a.nodes);
  const bb = $("bb"); bb.textContent = "";
  for (const v of a.blackboard) {
    const row = bb.insertRow(); row.dataset.key = v.key;
    cell(row, v.key + (v.shared ? " (shared)" : "")).className = "key";
    cell(row, v.type).className = "muted";
    cell(row, v.value).className = "value";
  }
  const keys = a.blackboard.map(v => v.key).join("\n");
  if (keys !== keysShown) {
    keysShown = keys;
    const sel = $("write-key"), keep = sel.value; sel.textContent = "";
    for (const v of a.blackboard) { const o = document.createElement("option"); o.value = o.textContent = v.key; sel.appendChild(o); }
    if (a.blackboard.some(v => v.key === keep)) sel.value = keep;
  }
  const ev = $("events"); ev.textContent = "";
  for (const e of a.events.slice().reverse()) {
    const li = document.createElement("li");
    li.textContent = "frame " + e.frame + "  " + e.label + ": " + e.what + (e.times > 1 ? "  \u00d7" + e.times : "");
    ev.appendChild(li);
  }
}

function select(handle) {
  selected = handle; keysShown = "";
  $("tree-box").innerHTML = "<p class='muted'>loading " + handle + "\u2026</p>";
  $("bb").textContent = ""; $("events").textContent = ""; say("", true);
  for (const row of $("agents").rows) row.className = row.dataset.handle === handle ? "selected" : "";
}

async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const [state, metrics, list] = await Promise.all([getJson("/api/state"), getJson("/api/metrics"),
      getJson("/api/agents?limit=200&q=" + encodeURIComponent(query))]);
    $("frame").textContent = state.frame;
    $("time").textContent = (state.time_us / 1e6).toFixed(2);
    $("count").textContent = state.agents;
    // Read-only: the command buttons are hidden (the server would refuse them anyway).
    document.body.classList.toggle("read-only", state.read_only === true);
    const rs = $("run-state"); rs.textContent = state.paused ? "paused" : "running"; rs.className = "pill " + (state.paused ? "paused" : "running");
    drawChart(metrics.frames);
    drawAgents(list);
    if (selected) drawAgent(await getJson("/api/agent?handle=" + encodeURIComponent(selected)));
  } catch (e) {
    $("run-state").textContent = "disconnected"; $("run-state").className = "pill paused";
  } finally { busy = false; }
}

async function run(path, fields, done) {
  try {
    const r = await command(path, fields);
    if (r.ok) say(done(r.json), true); else say(r.json.error || ("error " + path), false);
  } catch (e) { say("the inspector did not answer", false); }
  refresh();
}
$("btn-pause").onclick = () => run("/api/pause", {}, j => "paused at frame " + j.frame);
$("btn-resume").onclick = () => run("/api/resume", {}, j => "resumed at frame " + j.frame);
$("btn-step").onclick = () => run("/api/step", {}, j => "stepping frame " + j.frame);
$("btn-abort").onclick = () => selected && run("/api/abort", { handle: selected }, j => "aborted agent " + j.handle);
$("write-form").onsubmit = (e) => {
  e.preventDefault();
  if (!selected) return;
  run("/api/write", { handle: selected, key: $("write-key").value, value: $("write-value").value },
      j => "wrote " + j.key + " = " + j.value);
};
$("search").oninput = () => { query = $("search").value; refresh(); };
refresh();
setInterval(refresh, 250);
</script>
</body>
</html>
)EBTPAGE";

}  // namespace

std::string_view Inspector::page() noexcept { return kPage; }

}  // namespace ebt::debug
