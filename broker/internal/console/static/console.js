// Spool console: reads api/state (topics, groups, brokers) and the broker's own /metrics every
// two seconds, keeps the last five minutes of rates in memory and renders the page for the
// route in the URL's hash (#/, #/topics, #/topic/NAME, #/groups, #/group/ID, #/security).
// Every DOM node is built with h(), which sets text, never HTML, so names, keys, values and
// headers from clients cannot inject markup. #app is redrawn on every poll; #tools (the
// message browser, the forms) is built once per route so that what a user types survives the
// polls. API calls carry the X-Spool-Console header (the broker's CSRF check) and, once the
// user signed in, Basic credentials kept in sessionStorage.
"use strict";

const POLL_MS = 2000;
const KEEP = 150; // samples kept: five minutes at two seconds

let state = null;          // the last api/state document
let prevCounters = null;   // the last /metrics counters, for rates
const series = { bytesIn: [], bytesOut: [], recordsIn: [], requests: [], latencyMean: [], latencyP99: [] };
const topicRates = new Map(); // topic -> bytes in per second, last sample

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "width") el.style.width = v;
    else el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function svg(tag, attrs) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  return el;
}

const fmtInt = (n) => Number(n).toLocaleString("en-US");
function fmtBytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + " " + u[i];
}
function fmtRate(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return n.toFixed(n < 10 ? 1 : 0);
}
function fmtSeconds(s) {
  if (!isFinite(s)) return "–";
  if (s < 1e-3) return (s * 1e6).toFixed(0) + " µs";
  if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : 1) + " ms";
  return s.toFixed(2) + " s";
}
function fmtUptime(ms) {
  let s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400); s %= 86400;
  const hh = Math.floor(s / 3600); s %= 3600;
  const mm = Math.floor(s / 60); s %= 60;
  return (d ? d + "d " : "") + (d || hh ? hh + "h " : "") + mm + "m " + s + "s";
}

// parseMetrics reads the Prometheus text format into [{name, labels, value}].
function parseMetrics(text) {
  const out = [];
  const labelRe = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#") continue;
    const brace = line.indexOf("{");
    const space = line.lastIndexOf(" ");
    let name, labels = {};
    if (brace >= 0 && brace < space) {
      name = line.slice(0, brace);
      const body = line.slice(brace + 1, line.lastIndexOf("}"));
      for (const m of body.matchAll(labelRe)) labels[m[1]] = m[2].replace(/\\(.)/g, "$1");
    } else {
      name = line.slice(0, space);
    }
    out.push({ name, labels, value: parseFloat(line.slice(space + 1)) });
  }
  return out;
}

// counters sums the series the charts need.
function counters(samples) {
  const c = { t: performance.now(), bytesIn: 0, bytesOut: 0, recordsIn: 0, requests: 0, latencySum: 0, buckets: new Map(), topicIn: new Map() };
  for (const s of samples) {
    switch (s.name) {
      case "spool_topic_bytes_in_total":
        c.bytesIn += s.value;
        c.topicIn.set(s.labels.messaging_destination_name, s.value);
        break;
      case "spool_topic_bytes_out_total": c.bytesOut += s.value; break;
      case "spool_topic_records_in_total": c.recordsIn += s.value; break;
      case "rpc_server_call_duration_seconds_count": c.requests += s.value; break;
      case "rpc_server_call_duration_seconds_sum": c.latencySum += s.value; break;
      case "rpc_server_call_duration_seconds_bucket": {
        const le = s.labels.le === "+Inf" ? Infinity : parseFloat(s.labels.le);
        c.buckets.set(le, (c.buckets.get(le) || 0) + s.value);
        break;
      }
    }
  }
  return c;
}

function push(name, v) {
  const a = series[name];
  a.push(v);
  if (a.length > KEEP) a.shift();
}

// p99 of the requests between two scrapes, from the cumulative histogram buckets.
function p99(prev, cur) {
  const les = [...cur.buckets.keys()].sort((a, b) => a - b);
  const total = (cur.buckets.get(Infinity) || 0) - (prev.buckets.get(Infinity) || 0);
  if (total <= 0) return NaN;
  for (const le of les) {
    if ((cur.buckets.get(le) || 0) - (prev.buckets.get(le) || 0) >= 0.99 * total) return le;
  }
  return NaN;
}

