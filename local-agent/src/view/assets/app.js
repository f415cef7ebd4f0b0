// The live view: reads /api/events (Server-Sent Events from this origin) and draws with canvas.
// Everything shown is set with textContent: node ids, alert texts and details come from the
// network and are never parsed as HTML.
"use strict";

const RECENT_MS = 15 * 60 * 1000;
const DAY_MS = 24 * 3600 * 1000;
const state = { recent: [], minutes: [], minute: null, last: null, locked: false };

const $ = (id) => document.getElementById(id);
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
function setText(id, text) { const e = $(id); if (e && e.textContent !== text) e.textContent = text; }
function fmt(v, digits) { return v === null || v === undefined ? "—" : Number(v).toFixed(digits); }
function ago(iso) {
  if (!iso) return "never";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 2) return "just now";
  if (s < 90) return Math.round(s) + " s ago";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  return new Date(iso).toLocaleString();
}
function clock(ms) { return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }); }
function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

// A canvas sized for the device's pixels; returns the context and CSS size.
function canvas(id) {
  const c = $(id);
  if (!c.dataset.h) c.dataset.h = c.getAttribute("height") || "120";
  const w = c.clientWidth || 300, h = +c.dataset.h;
  const dpr = window.devicePixelRatio || 1;
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
    c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); c.style.height = h + "px";
  }
  const g = c.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  return { g, w, h };
}

function axisLabels(g, w, h, labels) {
  g.fillStyle = css("--muted"); g.font = "11px system-ui, sans-serif"; g.textBaseline = "bottom";
  for (const [x, text] of labels) {
    const tw = g.measureText(text).width;
    g.fillText(text, Math.min(Math.max(0, x - tw / 2), w - tw), h - 1);
  }
}

// Presence band on top, motion line below, grey where there was no data.
function drawTimeline(id, points, t0, t1, get) {
  const { g, w, h } = canvas(id);
  const band = 18, top = 4, plotH = h - band - top - 16;
  const x = (t) => ((t - t0) / (t1 - t0)) * w;
  g.fillStyle = css("--nodata");
  g.fillRect(0, top, w, band);
  for (const p of points) {
    const v = get(p);
    const x0 = x(v.t), x1 = Math.max(x0 + 1, x(v.t + v.span));
    if (!v.data) continue;
    g.fillStyle = css("--card") || "#fff";
    g.fillRect(x0, top, x1 - x0, band);
    if (v.present > 0) {
      g.globalAlpha = Math.max(0.25, v.present);
      g.fillStyle = css("--present");
      g.fillRect(x0, top, x1 - x0, band);
      g.globalAlpha = 1;
    }
  }
  const y0 = top + band + 6 + plotH;
  g.strokeStyle = css("--line"); g.lineWidth = 1;
  g.beginPath(); g.moveTo(0, y0 + 0.5); g.lineTo(w, y0 + 0.5); g.stroke();
  g.strokeStyle = css("--motion"); g.lineWidth = 1.5; g.beginPath();
  let pen = false;
  for (const p of points) {
    const v = get(p);
    if (!v.data) { pen = false; continue; }
    const px = x(v.t + v.span / 2), py = y0 - Math.min(1, v.motion) * plotH;
    if (pen) g.lineTo(px, py); else g.moveTo(px, py);
    pen = true;
  }
  g.stroke();
  const labels = [];
  const step = (t1 - t0) / 4;
  for (let i = 0; i <= 4; i++) labels.push([(i / 4) * w, clock(t0 + i * step)]);
  axisLabels(g, w, h, labels);
}

function drawWave(wave) {
  const { g, w, h } = canvas("wave");
  if (!wave || !wave.samples.length) return;
  const s = wave.samples;
  let m = 1e-9;
  for (const v of s) m = Math.max(m, Math.abs(v));
  g.strokeStyle = css("--line"); g.beginPath(); g.moveTo(0, h / 2 + 0.5); g.lineTo(w, h / 2 + 0.5); g.stroke();
  g.strokeStyle = css("--accent"); g.lineWidth = 2; g.beginPath();
  s.forEach((v, i) => {
    const px = (i / Math.max(1, s.length - 1)) * w, py = h / 2 - (v / m) * (h / 2 - 12);
    if (i === 0) g.moveTo(px, py); else g.lineTo(px, py);
  });
  g.stroke();
  const secs = s.length / wave.hz;
  axisLabels(g, w, h, [[0, "-" + Math.round(secs) + " s"], [w, "now"]]);
}

