// The knowledge graph: entities as nodes (size by degree, colour by type), facts as edges
// (colour by category, opacity by confidence, grey when they no longer hold now), drawn by
// sigma.js (WebGL) on a graphology graph. The time slider asks for the graph as believed then.
"use strict";

const SMALL_GRAPH = 100; // entities
const PALETTE = ["#2f5fb3", "#d9822b", "#1f7a4d", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#b7950b", "#5d6d7e", "#e84393"];
const colours = new Map();
function colourOf(key) {
  if (!colours.has(key)) colours.set(key, PALETTE[colours.size % PALETTE.length]);
  return colours.get(key);
}
function rgba(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha.toFixed(2)})`;
}
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = bidiShown(text); // app.js's
  if (cls) node.className = cls;
  return node;
}
function day(value) {
  return value ? String(value).slice(0, 16).replace("T", " ") : "";
}

const box = document.getElementById("graph");
const panel = document.getElementById("panel");
const slider = document.getElementById("when");
const shown = document.getElementById("when-shown");
const counts = document.getElementById("counts");
const known = document.getElementById("known");
const graph = new graphology.Graph({ multi: true, type: "directed" });
let renderer = null;
let at = null; // seconds since the epoch; null: now

function scope() {
  return document.body.dataset.project || null;
}

function withQuery(base, params) {
  const url = new URL(base, location.origin);
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) url.searchParams.set(k, v);
  return url.pathname + url.search;
}

async function getJson(url) {
  const answer = await fetch(url, { headers: { accept: "application/json" } });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || answer.status);
  return body;
}

function nodeAttributes(n, x, y) {
  return {
    label: bidiShown(n.name || n.id), x, y, type: "circle", kind: n.type || "entity",
    size: 3 + 2.2 * Math.sqrt(n.degree || 1), color: colourOf(n.type || "entity"),
  };
}

function edgeAttributes(e) {
  const holds = e.now === "holds";
  const base = holds ? colourOf(`category:${e.category || e.relation}`) : "#9aa0aa";
  return {
    size: holds ? 1.5 : 1, color: rgba(base, 0.25 + 0.75 * (e.confidence ?? 0.5)),
    label: e.relation, relation: e.relation, now: e.now, description: e.description,
  };
}

// Put what the server sent into the graph: nodes keep where they were; new ones go where the
// server's layout puts them, around `anchor` when growing around one.
function merge(data, replaceEdges, anchor) {
  const origin = anchor && graph.hasNode(anchor) ? graph.getNodeAttributes(anchor) : null;
  const sent = new Map(data.nodes.map((n) => [n.id, n]));
  const centre = origin && sent.get(anchor);
  for (const n of data.nodes) {
    if (graph.hasNode(n.id)) {
      graph.mergeNodeAttributes(n.id, { label: bidiShown(n.name || n.id) });
      continue;
    }
    const x = centre ? origin.x + (n.x - centre.x) * 0.35 : n.x;
    const y = centre ? origin.y + (n.y - centre.y) * 0.35 : n.y;
    graph.addNode(n.id, nodeAttributes(n, x, y));
  }
  if (replaceEdges) graph.clearEdges();
  for (const e of data.edges) {
    if (!graph.hasEdge(e.fact_id) && graph.hasNode(e.source) && graph.hasNode(e.target)) {
      graph.addEdgeWithKey(e.fact_id, e.source, e.target, edgeAttributes(e));
    }
  }
  if (replaceEdges) graph.forEachNode((id) => { if (!graph.degree(id)) graph.dropNode(id); });
  graph.forEachNode((id) => graph.setNodeAttribute(id, "size", 3 + 2.2 * Math.sqrt(graph.degree(id) || 1)));
  // a small graph names every entity; a large one its most connected, until zoomed in
  renderer.setSetting("labelRenderedSizeThreshold", graph.order <= SMALL_GRAPH ? 0 : 7);
  const gone = graph.filterEdges((_, a) => a.now !== "holds").length;
  counts.textContent = `${graph.order} entities, ${graph.size} facts${gone ? `, ${gone} of them no longer held now` : ""}`;
  legend();
}

function legend() {
  const list = document.getElementById("legend");
  list.replaceChildren();
  const kinds = new Set();
  graph.forEachNode((_, a) => kinds.add(a.kind));
  for (const kind of [...kinds].sort()) {
    const item = el("li");
    const swatch = el("span", "", "swatch");
    swatch.style.background = colourOf(kind);
    item.append(swatch, kind);
    list.append(item);
  }
}

async function load(replace) {
  const data = await getJson(withQuery(box.dataset.source, { at, known: known.value }));
  if (replace) {
    const keep = new Map();
    graph.forEachNode((id, a) => keep.set(id, [a.x, a.y]));
    graph.clear();
    for (const n of data.nodes) {
      const [x, y] = keep.get(n.id) || [n.x, n.y];
      graph.addNode(n.id, nodeAttributes(n, x, y));
    }
  }
  merge(data, replace, null);
}

function factRow(f) {
  const triple = `${f.source} ${f.relation.replaceAll("_", " ")} ${f.target || ""}`;
  const item = el("li", f.description || triple, f.holds ? "" : "gone");
  item.title = bidiShown(triple);
  const link = el("a", " why");
  link.href = "#";
  link.addEventListener("click", (event) => { event.preventDefault(); showWhy(f.fact_id); });
  item.append(link);
  return item;
}

async function showEntity(id) {
  panel.replaceChildren(el("p", "reading…", "hint"));
  try {
    const e = await getJson(withQuery(`/api/entities/${encodeURIComponent(id)}`, { project: scope() }));
    const grow = el("button", "grow around it");
    grow.type = "button";
    grow.addEventListener("click", () => growAround(id));
    const facts = el("ul");
    for (const f of e.facts) facts.append(factRow(f));
    const timeline = el("ul");
    for (const t of e.timeline) timeline.append(el("li", `${day(t.happened_at)} ${t.what}${t.detail ? ": " + t.detail : ""}`));
    panel.replaceChildren(
      el("h3", e.name), el("p", `${e.type}, seen ${e.observations ?? 0} times, first ${day(e.first_seen)}`, "hint"), grow,
      el("h4", `Facts (${e.facts.length}; struck through: no longer held)`), facts,
      el("h4", "Timeline"), timeline,
    );
  } catch (err) {
    panel.replaceChildren(el("p", `cannot read it: ${err.message}`, "error"));
  }
}

async function showWhy(factId) {
  panel.replaceChildren(el("p", "reading where it came from…", "hint"));
  const answer = await fetch(withQuery(`/why/${encodeURIComponent(factId)}`, { project: scope(), part: 1 }));
  if (!answer.ok) {
    panel.replaceChildren(el("p", `cannot tell: ${answer.status}`, "error"));
    return;
  }
  const part = new DOMParser().parseFromString(await answer.text(), "text/html").getElementById("why");
  const forms = [forgetForm(factId)];
  if (factId.startsWith("fact:")) forms.unshift(correctForm(factId, part.querySelector("h3").textContent));
  panel.replaceChildren(document.importNode(part, true), ...forms);
}

// A form that posts to `path` (back here after), with `hidden` fields, `inputs` and a button.
function postForm(path, hidden, inputs, label, cls) {
  const form = el("form", "", `action ${cls}`);
  form.method = "post";
  form.action = withQuery(path, { project: scope(), back: location.pathname + location.search });
  for (const [name, value] of Object.entries(hidden)) {
    const field = el("input");
    field.type = "hidden"; field.name = name; field.value = value;
    form.append(field);
  }
  const go = el("button", label);
  go.type = "submit";
  form.append(...inputs, go);
  return form;
}

function forgetForm(memoryId) {
  const reason = el("input");
  reason.name = "reason"; reason.placeholder = "why forget it";
  return postForm("/memories/forget", { memory_id: memoryId }, [reason], "forget this fact", "forget");
}

function correctForm(factId, said) {
  const text = el("input");
  text.name = "text"; text.value = said || ""; text.required = true; text.size = 40;
  text.setAttribute("aria-label", "what holds instead");
  return postForm("/facts/correct", { fact_id: factId }, [text], "correct it", "correct");
}

async function growAround(id) {
  const data = await getJson(withQuery(box.dataset.source, { at, known: known.value, around: id }));
  merge(data, false, id);
}

async function find(text) {
  const found = await getJson(withQuery(box.dataset.search, { q: text }));
  const list = el("ul");
  for (const e of found) {
    const item = el("li");
    const link = el("a", `${e.name} (${e.type})`);
    link.href = "#";
    link.dataset.entity = e.id;
    link.addEventListener("click", async (event) => {
      event.preventDefault();
      if (!graph.hasNode(e.id)) {
        const data = await getJson(withQuery(box.dataset.source, { at, known: known.value, around: e.id }));
        merge(data, false, null);
      }
      if (graph.hasNode(e.id)) {
        const where = renderer.getNodeDisplayData(e.id);
        if (where) renderer.getCamera().animate({ x: where.x, y: where.y, ratio: 0.4 }, { duration: 400 });
      }
      showEntity(e.id);
    });
    item.append(link);
    list.append(item);
  }
  panel.replaceChildren(el("h3", `Entities named like “${text}”`), found.length ? list : el("p", "none", "hint"));
}

function showWhen() {
  const latest = Number(slider.max);
  at = Number(slider.value) >= latest ? null : Number(slider.value);
  shown.value = at === null ? "now" : new Date(at * 1000).toISOString().slice(0, 16).replace("T", " ");
}

document.addEventListener("DOMContentLoaded", async () => {
  renderer = new Sigma(graph, box, { enableEdgeEvents: true, labelRenderedSizeThreshold: 7, defaultEdgeType: "arrow" });
  renderer.on("clickNode", ({ node }) => showEntity(node));
  renderer.on("clickEdge", ({ edge }) => showWhy(edge));
  slider.addEventListener("input", showWhen);
  known.addEventListener("change", () => { if (at !== null) load(true); });
  slider.addEventListener("change", () => { showWhen(); load(true); });
  document.getElementById("now").addEventListener("click", () => { slider.value = slider.max; showWhen(); load(true); });
  document.getElementById("find").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = document.getElementById("q").value.trim();
    if (text) find(text);
  });
  await load(true);
  box.dataset.ready = "yes";
});