async function pollMetrics() {
  const resp = await fetch("/metrics", { cache: "no-store" });
  if (!resp.ok) throw new Error("/metrics: " + resp.status);
  const cur = counters(parseMetrics(await resp.text()));
  if (prevCounters) {
    const dt = (cur.t - prevCounters.t) / 1000;
    const rate = (k) => Math.max(0, (cur[k] - prevCounters[k]) / dt);
    push("bytesIn", rate("bytesIn"));
    push("bytesOut", rate("bytesOut"));
    push("recordsIn", rate("recordsIn"));
    push("requests", rate("requests"));
    const dn = cur.requests - prevCounters.requests;
    push("latencyMean", dn > 0 ? (cur.latencySum - prevCounters.latencySum) / dn : NaN);
    push("latencyP99", p99(prevCounters, cur));
    for (const [t, v] of cur.topicIn) topicRates.set(t, Math.max(0, (v - (prevCounters.topicIn.get(t) || 0)) / dt));
  }
  prevCounters = cur;
}

async function pollState() {
  state = await api("GET", "api/state");
}

async function tick() {
  const status = document.getElementById("status");
  try {
    await Promise.all([pollState(), pollMetrics()]);
    status.className = "status ok";
    status.textContent = "broker " + state.broker.nodeId + " · updated " + new Date().toLocaleTimeString();
    render();
  } catch (e) {
    status.className = "status bad";
    status.textContent = e.status === 401 ? "sign in to see the cluster" : "cannot reach the broker: " + e.message;
  }
}

// chart draws one line (and an optional second, dashed) over the kept samples.
function chart(title, values, fmt, color, second) {
  const w = 320, hgt = 90;
  const finite = values.filter(isFinite).concat(second ? second.values.filter(isFinite) : []);
  const top = Math.max(1e-9, ...finite) * 1.15;
  // The newest sample is at the right edge; the line grows leftwards as samples arrive.
  const pts = (vals) => vals.map((v, i) => [w - ((vals.length - 1 - i) / (KEEP - 1)) * w, isFinite(v) ? hgt - (v / top) * hgt : hgt]);
  const pathOf = (p) => p.map(([x, y], i) => (i ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1)).join(" ");
  const box = svg("svg", { viewBox: `0 0 ${w} ${hgt}`, preserveAspectRatio: "none", role: "img", "aria-label": title });
  for (const f of [0.25, 0.5, 0.75]) box.append(svg("line", { x1: 0, x2: w, y1: hgt * f, y2: hgt * f, stroke: "#2a3450", "stroke-width": 1 }));
  if (values.length > 1) {
    const p = pts(values);
    box.append(svg("path", { d: pathOf(p) + ` L${p[p.length - 1][0]} ${hgt} L${p[0][0]} ${hgt} Z`, class: "area", fill: color }));
    box.append(svg("path", { d: pathOf(p), class: "line", stroke: color }));
    if (second && second.values.length > 1) box.append(svg("path", { d: pathOf(pts(second.values)), class: "line2", stroke: second.color }));
  }
  const last = values.length ? values[values.length - 1] : NaN;
  const legend = second ? h("div", { class: "legend" }, h("i", { class: "sw1" }), second.mainLabel, h("i", { class: "sw2" }), second.label) : null;
  if (legend) {
    legend.children[0].style.background = color;
    legend.children[1].style.background = second.color;
  }
  return h("div", { class: "chart" },
    h("div", { class: "title" }, h("span", {}, title), h("span", { class: "now" }, isFinite(last) ? fmt(last) : "–")),
    box, legend);
}

function card(k, v) { return h("div", { class: "card" }, h("div", { class: "k" }, k), h("div", { class: "v" }, v)); }

function replicas(p) {
  const isr = new Set(p.isr);
  return p.replicas.map((r) => h("span", { class: "replica" + (r === p.leader ? " leader" : "") + (isr.has(r) ? "" : " out"), title: r === p.leader ? "leader" : isr.has(r) ? "in sync" : "out of sync" }, r));
}

