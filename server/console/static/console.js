/* runbox console: the operator's page (docs/console.md). Plain JS, no framework. Everything it
 * shows comes from runboxd's REST API, called with the key in this tab's sessionStorage as
 * Authorization: Bearer. Server text is only ever set with textContent, never parsed as HTML. */
"use strict";

const $ = (id) => document.getElementById(id);
const KEY = "runbox.key";
let currentSession = null;
let auditNext = null;
let chartTimer = null;
const chart = { sessions: [], execs: [], latency: [], last: null, count: 0 };
const SVG = "http://www.w3.org/2000/svg";

/* An element with text (never HTML) and optional attributes/children. */
function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function showError(msg) {
  const p = $("error");
  p.textContent = msg || "";
  p.hidden = !msg;
}

/* Calls the REST API; resolves to the Response, throws an Error with the server's message. */
async function api(method, path, body, raw) {
  const headers = { Authorization: "Bearer " + sessionStorage.getItem(KEY) };
  let payload = body;
  if (body !== undefined && !(body instanceof FormData)) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const r = await fetch(path, { method, headers, body: payload, credentials: "omit", cache: "no-store" });
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try {
      const doc = await r.json();
      if (doc && doc.error) msg = r.status + " " + doc.error.code + ": " + doc.error.message;
    } catch (e) { /* not JSON */ }
    const err = new Error(msg);
    err.status = r.status;
    throw err;
  }
  return raw ? r : r.json();
}

/* Runs an async action, showing its error (if any) in the page's alert. */
async function guard(fn) {
  try {
    showError("");
    await fn();
  } catch (e) {
    showError(e.message);
  }
}

function age(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 120) return s + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  return Math.round(s / 3600) + " h";
}

