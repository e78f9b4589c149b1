/* runbox console: the operator's page (docs/console.md). Plain JS, no framework. Everything it
 * shows comes from runboxd's REST API, called with the key in this tab's sessionStorage as
 * Authorization: Bearer. Server text is only ever set with textContent, never parsed as HTML. */
"use strict";

const $ = (id) => document.getElementById(id);
const KEY = "runbox.key";
let currentSession = null;
let auditNext = null;
let chartTimer = null;
const chart = { sessions: [], execs: [], latency: [], last: null };

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

/* ---- views ---- */

const VIEWS = ["signin", "sessions", "session", "engines", "audit", "charts"];

function show(view) {
  for (const v of VIEWS) $(v).hidden = v !== view;
  for (const b of document.querySelectorAll("nav button[data-view]")) {
    if (b.dataset.view === view) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  $("nav").hidden = view === "signin";
  if (chartTimer && view !== "charts") { clearInterval(chartTimer); chartTimer = null; }
  showError("");
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
    const max = Math.max(1e-9, ...data);
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
    tr.append(el("td", "No live session.", { colspan: "8" }));
    rows.append(tr);
  }
  for (const s of list) {
    const tr = el("tr");
    const open = el("button", s.session_id, { type: "button", class: "link" });
    open.addEventListener("click", () => openSession(s.session_id));
    const first = el("td");
    first.append(open);
    const engine = s.container_id && s.container_id.includes("@") ? s.container_id.split("@")[0] : "";
    const iso = (s.execution_options && s.execution_options.isolation) || "";
    tr.append(first, el("td", s.owner || ""), el("td", s.language), el("td", s.status), el("td", age(s.created_at)),
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
  d.append(el("div", [when, x.status, x.request_id || ""].filter(Boolean).join(" · ")));
  if (x.code) d.append(el("pre", x.code, { class: "code" }));
  if (x.stdout) d.append(el("pre", x.stdout, { class: "stdout" }));
  if (x.stderr) d.append(el("pre", x.stderr, { class: "stderr" }));
  if (x.result !== undefined && x.result !== null && x.result !== "") d.append(el("pre", "→ " + x.result, { class: "result" }));
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

/* The session's line of facts; End session is offered while it is live. */
async function loadSessionInfo() {
  const s = await api("GET", "/sessions/" + encodeURIComponent(currentSession));
  const ended = s.ended_at ? "ended " + s.ended_at + (s.end_reason ? " (" + s.end_reason + ")" : "") : "";
  $("session-info").textContent = [s.language, s.status, s.owner ? "key " + s.owner : "", s.executions + " executions",
    "created " + s.created_at, ended].filter(Boolean).join(" · ");
  /* an ended session runs nothing and takes no file: only its record is shown */
  for (const id of ["end-session", "cell-form", "upload-form"]) $(id).hidden = isOver(s);
  return s;
}

async function openSession(id) {
  currentSession = id;
  show("session");
  $("session-id").textContent = id;
  $("cell-out").replaceChildren();
  $("end-session").hidden = true;
  let s = null;
  await guard(async () => { s = await loadSessionInfo(); });
  if (s && isOver(s)) $("files").replaceChildren(el("li", "No file: the session has ended."));
  else guard(loadFiles);
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
  $("files").replaceChildren(el("li", "No file: the session has ended."));
}

async function loadHistory() {
  const box = $("history");
  box.replaceChildren();
  const id = encodeURIComponent(currentSession);
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
  if (list.length === 0) box.append(el("p", "No execution yet."));
  for (const x of list.slice().reverse()) box.append(execBlock(x));
}

async function loadFiles() {
  const ul = $("files");
  ul.replaceChildren();
  const doc = await api("GET", "/sessions/" + encodeURIComponent(currentSession) + "/files");
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
  if (doc.files.length === 0) ul.append(el("li", "No file."));
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
    guard(loadFiles);
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
  $("engines-note").textContent = list.length ? "" :
    "One Docker engine (" + (h.docker && h.docker.reachable ? "reachable" : "not reachable") + "): nothing to drain.";
  for (const g of list) {
    const tr = el("tr");
    const b = el("button", g.draining ? "Undrain" : "Drain", { type: "button", "aria-label": (g.draining ? "Undrain " : "Drain ") + g.name });
    b.addEventListener("click", () => guard(async () => {
      await api(g.draining ? "DELETE" : "POST", "/engines/" + encodeURIComponent(g.name) + "/drain");
      await loadEngines();
    }));
    const act = el("td");
    act.append(b);
    tr.append(el("td", g.name), el("td", g.url), el("td", String(g.reachable)), el("td", g.sandboxes), el("td", g.capacity),
      el("td", g.draining ? "draining" : g.placing ? "placing" : "not placing"), act);
    rows.append(tr);
  }
}

/* ---- audit trail ---- */

async function loadAudit(more) {
  const q = new URLSearchParams();
  for (const [name, id] of [["key", "audit-key"], ["session", "audit-session"], ["kind", "audit-kind"]])
    if ($(id).value) q.set(name, $(id).value);
  if (more && auditNext !== null) q.set("after", auditNext);
  const doc = await api("GET", "/audit?" + q.toString());
  const rows = $("audit-rows");
  if (!more) rows.replaceChildren();
  for (const ev of doc.events) {
    const detail = ev.code || ev.path || ev.host || ev.reason || ev.status || "";
    const tr = el("tr");
    tr.append(el("td", ev.at), el("td", ev.key), el("td", ev.session || ""), el("td", ev.kind),
      el("td", String(detail).slice(0, 200)));
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
  const push = (a, v) => { a.push(v); if (a.length > 120) a.shift(); };
  push(chart.sessions, m.runbox_sessions_live || 0);
  if (chart.last) {
    const dt = (now.t - chart.last.t) / 1000, dn = now.count - chart.last.count;
    push(chart.execs, Math.max(0, now.done - chart.last.done) / dt);
    push(chart.latency, dn > 0 ? (now.sum - chart.last.sum) / dn : 0);
  }
  chart.last = now;
  $("now-sessions").textContent = String(m.runbox_sessions_live || 0);
  $("now-execs").textContent = chart.execs.length ? chart.execs[chart.execs.length - 1].toFixed(2) : "-";
  $("now-latency").textContent = chart.latency.length ? chart.latency[chart.latency.length - 1].toFixed(3) : "-";
  plot($("chart-sessions"), [chart.sessions], ["#1d4f91"]);
  plot($("chart-execs"), [chart.execs], ["#1f7a1f"]);
  plot($("chart-latency"), [chart.latency], ["#8b4500"]);
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
    show("sessions");
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
  for (const b of document.querySelectorAll("nav button[data-view]")) b.addEventListener("click", () => show(b.dataset.view));
  $("sessions-refresh").addEventListener("click", () => guard(loadSessions));
  $("engines-refresh").addEventListener("click", () => guard(loadEngines));
  $("end-session").addEventListener("click", () => guard(endSession));
  $("cell-form").addEventListener("submit", runCell);
  $("upload-form").addEventListener("submit", (ev) => guard(() => upload(ev)));
  $("audit-form").addEventListener("submit", (ev) => { ev.preventDefault(); guard(() => loadAudit(false)); });
  $("audit-next").addEventListener("click", () => guard(() => loadAudit(true)));
  show(sessionStorage.getItem(KEY) ? "sessions" : "signin");
});