function drawHourly(baseline, tonight) {
  const { g, w, h } = canvas("hourly");
  const hours = ["21", "22", "23", "00", "01", "02", "03", "04", "05", "06", "07", "08"];
  let max = 10;
  for (const v of baseline.concat(tonight)) if (v !== null) max = Math.max(max, v);
  const slot = w / 12, bw = Math.max(3, slot / 3), plotH = h - 20;
  hours.forEach((label, i) => {
    const bx = i * slot + slot / 2;
    const b = baseline[i], t = tonight[i];
    if (b !== null) { g.fillStyle = css("--baseline"); const bh = (b / max) * plotH; g.fillRect(bx - bw - 1, plotH - bh, bw, bh); }
    if (t !== null) { g.fillStyle = css("--tonight"); const th = (t / max) * plotH; g.fillRect(bx + 1, plotH - th, bw, th); }
  });
  axisLabels(g, w, h, hours.map((l, i) => [i * slot + slot / 2, l + ":00"]));
}

function pill(id, text, kind) {
  const e = $(id);
  e.textContent = text;
  e.className = "pill" + (kind ? " " + kind : "");
}

function renderVital(prefix, v) {
  setText(prefix + "-bpm", fmt(v.bpm, 1));
  setText(prefix + "-reason", v.reason);
  $(prefix + "-reason").dataset.why = v.why_null || "";
}

function renderNodes(s) {
  const body = $("nodes").tBodies[0];
  body.replaceChildren();
  for (const n of s.nodes) {
    const h = n.health || {};
    const drops = h.drops ? h.drops.rate_limited + h.drops.queue_full : n.dropped;
    const dropText = drops === 0 ? "0" : `${drops} (${h.drops ? h.drops.rate_limited : 0} over cap, ${h.drops ? h.drops.queue_full : 0} queue full)`;
    const rate = el("td", {}, fmt(n.rate_hz, 1) + (h.expected_hz ? ` (usual ${fmt(h.expected_hz, 1)})` : ""));
    const first = el("td", {}, el("strong", {}, n.id), el("span", { class: "small" }, " " + n.addr + " · " + n.transport));
    for (const w of n.warnings) first.append(el("span", { class: "warn" }, "⚠ " + w));
    const rssi = n.rssi_dbm === null ? "—" : n.rssi_dbm + " dBm";
    body.append(el("tr", { id: "node-" + n.id, "data-rate": String(n.rate_hz) },
      first,
      el("td", {}, n.online ? "online" : "offline"),
      rate,
      el("td", {}, rssi),
      el("td", {}, h.channel ?? "—"),
      el("td", {}, n.format),
      el("td", {}, dropText),
      el("td", {}, ago(n.last_seen))));
  }
  let empty = "";
  if (!s.hub.running) empty = "The hub is not running (its port is taken), so no node can connect. See the set-up check below.";
  else if (!s.nodes.length) empty = `No node has sent anything yet. Point your ESP32 nodes at this computer, UDP port ${s.hub.udp_addr.split(":").pop()}` + (s.frame.source === "hub" ? "." : ` (and start the agent with --source hub; it now runs the ${s.frame.source}).`);
  setText("nodes-empty", empty);
  setText("hub-line", s.hub.running ? `Hub on ${s.hub.addr}, UDP ingest on ${s.hub.udp_addr}; node frames ${s.hub.feeding ? "feed the engine" : "are not fed to the engine (it runs the " + s.frame.source + ")"}.` : "");
}

function renderAlerts(s) {
  const body = $("alerts").tBodies[0];
  body.replaceChildren();
  for (const a of s.alerts) {
    const d = a.delivery;
    const state = d.state + (d.last_status ? ` (last answer ${d.last_status})` : "");
    body.append(el("tr", {},
      el("td", {}, new Date(a.created_at).toLocaleString()),
      el("td", {}, a.kind),
      el("td", {}, el("strong", {}, a.title), el("span", { class: "small" }, " " + a.message)),
      el("td", {}, state),
      el("td", {}, String(d.attempts))));
  }
  setText("alerts-empty", s.alerts.length ? "" : "No alerts in the last 24 hours.");
}