/* A time as HH:MM:SS (local), on one line. */
function clock(t) {
  const d = new Date(t);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/* An ISO timestamp as "YYYY-MM-DD HH:MM:SS" (local time), the full value in its title. */
function stamp(iso, tag) {
  const t = Date.parse(iso);
  const d = new Date(t);
  const text = isNaN(t) ? String(iso || "") : d.getFullYear() + "-" + String(d.getMonth() + 1).padStart(2, "0") + "-" +
    String(d.getDate()).padStart(2, "0") + " " + clock(t);
  return el(tag || "span", text, { class: "time", title: String(iso || "") });
}

/* ---- addresses: every page has one in the URL's fragment (docs/console.md) ----
 *   #/sessions  #/sessions/ID  #/engines  #/audit?key=&session=&kind=  #/metrics
 * The static files need no route of the server; Back, Forward, reload and bookmarks work. */

const VIEWS = ["signin", "sessions", "session", "engines", "audit", "charts"];
const PAGES = { sessions: "sessions", engines: "engines", audit: "audit", metrics: "charts" };

function sessionHref(id) {
  return "#/sessions/" + encodeURIComponent(id);
}

/* The page the fragment names: { view, id, query }, or null for an unknown address. */
function parseRoute() {
  const h = location.hash.replace(/^#/, "");
  const q = h.indexOf("?");
  const path = q < 0 ? h : h.slice(0, q);
  const query = new URLSearchParams(q < 0 ? "" : h.slice(q + 1));
  const parts = path.split("/").filter(Boolean);
  if (parts.length === 0) return { view: "sessions", query };
  if (parts[0] === "sessions" && parts.length === 2) {
    try { return { view: "session", id: decodeURIComponent(parts[1]), query }; } catch (e) { return null; }
  }
  if (parts.length === 1 && Object.prototype.hasOwnProperty.call(PAGES, parts[0])) return { view: PAGES[parts[0]], query };
  return null;
}

/* Shows the page of the current address (the sign-in form while this tab has no key). */
function render() {
  if (!sessionStorage.getItem(KEY)) { show("signin"); return; }
  const r = parseRoute();
  if (r === null || location.hash === "" || location.hash === "#") { location.replace("#/sessions"); return; }
  if (r.view === "session") openSession(r.id);
  else if (r.view === "audit") { fillAuditForm(r.query); show("audit"); }
  else show(r.view);
}

/* Goes to an address; the same address again reloads its page. */
function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function show(view) {
  for (const v of VIEWS) $(v).hidden = v !== view;
  const current = view === "session" ? "sessions" : view;
  for (const b of document.querySelectorAll("nav [data-view]")) {
    if (b.dataset.view === current) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  $("nav").hidden = view === "signin";
  if (view !== "session") currentSession = null;
  if (chartTimer && view !== "charts") { clearInterval(chartTimer); chartTimer = null; }
  showError("");
  document.title = (view === "signin" ? "Sign in" : view === "session" ? "Session" :
    view === "charts" ? "Charts" : view[0].toUpperCase() + view.slice(1)) + " · runbox console";
  if (view === "sessions") guard(loadSessions);
  if (view === "engines") guard(loadEngines);
  if (view === "audit") guard(() => loadAudit(false));
  if (view === "charts") startCharts();
}

/* ---- small line plots on <canvas> ---- */

function plot(canvas, series, colors) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  series.forEach((data, i) => {
    if (data.length === 0) return;
    const max = Math.max(1e-9, ...data) * 1.25; /* headroom: a constant series is not drawn on the border */
    ctx.strokeStyle = colors[i];
    ctx.lineWidth = 2;
    ctx.beginPath();
    data.forEach((v, j) => {
      const x = data.length === 1 ? w / 2 : (j * (w - 4)) / (data.length - 1) + 2;
      const y = h - 3 - (v / max) * (h - 6);
      if (j === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  });
}

/* ---- sessions ---- */

async function loadSessions() {
  const doc = await api("GET", "/sessions");
  const rows = $("sessions-rows");
  rows.replaceChildren();
  const list = doc.sessions || [];
  if (list.length === 0) {
    const tr = el("tr");
    tr.append(el("td", "No live session. Sessions made through any API (REST, MCP, E2B, Jupyter...) are listed here; " +
      "an ended one stays readable at its own address (#/sessions/ID).", { colspan: "8", class: "empty" }));
    rows.append(tr);
  }
  for (const s of list) {
    const tr = el("tr");
    const open = el("a", s.session_id, { href: sessionHref(s.session_id), class: "id" });
    const first = el("td");
    first.append(open);
    const engine = s.container_id && s.container_id.includes("@") ? s.container_id.split("@")[0] : "";
    const iso = (s.execution_options && s.execution_options.isolation) || "";
    tr.append(first, el("td", s.owner || ""), el("td", s.language), el("td", s.status), el("td", age(s.created_at), { title: s.created_at }),
      el("td", engine), el("td", iso));
    const spark = el("canvas", null, { width: "120", height: "28", role: "img", "aria-label": "CPU (blue) and memory (green)" });
    const td = el("td");
    td.append(spark);
    tr.append(td);
    rows.append(tr);
    api("GET", "/sessions/" + encodeURIComponent(s.session_id) + "/metrics").then((m) => {
      const cpu = m.samples.map((x) => x.cpu_pct), mem = m.samples.map((x) => x.mem_bytes);
      plot(spark, [cpu, mem], ["#1d4f91", "#1f7a1f"]);
      const last = m.samples[m.samples.length - 1];
      if (last) spark.title = last.cpu_pct.toFixed(1) + "% CPU, " + (last.mem_bytes / 1048576).toFixed(1) + " MiB";
    }).catch(() => { spark.title = "no samples"; });
  }
}

/* One execution (a result document or an audit event) as a block of text and images. */
function execBlock(x) {
  const d = el("div", null, { class: "exec" });
  const when = x.created_at || x.at || "";
  const head = el("div", null, { class: "exec-head" });
  if (when) head.append(stamp(when));
  head.append(" ", el("span", [x.status, x.request_id || ""].filter(Boolean).join(" · ")));
  d.append(head);
  if (x.code) d.append(el("pre", x.code, { class: "code" }));
  if (x.stdout) d.append(el("pre", x.stdout, { class: "stdout" }));
  if (x.stderr) d.append(el("pre", x.stderr, { class: "stderr" }));
  if (x.result !== undefined && x.result !== null && x.result !== "") {
    /* the arrow in its own column: a multi-line result keeps its lines aligned */
    const r = el("div", null, { class: "result" });
    r.append(el("span", "→", { class: "arrow", "aria-hidden": "true" }), el("pre", x.result));
    d.append(r);
  }
  if (x.error) {
    const e = typeof x.error === "string" ? x.error : (x.error.name || "") + ": " + (x.error.value || x.error.message || "");
    d.append(el("pre", e, { class: "stderr" }));
  }
  for (const o of x.outputs || []) {
    if (o.type === "display" && o.mime === "image/png" && typeof o.data === "string" && /^[A-Za-z0-9+/=\s]+$/.test(o.data))
      d.append(el("img", null, { src: "data:image/png;base64," + o.data.replace(/\s/g, ""), alt: "plot" }));
  }
  return d;
}

const isOver = (s) => s.status === "ended" || s.status === "dead";

/* The session's record as a list of facts; End session and the cell are offered while it is live. */
async function loadSessionInfo() {
  const id = currentSession;
  const s = await api("GET", "/sessions/" + encodeURIComponent(id));
  if (currentSession !== id) return s;
  const dl = $("session-info");
  dl.replaceChildren();
  const fact = (name, key, value) => {
    if (value === undefined || value === null || value === "") return;
    const dd = el("dd", null, { "data-fact": key });
    dd.append(value instanceof Node ? value : String(value));
    const pair = el("div");
    pair.append(el("dt", name), dd);
    dl.append(pair);
  };
  fact("Status", "status", s.status);
  fact("Language", "language", s.language);
  fact("Key", "owner", s.owner);
  fact("Executions", "executions", s.executions);
  fact("Created", "created", stamp(s.created_at));
  if (s.ended_at) {
    const when = el("span");
    when.append(stamp(s.ended_at));
    if (s.end_reason) when.append(" (" + s.end_reason + ")");
    fact("Ended", "ended", when);
  }
  const engine = s.container_id && s.container_id.includes("@") ? s.container_id.split("@")[0] : "";
  fact("Engine", "engine", engine);
  fact("Isolation", "isolation", s.execution_options && s.execution_options.isolation);
  /* an ended session runs nothing and takes no file: only its record is shown */
  for (const x of ["end-session", "cell-box", "upload-form"]) $(x).hidden = isOver(s);
  $("session-ended").hidden = !isOver(s);
  return s;
}

async function openSession(id) {
  currentSession = id;
  show("session");
  document.title = "Session " + id + " · runbox console";
  $("session-id").textContent = id;
  $("session-info").replaceChildren();
  $("cell-out").replaceChildren();
  $("files").replaceChildren();
  $("history").replaceChildren(el("p", "Loading…", { class: "note" }));
  $("history-count").textContent = "";
  for (const x of ["end-session", "cell-box", "upload-form", "session-ended"]) $(x).hidden = true;
  let s = null;
  await guard(async () => { s = await loadSessionInfo(); });
  if (currentSession !== id) return;
  if (s && isOver(s)) $("files").replaceChildren(el("li", "No file: the session has ended.", { class: "empty" }));
  else if (s) guard(loadFiles);
  guard(loadHistory);
}

/* DELETE /sessions/{id} once confirmed (admins: any session; users: their own; a viewer gets the
 * server's 403, shown by guard). The page then shows the session as ended. */
async function endSession() {
  const id = currentSession;
  if (!confirm("End session " + id + "? Its running code is interrupted and its sandbox removed; " +
    "its history stays readable.")) return;
  await api("DELETE", "/sessions/" + encodeURIComponent(id));
  if (currentSession !== id) return;
  await loadSessionInfo();
  $("files").replaceChildren(el("li", "No file: the session has ended.", { class: "empty" }));
}

async function loadHistory() {
  const box = $("history");
  const sid = currentSession;
  const id = encodeURIComponent(sid);
  /* The code comes from the audit trail (admin and viewer keys), the results from the session's
   * executions; a runboxd without that route has the audit trail's excerpts only. */
  let audit = [], list = null;
  try {
    audit = (await api("GET", "/audit?kind=execution&limit=500&session=" + id)).events;
  } catch (e) {
    if (e.status !== 403) throw e;
  }
  try {
    list = (await api("GET", "/sessions/" + id + "/executions")).executions;
  } catch (e) {
    if (e.status !== 404 && e.status !== 405) throw e;
  }
  const code = new Map(audit.map((ev) => [ev.request_id, ev.code]));
  list = list ? list.map((x) => Object.assign({ code: code.get(x.request_id) }, x)) : audit;
  if (currentSession !== sid) return;
  box.replaceChildren();
  $("history-count").textContent = "(" + list.length + ")";
  if (list.length === 0) box.append(el("p", "No execution yet: nothing has run in this session.", { class: "empty" }));
  for (const x of list.slice().reverse()) box.append(execBlock(x));
}

async function loadFiles() {
  const ul = $("files");
  const sid = currentSession;
  const doc = await api("GET", "/sessions/" + encodeURIComponent(sid) + "/files");
  if (currentSession !== sid) return;
  ul.replaceChildren();
  for (const f of doc.files) {
    const li = el("li");
    li.append(el("span", f.path + (f.type === "directory" ? "/" : "") + (f.size !== undefined ? " (" + f.size + " B)" : "")));
    if (f.type !== "directory") {
      const b = el("button", "Download", { type: "button", "aria-label": "Download " + f.path });
      b.addEventListener("click", () => guard(() => download(f.path)));
      li.append(" ", b);
    }
    ul.append(li);
  }
  if (doc.files.length === 0) ul.append(el("li", "No file in the workspace yet.", { class: "empty" }));
}

async function download(path) {
  const r = await api("GET", "/sessions/" + encodeURIComponent(currentSession) + "/files/download?path=" +
    encodeURIComponent(path), undefined, true);
  const url = URL.createObjectURL(await r.blob());
  const a = el("a", null, { href: url, download: path.split("/").pop() });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function upload(ev) {
  ev.preventDefault();
  const file = $("upload").files[0];
  if (!file) throw new Error("choose a file to upload first");
  const form = new FormData();
  form.append("file", file, file.name);
  await api("POST", "/sessions/" + encodeURIComponent(currentSession) + "/files", form);
  $("upload").value = "";
  await loadFiles();
}

async function runCell(ev) {
  ev.preventDefault();
  const out = $("cell-out");
  out.replaceChildren(el("p", "Running…"));
  try {
    const x = await api("POST", "/execute", { session_id: currentSession, code: $("cell").value, wait: true });
    out.replaceChildren(execBlock(x));
    /* the run is in the session's record now: its count, its files and its history */
    guard(loadSessionInfo);
    guard(loadFiles);
    guard(loadHistory);
  } catch (e) {
    out.replaceChildren(el("p", e.message, { class: "error", role: "alert" }));
  }
}

/* ---- engines ---- */

async function loadEngines() {
  const h = await api("GET", "/health");
  const rows = $("engines-rows");
  rows.replaceChildren();
  const list = (h.docker && h.docker.engines) || [];
  $("engines-table").hidden = list.length === 0;
  $("engines-note").classList.toggle("empty", list.length === 0);
  $("engines-note").textContent = list.length ? "" :
    "runboxd uses one Docker engine, the one of its --docker-socket (" +
    (h.docker && h.docker.reachable ? "reachable" + (h.docker.api_version ? ", API " + h.docker.api_version : "")
      : "not reachable" + (h.docker && h.docker.error ? ": " + h.docker.error : "")) +
    "), so there is nothing to drain. Started with several --engine NAME=URL, it lists each one here with its " +
    "sandboxes, capacity and a Drain button.";
  for (const g of list) {
    const tr = el("tr");
    const b = el("button", g.draining ? "Undrain" : "Drain", { type: "button", "aria-label": (g.draining ? "Undrain " : "Drain ") + g.name });
    b.addEventListener("click", () => guard(async () => {
      await api(g.draining ? "DELETE" : "POST", "/engines/" + encodeURIComponent(g.name) + "/drain");
      await loadEngines();
    }));
    const act = el("td");
    act.append(b);
    tr.append(el("td", g.name), el("td", g.url), el("td", g.reachable ? "yes" : "no"), el("td", g.sandboxes), el("td", g.capacity),
      el("td", g.draining ? "draining" : g.placing ? "placing" : "not placing"), act);
    rows.append(tr);
  }
}

/* ---- audit trail ---- */

const AUDIT_FILTERS = [["key", "audit-key"], ["session", "audit-session"], ["kind", "audit-kind"]];

/* The audit form's filters from the address (#/audit?key=&session=&kind=). */
function fillAuditForm(query) {
  for (const [name, id] of AUDIT_FILTERS) $(id).value = query.get(name) || "";
}

/* The address of the audit trail with the form's filters. */
function auditHref() {
  const q = new URLSearchParams();
  for (const [name, id] of AUDIT_FILTERS) if ($(id).value) q.set(name, $(id).value);
  const s = q.toString();
  return "#/audit" + (s ? "?" + s : "");
}

async function loadAudit(more) {
  const q = new URLSearchParams();
  for (const [name, id] of AUDIT_FILTERS)
    if ($(id).value) q.set(name, $(id).value);
  if (more && auditNext !== null) q.set("after", auditNext);
  const doc = await api("GET", "/audit?" + q.toString());
  const rows = $("audit-rows");
  if (!more) rows.replaceChildren();
  if (!more && doc.events.length === 0) {
    const tr = el("tr");
    tr.append(el("td", q.toString() ? "No event matches these filters." : "No event yet: the audit trail is empty.",
      { colspan: "5", class: "empty" }));
    rows.append(tr);
  }
  for (const ev of doc.events) {
    const tr = el("tr");
    const session = el("td");
    if (ev.session) session.append(el("a", ev.session, { href: sessionHref(ev.session), class: "id" }));
    const detail = el("td");
    if (ev.code) detail.append(el("pre", ev.code, { class: "code" }));
    else detail.append(String(ev.path || ev.host || ev.reason || ev.status || ""));
    if (ev.code && ev.status) detail.append(el("div", ev.status, { class: "note" }));
    tr.append(stamp(ev.at, "td"), el("td", ev.key), session, el("td", ev.kind), detail);
    rows.append(tr);
  }
  auditNext = doc.next;
  $("audit-next").hidden = doc.next === null || doc.next === undefined;
}

/* ---- charts of /metrics ---- */

/* The sum of each metric's samples (all label sets) in a Prometheus text exposition. */
function parseMetrics(text) {
  const m = {};
  for (const line of text.split("\n")) {
    if (line === "" || line[0] === "#") continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (match) m[match[1]] = (m[match[1]] || 0) + Number(match[3]);
  }
  return m;
}

async function sampleMetrics() {
  const r = await api("GET", "/metrics", undefined, true);
  const m = parseMetrics(await r.text());
  const now = { t: Date.now(), done: m.runbox_executions_finished_total || 0,
    sum: m.runbox_execution_duration_seconds_sum || 0, count: m.runbox_execution_duration_seconds_count || 0 };
  const push = (a, v) => { a.push({ t: now.t, v }); if (a.length > 120) a.shift(); };
  push(chart.sessions, m.runbox_sessions_live || 0);
  if (chart.last) {
    const dt = (now.t - chart.last.t) / 1000, dn = now.count - chart.last.count;
    push(chart.execs, Math.max(0, now.done - chart.last.done) / dt);
    push(chart.latency, dn > 0 ? (now.sum - chart.last.sum) / dn : null); /* a gap: nothing finished */
  }
  chart.last = now;
  chart.count = now.count;
  const last = (a) => (a.length ? a[a.length - 1].v : undefined);
  $("now-sessions").textContent = String(m.runbox_sessions_live || 0);
  $("now-execs").textContent = last(chart.execs) === undefined ? "measuring…" : fmtNum(last(chart.execs)) + " /s";
  const lat = last(chart.latency);
  $("now-latency").textContent = now.count === 0 ? "no executions yet" :
    lat === undefined ? "measuring…" : lat === null ? "none finished in the last 3 s" : fmtSeconds(lat);
  lineChart($("chart-sessions"), chart.sessions, { color: "#1d4f91", unit: "sessions", integer: true });
  lineChart($("chart-execs"), chart.execs, { color: "#1f7a1f", unit: "executions/s" });
  lineChart($("chart-latency"), chart.latency, { color: "#8b4500", unit: "seconds",
    empty: now.count === 0 ? "no executions yet" : "no execution finished while this page was open" });
}

function fmtNum(v) {
  if (v === 0) return "0";
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 1) return String(Number(v.toFixed(2)));
  return String(Number(v.toPrecision(2)));
}

function fmtSeconds(v) {
  return v < 1 ? Math.round(v * 1000) + " ms" : fmtNum(v) + " s";
}

/* The top of a y axis from 0 that holds max with some headroom: 1, 2 or 5 times a power of ten. */
function niceTop(max, integer) {
  if (!(max > 0)) return 1;
  const want = max * 1.2;
  const p = Math.pow(10, Math.floor(Math.log10(want)));
  for (const f of [1, 2, 5, 10]) if (f * p >= want) return integer ? Math.max(1, Math.ceil(f * p)) : f * p;
  return 10 * p;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

/* A line chart of points {t (ms), v (number or null: a gap)} in an <svg viewBox="0 0 560 200">:
 * a y axis from 0 with three labelled ticks and its unit, an x axis of clock times. */
function lineChart(svg, points, opts) {
  const W = 560, H = 200, L = 58, R = 14, T = 22, B = 30;
  const pw = W - L - R, ph = H - T - B;
  svg.replaceChildren();
  const vals = points.filter((p) => p.v !== null).map((p) => p.v);
  const top = niceTop(Math.max(0, ...vals), opts.integer);
  const y = (v) => T + ph - (v / top) * ph;
  svg.append(svgEl("text", { x: 4, y: 13, class: "unit" }, opts.unit));
  for (const f of [0, 0.5, 1]) {
    const v = top * f;
    if (opts.integer && v !== Math.round(v)) continue;
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: f === 0 ? "axis" : "grid" }));
    svg.append(svgEl("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", class: "tick" }, fmtNum(v)));
  }
  svg.append(svgEl("line", { x1: L, x2: L, y1: T, y2: T + ph, class: "axis" }));
  if (points.length === 0 || vals.length === 0) {
    svg.append(svgEl("text", { x: L + pw / 2, y: T + ph / 2, "text-anchor": "middle", class: "empty" },
      points.length === 0 && !opts.empty ? "measuring…" : opts.empty || "no data yet"));
    if (points.length === 0) return;
  }
  const t0 = points[0].t, t1 = points[points.length - 1].t;
  const x = (t) => (t1 === t0 ? L + pw / 2 : L + ((t - t0) / (t1 - t0)) * pw);
  const ticks = t1 === t0 ? [t0] : [t0, (t0 + t1) / 2, t1];
  ticks.forEach((t, i) => {
    const anchor = ticks.length === 1 ? "middle" : i === 0 ? "start" : i === ticks.length - 1 ? "end" : "middle";
    svg.append(svgEl("line", { x1: x(t), x2: x(t), y1: T + ph, y2: T + ph + 4, class: "axis" }));
    svg.append(svgEl("text", { x: x(t), y: H - 8, "text-anchor": anchor, class: "tick time" }, clock(t)));
  });
  let d = "";
  let pen = false;
  for (const p of points) {
    if (p.v === null) { pen = false; continue; }
    d += (pen ? "L" : "M") + x(p.t).toFixed(1) + " " + y(p.v).toFixed(1) + " ";
    pen = true;
  }
  if (d) svg.append(svgEl("path", { d, fill: "none", stroke: opts.color, "stroke-width": 2, class: "series" }));
  /* a lone point (or a point between gaps) is a dot */
  points.forEach((p, i) => {
    const alone = p.v !== null && (i === 0 || points[i - 1].v === null) && (i === points.length - 1 || points[i + 1].v === null);
    if (alone) svg.append(svgEl("circle", { cx: x(p.t), cy: y(p.v), r: 3, fill: opts.color }));
  });
}

function startCharts() {
  guard(sampleMetrics);
  if (!chartTimer) chartTimer = setInterval(() => guard(sampleMetrics), 3000);
}

/* ---- sign in ---- */

async function signIn(ev) {
  ev.preventDefault();
  sessionStorage.setItem(KEY, $("key").value.trim());
  $("key").value = "";
  try {
    await api("GET", "/sessions");
    render();
  } catch (e) {
    sessionStorage.removeItem(KEY);
    showError(e.message);
  }
}

function signOut() {
  sessionStorage.removeItem(KEY);
  currentSession = null;
  show("signin");
}

document.addEventListener("DOMContentLoaded", () => {
  $("signin-form").addEventListener("submit", signIn);
  $("signout").addEventListener("click", signOut);
  /* a link to the page already shown reloads it (no hashchange then) */
  for (const a of document.querySelectorAll("nav a[data-view]"))
    a.addEventListener("click", (ev) => { if (location.hash === a.getAttribute("href")) { ev.preventDefault(); render(); } });
  window.addEventListener("hashchange", render);
  $("sessions-refresh").addEventListener("click", () => guard(loadSessions));
  $("engines-refresh").addEventListener("click", () => guard(loadEngines));
  $("end-session").addEventListener("click", () => guard(endSession));
  $("cell-form").addEventListener("submit", runCell);
  $("upload-form").addEventListener("submit", (ev) => guard(() => upload(ev)));
  $("audit-form").addEventListener("submit", (ev) => { ev.preventDefault(); go(auditHref()); });
  $("audit-next").addEventListener("click", () => guard(() => loadAudit(true)));
  render();
});