function topicRow(t) {
  const under = t.partitions.filter((p) => p.isr.length < p.replicas.length).length;
  const offline = t.partitions.filter((p) => p.leader < 0).length;
  const end = t.partitions.reduce((s, p) => s + (p.local ? p.highWatermark - p.logStartOffset : 0), 0);
  const health = offline ? h("span", { class: "badge bad" }, offline + " offline") : under ? h("span", { class: "badge warn" }, under + " under-replicated") : h("span", { class: "badge good" }, "healthy");
  return h("tr", { "data-topic": t.name },
    h("td", {}, h("a", { href: "#/topic/" + encodeURIComponent(t.name) }, t.name), t.internal ? h("span", { class: "muted" }, " (internal)") : null),
    h("td", { class: "num" }, t.partitions.length),
    h("td", { class: "num" }, t.partitions.length ? t.partitions[0].replicas.length : 0),
    h("td", {}, health),
    h("td", { class: "num" }, fmtInt(end)),
    h("td", { class: "num" }, topicRates.has(t.name) ? fmtBytes(topicRates.get(t.name)) + "/s" : "–"));
}

function topicsTable(topics) {
  if (!topics.length) return h("div", { class: "empty" }, "No topics yet.");
  return h("table", { id: "topics" },
    h("thead", {}, h("tr", {}, h("th", {}, "Topic"), h("th", { class: "num" }, "Partitions"), h("th", { class: "num" }, "Replicas"), h("th", {}, "Health"), h("th", { class: "num" }, "Records (local)"), h("th", { class: "num" }, "Bytes in"))),
    h("tbody", {}, topics.map(topicRow)));
}

function groupsTable(groups) {
  if (!groups.length) return h("div", { class: "empty" }, "No consumer groups coordinated by this broker.");
  return h("table", { id: "groups" },
    h("thead", {}, h("tr", {}, h("th", {}, "Group"), h("th", {}, "State"), h("th", { class: "num" }, "Members"), h("th", { class: "num" }, "Generation"), h("th", { class: "num" }, "Lag"))),
    h("tbody", {}, groups.map((g) => h("tr", { "data-group": g.id },
      h("td", {}, h("a", { href: "#/group/" + encodeURIComponent(g.id) }, g.id)),
      h("td", {}, h("span", { class: "badge " + g.state }, g.state)),
      h("td", { class: "num" }, g.members.length),
      h("td", { class: "num" }, g.generation),
      h("td", { class: "num" }, fmtInt(g.lag))))));
}

function overview() {
  const s = state;
  const userTopics = s.topics.filter((t) => !t.internal);
  const parts = userTopics.reduce((n, t) => n + t.partitions.length, 0);
  const lag = s.groups.reduce((n, g) => n + g.lag, 0);
  return [
    h("h1", {}, "Cluster overview"),
    h("div", { class: "sub" }, s.broker.mode + " · Spool " + s.broker.version),
    h("div", { class: "cards" },
      card("Brokers", s.brokers.length), card("Controller", s.broker.controller >= 0 ? "broker " + s.broker.controller : "none"),
      card("Uptime", fmtUptime(new Date(s.broker.now) - new Date(s.broker.started))),
      card("Topics", userTopics.length), card("Partitions", parts), card("Groups", s.groups.length), card("Total lag", fmtInt(lag))),
    h("h2", {}, "Live (this broker)"),
    h("div", { class: "charts" },
      chart("Bytes in / s", series.bytesIn, (v) => fmtBytes(v) + "/s", "#5b9dff", { values: series.bytesOut, color: "#39d0a8", label: "out", mainLabel: "in" }),
      chart("Records in / s", series.recordsIn, fmtRate, "#39d0a8"),
      chart("Requests / s", series.requests, fmtRate, "#b48cff"),
      chart("Request latency", series.latencyMean, fmtSeconds, "#f5b14c", { values: series.latencyP99, color: "#ff6b6b", label: "p99", mainLabel: "mean" })),
    h("h2", {}, "Brokers"),
    h("table", { id: "brokers" },
      h("thead", {}, h("tr", {}, h("th", {}, "Node"), h("th", {}, "Address"), h("th", {}, "Rack"), h("th", {}, "Role"))),
      h("tbody", {}, s.brokers.map((b) => h("tr", {},
        h("td", { class: "mono" }, b.nodeId), h("td", { class: "mono" }, b.host + ":" + b.port), h("td", {}, b.rack || "–"),
        h("td", {}, b.nodeId === s.broker.controller ? h("span", { class: "badge good" }, "controller") : "", b.nodeId === s.broker.nodeId ? h("span", { class: "muted" }, " (this page)") : ""))))),
    h("h2", {}, "Topics"), topicsTable(userTopics),
    h("h2", {}, "Consumer groups"), groupsTable(s.groups),
  ];
}

