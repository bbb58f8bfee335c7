// reverie's dashboard: what every page does (the project switch, the stack's health, live
// numbers) and the overview's chart. Plain script, no build step; data comes from /api.
"use strict";

const POLL_MS = 5000;

// Text as a page shows it: each bidirectional control (Unicode's Bidi_Control) written out,
// "[U+202E]", as the server writes them (schemas/text/fence.py), so that none reorders what
// follows it. graph.js uses it too.
function bidiShown(text) {
  const hex = (c) => c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
  return String(text).replace(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `[U+${hex(c)}]`);
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = bidiShown(text);
  if (cls) node.className = cls;
  return node;
}

async function getJson(url) {
  const answer = await fetch(url, { headers: { accept: "application/json" } });
  if (!answer.ok) throw new Error(`${url}: ${answer.status}`);
  return answer.json();
}

function ago(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  const s = Math.max(0, Date.now() / 1000 - seconds);
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

// The rows `reverie status` prints first: whether the stack runs, and how far behind it is.
function healthRows(state) {
  const names = (list, key) => (list || []).map((x) => x[key]).join(", ") || "none alive";
  return [
    ["stack", state.stack_pid ? `running (pid ${state.stack_pid})` : "not running", !state.stack_pid],
    ["recall service", state.recall_service, false],
    ["redis", state.reachable ? "reachable" : "UNREACHABLE", !state.reachable],
    ["pending events", state.pending, state.pending > 1000],
    ["lag", state.lag, false],
    ["spooled events", state.spooled, state.spooled > 0],
    ["dead letters", state.dead_letters, state.dead_letters > 0],
    ["projections", `snapshot ${ago(state.projections_published_at)}`, false],
    ["dispatchers", names(state.dispatchers, "consumer"), !(state.dispatchers || []).length],
    ["workers", names(state.workers, "name"), !(state.workers || []).length],
    ["failed jobs", state.failed_jobs ?? "unknown (Redis does not answer)", (state.failed_jobs || 0) > 0],
  ];
}

function showHealth(table, state) {
  const body = el("tbody");
  for (const [name, value, bad] of healthRows(state)) {
    const row = el("tr");
    row.append(el("td", name), el("td", value, bad ? "bad" : ""));
    body.append(row);
  }
  table.tBodies[0].replaceWith(body);
}

// Parts of the overview read again from the server when the projector publishes a snapshot.
const LIVE_PARTS = [".numbers", "#kinds", "#tiers", "table.sessions"];

async function refreshParts() {
  const html = await (await fetch(location.href)).text();
  const fresh = new DOMParser().parseFromString(html, "text/html");
  for (const selector of LIVE_PARTS) {
    const now = document.querySelector(selector);
    const then = fresh.querySelector(selector);
    if (now && then) now.replaceWith(document.importNode(then, true));
  }
  drawActivity();
}

function followStack() {
  const table = document.getElementById("health");
  let published = null;
  const ask = async () => {
    try {
      const state = await getJson("/api/status");
      if (table) showHealth(table, state);
      const now = state.projections_published_at;
      if (published !== null && now !== published) {
        if (document.body.dataset.page === "overview") await refreshParts();
        else showNewer();
      }
      published = now;
    } catch (e) {
      if (!table) return;
      const row = el("tr");
      row.append(el("td", `no answer from the dashboard: ${e.message}`, "bad"));
      table.tBodies[0].replaceChildren(row);
    }
  };
  ask();
  setInterval(ask, POLL_MS);
}

function showNewer() {
  if (document.getElementById("newer")) return;
  const note = el("p", "", "said");
  note.id = "newer";
  const link = el("a", "memory changed since this page was read: read it again");
  link.href = location.href;
  note.append(link);
  document.querySelector("main").prepend(note);
}

let chart = null;

async function drawActivity() {
  const box = document.getElementById("activity");
  if (!box || typeof uPlot === "undefined") return;
  const data = await getJson(box.dataset.source);
  if (chart) chart.destroy();
  box.replaceChildren();
  if (!data.day.length) {
    box.append(el("p", "no activity yet", "hint"));
    return;
  }
  chart = new uPlot(
    {
      width: Math.max(box.clientWidth, 300),
      height: 220,
      scales: { tools: {} },
      series: [
        {},
        { label: "prompts", stroke: "#2f5fb3", width: 2 },
        { label: "tool uses", stroke: "#8a8f99", width: 1, scale: "tools" },
        { label: "facts learned", stroke: "#1f7a4d", width: 2 },
      ],
      axes: [{}, { label: "prompts, facts" }, { scale: "tools", side: 1, label: "tool uses", grid: { show: false } }],
    },
    [data.day, data.prompts, data.tools, data.facts],
    box,
  );
}

async function drawStrength() {
  const box = document.getElementById("strength");
  if (!box || typeof uPlot === "undefined") return;
  const about = document.getElementById("strength-of");
  let data;
  try {
    data = await getJson(box.dataset.source);
  } catch (e) {
    about.textContent = "no memory has that id";
    box.dataset.ready = "none";
    return;
  }
  about.textContent = bidiShown(`${data.kind}: ${data.text.slice(0, 200)} (recalled or used ${data.uses.length} times)`);
  new uPlot(
    {
      width: Math.max(box.clientWidth, 300),
      height: 220,
      scales: { r: { range: [0, 1] } },
      series: [
        {},
        { label: "activation", stroke: "#2f5fb3", width: 2 },
        { label: "retrievability", stroke: "#d9822b", width: 2, scale: "r" },
      ],
      axes: [{}, { label: "activation" }, { scale: "r", side: 1, label: "retrievability", grid: { show: false } }],
    },
    [data.at, data.activation, data.retrievability],
    box,
  );
  box.dataset.ready = "yes";
}

document.addEventListener("DOMContentLoaded", () => {
  const scope = document.getElementById("project");
  if (scope) scope.addEventListener("change", () => scope.form.submit());
  followStack();
  drawActivity();
  drawStrength();
});