function renderRoutine(s) {
  const r = s.routine, a = r.anomaly;
  pill("anomaly-status", a.status.replace("_", " "), a.status === "anomaly" ? "bad" : a.status === "nominal" ? "ok" : "");
  setText("anomaly-nights", `${a.nights_observed} of ${a.nights_required} nights observed`);
  setText("anomaly-detail", a.detail);
  drawHourly(r.baseline.hourly_activity, r.tonight);
  const learned = r.baseline.hourly_activity.some((v) => v !== null);
  const tonight = r.tonight.some((v) => v !== null);
  setText("hourly-empty", learned || tonight ? "" : "Nothing to compare yet: no night has been learned, and tonight (21:00–09:00) has no data so far.");
  const box = $("signals");
  box.replaceChildren();
  if (a.signals.length) {
    const t = el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Signal"), el("th", {}, "Tonight"), el("th", {}, "Usual"), el("th", {}, "z"))));
    const tb = el("tbody");
    for (const g of a.signals) tb.append(el("tr", {}, el("td", {}, g.name), el("td", {}, g.value), el("td", {}, g.baseline), el("td", {}, fmt(g.z, 1))));
    t.append(tb);
    box.append(t);
  }
}

function renderFall(f) {
  pill("fall-state", f.active ? f.state.replace("_", " ") : "off", f.alert ? "bad" : f.active && f.state === "monitoring" ? "ok" : "");
  setText("fall-active", f.active ? "watching live data" : "not watching: only live sensor data is watched");
  const parts = [];
  if (f.seconds_since_motion !== null) parts.push(`last motion ${fmt(f.seconds_since_motion, 0)} s ago`);
  if (f.seconds_since_breath !== null) parts.push(`last breath ${fmt(f.seconds_since_breath, 0)} s ago`);
  setText("fall-detail", parts.join(" · "));
  const box = $("fall-alert");
  box.replaceChildren();
  if (f.alert) box.append(el("p", { class: "banner" }, `${f.alert.kind.replace("_", " ")} since ${new Date(f.alert.since).toLocaleTimeString()}: ${f.alert.detail}`));
}

function render(u) {
  const s = u.state;
  state.last = s;
  const f = s.frame;
  const src = { simulator: "simulated data", replay: "a replayed recording", hub: "live sensor data" }[f.source] || f.source;
  setText("status", `${s.ok ? "Receiving" : "No frames from"} ${src} · ${fmt(s.rate_hz, 0)} frames/s · up ${Math.floor(s.uptime_s / 60)} min`);
  setText("presence", s.ok ? (f.present ? "Someone is here" : "Nobody") : "No data");
  $("presence").dataset.present = String(f.present);
  setText("presence-note", s.calibration.calibrating && s.ok ? "Calibrating the empty room; detection uses a default threshold meanwhile." : "");
  setText("motion", fmt(f.motion, 2));
  $("motion-bar").style.width = Math.round(Math.min(1, f.motion) * 100) + "%";
  renderVital("breathing", s.breathing);
  renderVital("heart", s.heart);
  drawWave(s.wave);
  setText("wave-empty", s.wave ? "" : "No waveform yet: " + s.breathing.reason);
  const c = s.calibration;
  const pct = Math.round(c.progress * 100);
  $("cal-bar").style.width = pct + "%";
  $("cal-progress").setAttribute("aria-valuenow", String(pct));
  setText("cal-detail", c.detail);
  renderFall(s.fall);
  renderRoutine(s);
  renderNodes(s);
  renderAlerts(s);
  const sw = $("away-switch");
  sw.disabled = false;
  sw.setAttribute("aria-checked", String(s.away.on));
  const sched = s.away.schedule.map((w) => `${w.days.join(", ")} ${w.from}–${w.to}`).join("; ");
  setText("away-schedule", (s.away.on ? "On: someone present for 5 s raises an alert. " : "Off. ") + (sched ? `Schedule: ${sched}${s.away.in_window ? " (inside a window now)" : ""}.` : "No schedule configured."));
  setText("version", `local-agent ${s.version}`);
  const banner = [];
  if (!s.ok) banner.push("No frames in the last 5 s: nothing is being measured.");
  if (f.source !== "hub") banner.push(`This is ${src}, not your room.`);
  $("banner").hidden = banner.length === 0;
  setText("banner", banner.join(" "));
}