function topicPage(name) {
  const t = state.topics.find((x) => x.name === name);
  if (!t) return [h("h1", {}, name), h("div", { class: "empty" }, "No such topic.")];
  const configs = Object.entries(t.configs || {}).sort();
  return [
    h("h1", {}, t.name),
    h("div", { class: "sub mono" }, "id " + t.id + (t.internal ? " · internal" : "")),
    h("h2", {}, "Partitions"),
    h("table", { id: "partitions" },
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "Partition"), h("th", { class: "num" }, "Leader"), h("th", { class: "num" }, "Epoch"), h("th", {}, "Replicas (ISR highlighted)"), h("th", { class: "num" }, "Log start"), h("th", { class: "num" }, "Log end"), h("th", { class: "num" }, "High watermark"))),
      h("tbody", {}, t.partitions.map((p) => h("tr", { "data-partition": p.index },
        h("td", { class: "num" }, p.index), h("td", { class: "num" }, p.leader < 0 ? h("span", { class: "badge bad" }, "offline") : p.leader),
        h("td", { class: "num" }, p.leaderEpoch), h("td", {}, replicas(p)),
        h("td", { class: "num" }, p.local ? fmtInt(p.logStartOffset) : "–"), h("td", { class: "num" }, p.local ? fmtInt(p.logEndOffset) : "–"),
        h("td", { class: "num" }, p.local ? fmtInt(p.highWatermark) : "–"))))),
    h("h2", {}, "Configuration overrides"),
    configs.length ? h("table", { id: "configs" }, h("tbody", {}, configs.map(([k, v]) => h("tr", {}, h("td", { class: "mono" }, k), h("td", { class: "mono" }, v)))))
      : h("div", { class: "empty" }, "None: every setting is the broker default."),
  ];
}

function groupPage(id) {
  const g = state.groups.find((x) => x.id === id);
  if (!g) return [h("h1", {}, id), h("div", { class: "empty" }, "No such group on this broker (groups are shown by their coordinator).")];
  const maxLag = Math.max(1, ...g.offsets.map((o) => o.lag));
  return [
    h("h1", {}, g.id),
    h("div", { class: "sub" }, h("span", { class: "badge " + g.state }, g.state), " · generation " + g.generation + (g.protocol ? " · " + g.protocolType + "/" + g.protocol : "") + " · lag " + fmtInt(g.lag)),
    h("h2", {}, "Members"),
    g.members.length ? h("table", { id: "members" },
      h("thead", {}, h("tr", {}, h("th", {}, "Client id"), h("th", {}, "Host"), h("th", {}, "Member id"), h("th", {}, "Assignment"))),
      h("tbody", {}, g.members.map((m) => h("tr", {},
        h("td", {}, m.clientId), h("td", { class: "mono" }, m.clientHost), h("td", { class: "mono" }, m.memberId + (m.instanceId ? " (" + m.instanceId + ")" : "")),
        h("td", { class: "mono" }, m.assignment.length ? m.assignment.map((a) => a.topic + " [" + a.partitions.join(", ") + "]").join("; ") : "–")))))
      : h("div", { class: "empty" }, "No members: the group is empty."),
    h("h2", {}, "Committed offsets and lag"),
    g.offsets.length ? h("table", { id: "offsets" },
      h("thead", {}, h("tr", {}, h("th", {}, "Topic"), h("th", { class: "num" }, "Partition"), h("th", { class: "num" }, "Committed"), h("th", { class: "num" }, "High watermark"), h("th", { class: "num" }, "Lag"), h("th", {}, ""))),
      h("tbody", {}, g.offsets.map((o) => h("tr", { "data-offset": o.topic + "-" + o.partition },
        h("td", {}, h("a", { href: "#/topic/" + encodeURIComponent(o.topic) }, o.topic)), h("td", { class: "num" }, o.partition),
        h("td", { class: "num" }, fmtInt(o.committed)), h("td", { class: "num" }, o.hasEnd ? fmtInt(o.highWatermark) : "–"),
        h("td", { class: "num lag" }, o.hasEnd ? fmtInt(o.lag) : "–"),
        h("td", {}, h("div", { class: "bar" }, h("span", { width: (100 * o.lag / maxLag).toFixed(1) + "%" })))))))
      : h("div", { class: "empty" }, "No committed offsets."),
  ];
}

function render() {
  if (!state) return;
  const route = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  let view, tab;
  if (route.startsWith("topic/")) { view = topicPage(route.slice(6)); tab = "#/topics"; }
  else if (route.startsWith("group/")) { view = groupPage(route.slice(6)); tab = "#/groups"; }
  else if (route === "topics") { view = [h("h1", {}, "Topics"), topicsTable(state.topics)]; tab = "#/topics"; }
  else if (route === "groups") { view = [h("h1", {}, "Consumer groups"), groupsTable(state.groups)]; tab = "#/groups"; }
  else if (route === "security") { view = [h("h1", {}, "Security")]; tab = "#/security"; }
  else { view = overview(); tab = "#/"; }
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.getAttribute("href") === tab);
  const app = document.getElementById("app");
  app.replaceChildren(...view);
  app.dataset.route = route || "overview";
  if (route !== toolsRoute) {
    const built = buildTools(route);
    if (built) { // null: not yet (a topic the state does not list yet)
      toolsRoute = route;
      const tools = document.getElementById("tools");
      tools.replaceChildren(...built);
      tools.dataset.route = route || "overview";
    }
  }
}


// ---- API calls, sign-in and messages -------------------------------------------------------

const AUTH_KEY = "spool.console.auth";
let toolsRoute = null; // the route #tools was built for
let who = null;        // api/security's answer, once read

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// api calls the console API with the CSRF header and the signed-in user's credentials; a 401
// shows the sign-in form; any other failure throws an ApiError with the broker's message.
async function api(method, path, body) {
  const headers = { "X-Spool-Console": "1" };
  const auth = sessionStorage.getItem(AUTH_KEY);
  if (auth) headers.Authorization = "Basic " + auth;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, cache: "no-store", credentials: "omit", body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (resp.status === 401) showSignIn((data && data.error) || "sign in");
  if (!resp.ok) throw new ApiError(resp.status, (data && data.error) || resp.status + " " + resp.statusText);
  return data;
}

function flash(ok, msg) {
  const el = document.getElementById("flash");
  el.hidden = false;
  el.className = "flash " + (ok ? "ok" : "bad");
  el.dataset.ok = ok ? "true" : "false";
  el.textContent = msg;
}

// act runs an action and reports its outcome in the flash line.
async function act(what, fn) {
  try {
    const res = await fn();
    flash(true, what + ": done");
    await tick();
    return res;
  } catch (e) {
    flash(false, what + " refused (" + (e.status || "error") + "): " + e.message);
    return null;
  }
}

function showSignIn(msg) {
  const box = document.getElementById("signin");
  box.hidden = false;
  document.getElementById("signin-msg").textContent = msg;
}

function base64UTF8(s) {
  let bin = "";
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin);
}