function renderTimelines() {
  const now = Date.now();
  const recent = state.recent.filter((p) => p.t > now - RECENT_MS);
  drawTimeline("recent", recent, now - RECENT_MS, now, (p) => ({ t: p.t - 1000, span: 1000, data: p.data, present: p.present ? 1 : 0, motion: p.motion }));
  const withData = recent.filter((p) => p.data);
  const present = withData.filter((p) => p.present).length;
  const span = withData.length < 120 ? `${withData.length} s` : `${Math.round(withData.length / 60)} min`;
  setText("recent-summary", withData.length ? `Someone present ${Math.round((100 * present) / withData.length)}% of the ${span} with data.` : "No data in the last 15 minutes.");
  const mins = state.minutes.concat(state.minute ? [state.minute] : []).filter((m) => m.t > now - DAY_MS);
  drawTimeline("day", mins, now - DAY_MS, now, (m) => ({ t: m.t, span: 60000, data: m.covered > 0, present: m.present, motion: m.motion_max }));
  const covered = mins.filter((m) => m.covered > 0);
  setText("day-summary", covered.length ? `${covered.length} min with data since the agent started; someone present in ${covered.filter((m) => m.present > 0).length} of them.` : "No data yet: the 24-hour timeline fills as the agent runs.");
}

function onUpdate(ev) {
  const u = JSON.parse(ev.data);
  if (u.reset) { state.recent = []; state.minutes = []; }
  state.recent.push(...u.samples);
  if (state.recent.length > 1000) state.recent.splice(0, state.recent.length - 1000);
  state.minutes.push(...u.minutes);
  if (state.minutes.length > 1500) state.minutes.splice(0, state.minutes.length - 1500);
  state.minute = u.minute;
  render(u);
  renderTimelines();
}

async function lockedCheck() {
  try {
    const r = await fetch("/api/state", { cache: "no-store" });
    if (r.status === 401) {
      state.locked = true;
      setText("status", "This page's session ended (the agent restarted). Open the address it printed, or run `local-agent open`.");
      return true;
    }
  } catch (_) {
    setText("status", "The agent is not answering; retrying…");
  }
  return false;
}

function connect() {
  const es = new EventSource("/api/events");
  es.addEventListener("update", onUpdate);
  es.onerror = async () => {
    if (await lockedCheck()) es.close();
  };
}

async function toggleAway() {
  const sw = $("away-switch");
  const want = sw.getAttribute("aria-checked") !== "true";
  sw.disabled = true;
  try {
    const r = await fetch("/api/away", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ on: want }) });
    const j = await r.json();
    if (r.ok) sw.setAttribute("aria-checked", String(j.away));
    else setText("away-schedule", "Could not switch: " + (j.detail || r.status));
  } catch (e) {
    setText("away-schedule", "Could not switch: " + e);
  } finally {
    sw.disabled = false;
  }
}

async function doctor() {
  const list = $("doctor");
  const btn = $("doctor-run");
  btn.disabled = true;
  try {
    const r = await fetch("/api/doctor", { cache: "no-store" });
    if (!r.ok) return;
    const rep = await r.json();
    list.replaceChildren();
    const order = { problem: 0, warning: 1, ok: 2 };
    rep.findings.sort((a, b) => order[a.level] - order[b.level]);
    for (const f of rep.findings) {
      const text = el("div", {}, el("span", { class: "small" }, f.check + " · "), f.detail);
      if (f.fix) text.append(el("span", { class: "fix" }, "Fix: " + f.fix));
      list.append(el("li", { "data-level": f.level, "data-check": f.check }, el("span", { class: "lvl " + f.level }, f.level), text));
    }
  } finally {
    btn.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("away-switch").addEventListener("click", toggleAway);
  $("doctor-run").addEventListener("click", doctor);
  window.addEventListener("resize", () => { if (state.last) { renderTimelines(); drawWave(state.last.wave); drawHourly(state.last.routine.baseline.hourly_activity, state.last.routine.tonight); } });
  connect();
  doctor();
  setInterval(() => { if (!state.locked && document.visibilityState === "visible") doctor(); }, 60000);
});