async function signIn(ev) {
  ev.preventDefault();
  const user = document.getElementById("signin-user").value;
  const pass = document.getElementById("signin-pass").value;
  sessionStorage.setItem(AUTH_KEY, base64UTF8(user + ":" + pass));
  try {
    who = await api("GET", "api/security");
  } catch (e) {
    sessionStorage.removeItem(AUTH_KEY);
    showSignIn(e.message);
    return;
  }
  document.getElementById("signin").hidden = true;
  document.getElementById("signin-pass").value = "";
  toolsRoute = null;
  showWho();
  await tick();
}

function signOut() {
  sessionStorage.removeItem(AUTH_KEY);
  who = null;
  state = null;
  toolsRoute = null;
  document.getElementById("app").replaceChildren();
  document.getElementById("tools").replaceChildren();
  showWho();
  tick();
}

function showWho() {
  const el = document.getElementById("who");
  if (!who) { el.replaceChildren(); return; }
  el.replaceChildren(h("span", { class: "mono", id: "principal" }, who.principal),
    who.authenticated ? h("button", { id: "signout", type: "button", class: "link" }, "Sign out") : null,
    who.write ? null : h("span", { class: "badge warn", title: who.writeReason }, "read-only"));
  const out = document.getElementById("signout");
  if (out) out.addEventListener("click", signOut);
}

async function loadWho() {
  try { who = await api("GET", "api/security"); } catch (e) { who = null; }
  showWho();
}

// ---- forms ---------------------------------------------------------------------------------

function field(label, input) { return h("label", { class: "field" }, h("span", {}, label), input); }
function select(id, options, value) {
  const el = h("select", { id }, options.map(([v, text]) => h("option", { value: v }, text)));
  if (value !== undefined) el.value = value;
  return el;
}
function button(id, text, onClick, cls) {
  const b = h("button", { id, type: "button", class: cls });
  b.textContent = text;
  b.addEventListener("click", onClick);
  return b;
}
const val = (id) => document.getElementById(id).value;

function buildTools(route) {
  if (route === "topics") return createTopicTools();
  if (route.startsWith("topic/")) return topicTools(route.slice(6));
  if (route.startsWith("group/")) return groupTools(route.slice(6));
  if (route === "security") return securityTools();
  return [];
}

function createTopicTools() {
  return [h("h2", {}, "Create a topic"),
    h("form", { class: "tools", id: "create-form" },
      field("Name", h("input", { id: "create-name", required: true })),
      field("Partitions", h("input", { id: "create-partitions", type: "number", min: 1, placeholder: "broker default" })),
      field("Replication factor", h("input", { id: "create-rf", type: "number", min: 1, placeholder: "broker default" })),
      field("Configs (name=value per line)", h("textarea", { id: "create-configs", rows: 2 })),
      button("create-go", "Create", () => act("creating topic " + val("create-name"), () => api("POST", "api/topics", {
        name: val("create-name"), partitions: Number(val("create-partitions")) || 0, replicationFactor: Number(val("create-rf")) || 0,
        configs: parseConfigs(val("create-configs")),
      }))))];
}

function parseConfigs(text) {
  const out = {};
  for (const line of text.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

// decode turns the API's base64 (or null) into bytes.
function decode(b64) {
  if (b64 === null || b64 === undefined) return null;
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// shown renders bytes as text, pretty JSON or hex: always as text nodes.
function shown(bytes, format) {
  if (bytes === null) return h("span", { class: "muted" }, "null");
  if (format === "hex") return h("code", { class: "hex" }, Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" "));
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  if (format === "json") {
    try { return h("pre", { class: "json" }, JSON.stringify(JSON.parse(text), null, 2)); } catch (e) {
      return h("span", {}, text, h("span", { class: "muted" }, " (not JSON)"));
    }
  }
  return h("span", { class: "text" }, text);
}

function topicTools(name) {
  const t = state.topics.find((x) => x.name === name);
  if (!t) return null;
  let page = null; // the last answer, for "next"
  const rows = h("tbody", {});
  const summary = h("div", { class: "sub", id: "records-summary" });
  const draw = () => {
    if (!page) return;
    const format = val("br-format");
    rows.replaceChildren(...page.records.map((r) => h("tr", { "data-offset": r.offset },
      h("td", { class: "num" }, r.offset), h("td", { class: "mono" }, new Date(r.timestamp).toISOString()),
      h("td", { class: "key" }, shown(decode(r.key), format)), h("td", { class: "value" }, shown(decode(r.value), format)),
      h("td", { class: "headers" }, r.headers.map((hd) => h("div", {}, h("span", { class: "muted" }, hd.key + ": "), shown(decode(hd.value), format)))))));
    summary.textContent = page.records.length + " records from offset " + page.start + " (" + page.isolation + "; high watermark " +
      page.highWatermark + ", last stable " + page.lastStableOffset + ")" + (page.truncated ? "; more from offset " + page.next : "");
  };
  const load = async (from, at) => {
    const q = new URLSearchParams({ from, count: val("br-count") || "50", isolation: val("br-iso") });
    if (from === "offset") q.set("offset", at);
    if (from === "timestamp") q.set("timestamp", String(Date.parse(at)));
    if (val("br-key") !== "") q.set("key", val("br-key"));
    if (val("br-value") !== "") q.set("value", val("br-value"));
    try {
      page = await api("GET", "api/topics/" + encodeURIComponent(name) + "/partitions/" + val("br-partition") + "/records?" + q);
      draw();
    } catch (e) {
      page = null;
      rows.replaceChildren();
      summary.textContent = "";
      flash(false, "browsing refused (" + (e.status || "error") + "): " + e.message);
    }
  };
  const configs = Object.keys(t.configs || {}).sort();
  return [
    h("h2", {}, "Messages"),
    h("form", { class: "tools", id: "browser" },
      field("Partition", select("br-partition", t.partitions.map((p) => [p.index, String(p.index)]))),
      field("From", select("br-from", [["beginning", "beginning"], ["offset", "offset"], ["timestamp", "timestamp"], ["end", "end (last N)"]])),
      field("Offset or time", h("input", { id: "br-at", placeholder: "42 or 2026-01-31T12:00:00Z" })),
      field("Max records", h("input", { id: "br-count", type: "number", min: 1, max: 500, value: 50 })),
      field("Key is", h("input", { id: "br-key" })),
      field("Value contains", h("input", { id: "br-value" })),
      field("Isolation", select("br-iso", [["read_committed", "read_committed"], ["read_uncommitted", "read_uncommitted"]])),
      field("Show as", select("br-format", [["text", "text"], ["json", "JSON"], ["hex", "hex"]])),
      button("br-go", "Browse", () => load(val("br-from"), val("br-at"))),
      button("br-next", "Next page", () => page && load("offset", String(page.next)))),
    summary,
    h("table", { id: "records" }, h("thead", {}, h("tr", {}, h("th", { class: "num" }, "Offset"), h("th", {}, "Timestamp"), h("th", {}, "Key"), h("th", {}, "Value"), h("th", {}, "Headers"))), rows),
    h("h2", {}, "Change configuration"),
    h("form", { class: "tools", id: "config-form" },
      field("Name", h("input", { id: "cfg-name", list: "cfg-names" })),
      h("datalist", { id: "cfg-names" }, configs.map((c) => h("option", { value: c }))),
      field("Value", h("input", { id: "cfg-value" })),
      button("cfg-set", "Set", () => act("setting " + val("cfg-name") + " on " + name, () => api("POST", "api/topics/" + encodeURIComponent(name) + "/configs", { set: { [val("cfg-name")]: val("cfg-value") } }))),
      button("cfg-delete", "Back to default", () => act("resetting " + val("cfg-name") + " on " + name, () => api("POST", "api/topics/" + encodeURIComponent(name) + "/configs", { delete: [val("cfg-name")] })))),
    h("h2", {}, "Delete the topic"),
    h("form", { class: "tools", id: "delete-form" },
      field("Type the topic's name to confirm", h("input", { id: "del-confirm" })),
      button("del-go", "Delete " + name, () => {
        if (val("del-confirm") !== name) { flash(false, "type " + name + " to confirm the deletion"); return; }
        act("deleting topic " + name, () => api("DELETE", "api/topics/" + encodeURIComponent(name)));
      }, "danger")),
  ];
}
// The record table follows the format selector at once.
document.addEventListener("change", (ev) => { if (ev.target.id === "br-format") document.getElementById("br-go").click(); });

function groupTools(id) {
  const result = h("tbody", {});
  return [
    h("h2", {}, "Reset offsets"),
    h("p", { class: "muted" }, "Only an Empty group's offsets can be reset (stop its consumers first), as kafka-consumer-groups.sh --reset-offsets requires. Without topics, every partition the group has an offset for is reset."),
    h("form", { class: "tools", id: "reset-form" },
      field("To", select("rs-to", [["earliest", "earliest"], ["latest", "latest"], ["timestamp", "a timestamp"], ["offset", "an offset"]])),
      field("Offset or time", h("input", { id: "rs-at", placeholder: "42 or 2026-01-31T12:00:00Z" })),
      field("Topics (comma separated)", h("input", { id: "rs-topics" })),
      button("rs-go", "Reset offsets", async () => {
        const to = val("rs-to");
        const body = { to };
        if (to === "offset") body.offset = Number(val("rs-at"));
        if (to === "timestamp") body.timestamp = Date.parse(val("rs-at"));
        const topics = val("rs-topics").split(",").map((x) => x.trim()).filter((x) => x);
        if (topics.length) body.topics = topics;
        const res = await act("resetting the offsets of " + id, () => api("POST", "api/groups/" + encodeURIComponent(id) + "/offsets", body));
        result.replaceChildren(...(res ? res.offsets : []).map((o) => h("tr", { "data-reset": o.topic + "-" + o.partition },
          h("td", {}, o.topic), h("td", { class: "num" }, o.partition), h("td", { class: "num" }, o.previous < 0 ? "–" : o.previous), h("td", { class: "num" }, o.offset))));
      }, "danger")),
    h("table", { id: "reset-result" }, h("thead", {}, h("tr", {}, h("th", {}, "Topic"), h("th", { class: "num" }, "Partition"), h("th", { class: "num" }, "Before"), h("th", { class: "num" }, "After"))), result),
  ];
}

function securityTools() {
  const box = h("div", { id: "security" }, h("p", { class: "muted" }, "Loading…"));
  api("GET", "api/security").then((s) => {
    who = s;
    showWho();
    box.replaceChildren(
      h("div", { class: "sub" }, "Signed in as ", h("span", { class: "mono" }, s.principal), s.authenticated ? "" : " (no SASL users: nobody signs in)",
        " · actions " + (s.write ? "on" : "off: " + s.writeReason)),
      h("h2", {}, "ACLs"),
      s.aclsError ? h("div", { class: "empty", id: "acls-error" }, s.aclsError) : s.acls.length === 0 ? h("div", { class: "empty" }, "No ACLs.") :
        h("table", { id: "acls" }, h("thead", {}, h("tr", {}, ["Principal", "Host", "Operation", "Permission", "Resource", "Pattern"].map((c) => h("th", {}, c)))),
          h("tbody", {}, s.acls.map((a) => h("tr", {}, h("td", { class: "mono" }, a.principal), h("td", { class: "mono" }, a.host), h("td", {}, a.operation),
            h("td", {}, a.permission), h("td", { class: "mono" }, a.resourceType + ":" + a.resourceName), h("td", {}, a.patternType))))),
      h("h2", {}, "Users"),
      s.usersError ? h("div", { class: "empty", id: "users-error" }, s.usersError) : s.users.length === 0 ? h("div", { class: "empty" }, "No SASL users.") :
        h("table", { id: "users" }, h("thead", {}, h("tr", {}, h("th", {}, "User"), h("th", {}, "Mechanisms"))),
          h("tbody", {}, s.users.map((u) => h("tr", {}, h("td", { class: "mono" }, u.name), h("td", {}, u.mechanisms.join(", ")))))));
  }).catch((e) => box.replaceChildren(h("div", { class: "empty" }, e.message)));
  return [box];
}

document.getElementById("signin-form").addEventListener("submit", signIn);
window.addEventListener("hashchange", render);
loadWho();
tick();
setInterval(tick, POLL_MS);
