// cogwm report: transcripts, filters, search and side-by-side views of an arena run.
// Every piece of dialogue text reaches the page through textContent, never as markup.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const PAGE = 50;

/** An element with attributes and children (strings become text nodes). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "onclick" || k === "onchange" || k === "oninput") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return el;
}

function s(tag, attrs) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
}

function fmt(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  return (v >= 0 ? "+" : "") + v.toFixed(digits === undefined ? 3 : digits);
}

const COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

/** A line chart of one or more series of s_t values (x = user turn), as an SVG element. */
function lineChart(series, width, height, opts) {
  const o = opts || {};
  const pad = o.small ? 2 : 26;
  const svg = s("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: o.small ? "spark" : "chart",
                         role: "img" });
  const all = series.flatMap((x) => x.values.filter((v) => v !== null && v !== undefined));
  const n = Math.max(2, ...series.map((x) => x.values.length));
  if (!all.length) return svg;
  let lo = Math.min(...all), hi = Math.max(...all);
  if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
  const px = (i) => pad + (i / (n - 1)) * (width - 2 * pad);
  const py = (v) => (o.small ? 2 : 10) + (1 - (v - lo) / (hi - lo)) * (height - (o.small ? 4 : 10 + pad));
  if (!o.small) {
    for (const v of [lo, (lo + hi) / 2, hi]) {
      svg.appendChild(s("line", { x1: pad, x2: width - pad, y1: py(v), y2: py(v), stroke: "#eee" }));
      const t = s("text", { x: pad - 3, y: py(v) + 3, "text-anchor": "end", class: "tick" });
      t.textContent = v.toFixed(2);
      svg.appendChild(t);
    }
    const t = s("text", { x: width / 2, y: height - 4, "text-anchor": "middle", class: "axis" });
    t.textContent = "user turn (s_t)";
    svg.appendChild(t);
  }
  series.forEach((ser, k) => {
    const pts = ser.values.map((v, i) => (v === null || v === undefined ? null : `${px(i).toFixed(1)},${py(v).toFixed(1)}`))
      .filter((p) => p !== null);
    if (pts.length === 1) {
      const [x, y] = pts[0].split(",");
      svg.appendChild(s("circle", { cx: x, cy: y, r: 2, fill: COLOURS[k % COLOURS.length] }));
    } else if (pts.length > 1) {
      svg.appendChild(s("polyline", { points: pts.join(" "), fill: "none", "stroke-width": o.small ? 1.2 : 1.8,
                                      stroke: COLOURS[k % COLOURS.length] }));
    }
    if (!o.small && ser.label) {
      const t = s("text", { x: pad + 4, y: 12 + 11 * k, class: "legend", fill: COLOURS[k % COLOURS.length] });
      t.textContent = ser.label;
      svg.appendChild(t);
    }
  });
  return svg;
}

function items(letter, list) {
  if (!list || !list.length) return h("div", { class: "dim" }, h("b", {}, letter), h("span", { class: "ev" }, "none"));
  return h("div", { class: "dim" }, h("b", {}, letter),
    list.map(([text, score, evidence]) => h("span", { class: "item" },
      h("span", { class: "score" }, score === null ? "?" : String(score)), text,
      evidence ? h("span", { class: "ev" }, ` “${evidence}”`) : null)));
}

/** The user's state beside a user turn: emotion, intensity, s_t and the B/D/I items. */
function stateBox(st) {
  const emo = st.e
    ? h("div", {}, h("span", { class: "emo" }, st.e[0]), ` · intensity ${st.e[1]}`,
        st.e[2] !== null && st.e[2] !== undefined ? ` · valence ${fmt(st.e[2], 2)}` : null,
        st.e[3] ? h("span", { class: "ev" }, ` “${st.e[3]}”`) : null)
    : h("div", { class: "ev" }, "no emotion");
  return h("div", { class: "state", "data-role": "state" },
    h("span", { class: "st", title: "composite s_t" }, "s_t ", st.s === null || st.s === undefined ? "–" : st.s.toFixed(3)),
    emo, items("B", st.b), items("D", st.d), items("I", st.i));
}

/** One turn: the utterance (and the agent's reasoning, collapsed), the state beside user turns. */
function turnRow(t) {
  const [role, phase, round, text, state, reasoning] = t;
  const who = h("div", { class: "who" }, `${role} · round ${round}`, phase === "cold_start" ? h("span", { class: "phase" }, "cold start") : null);
  const left = h("div", {}, who, h("div", { class: "utt" }, text),
    reasoning ? h("details", { class: "reasoning" }, h("summary", {}, "reasoning"), h("pre", {}, reasoning)) : null);
  const right = state ? stateBox(state) : h("div", {});
  return h("div", { class: `turn ${role}`, "data-role": role }, left, right);
}

function metricLine(c) {
  const m = c.metrics || {};
  const parts = ["cts", "auc", "delta", "psr", "mono"].map((k) => `${k.toUpperCase()} ${fmt(m[k])}`);
  if (c.go !== null && c.go !== undefined) parts.push(`GO ${c.go ? "yes" : "no"}`);
  return parts.join(" · ");
}

/** A whole conversation: header, turns, the s_t line, termination, error. */
function transcript(c, opts) {
  const o = opts || {};
  const head = h("h3", {}, h("a", { href: `#c-${c.id}`, class: "cid" }, `#${c.id}`), ` ${c.task} · ${c.arm} · scenario ${c.scenario}`,
    c.trial !== null && c.trial !== undefined ? ` · trial ${c.trial}` : "");
  const meta = h("div", { class: "meta" },
    h("span", { class: "badge", "data-field": "termination" }, c.termination),
    c.failure_kind ? h("span", { class: "badge" }, `failure: ${c.failure_kind}`) : null,
    `${c.rounds === null ? "?" : c.rounds} rounds · agent ${c.agent_model} · simulator ${c.simulator_model} · ${metricLine(c)}`);
  const box = h("div", { class: "conv", id: o.anchor ? `c-${c.id}` : null, "data-conversation": c.id }, head, meta);
  if (o.compare) box.appendChild(o.compare);
  for (const t of c.turns) box.appendChild(turnRow(t));
  if (c.s && c.s.some((v) => v !== null)) {
    box.appendChild(h("div", { class: "meta" }, "composite s_t per user turn"));
    box.appendChild(lineChart([{ values: c.s }], 360, 110, {}));
  }
  box.appendChild(h("div", { class: "meta" }, `ended: ${c.termination}`));
  if (c.error) box.appendChild(h("div", { class: "err" }, c.error));
  return box;
}

async function decode(el) {
  const raw = el.textContent.trim();
  if (el.dataset.encoding !== "gzip+base64") return JSON.parse(raw);
  const bytes = Uint8Array.from(atob(raw), (ch) => ch.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

function option(value, label) { return h("option", { value }, label === undefined ? value : label); }

function selectOf(name, values) {
  return h("label", {}, `${name} `, h("select", { "data-filter": name }, option("", "all"), values.map((v) => option(v))));
}

/** The conversations section: filters, search, a paginated list and the open transcript. */
class Browser {
  constructor(root, conversations) {
    this.root = root;
    this.all = conversations;
    this.byId = new Map(conversations.map((c) => [String(c.id), c]));
    this.page = 0;
    this.text = null;
    const uniq = (f) => [...new Set(conversations.map(f))].filter((v) => v !== null && v !== undefined).sort();
    this.filters = h("div", { class: "filters" },
      selectOf("task", uniq((c) => c.task)), selectOf("agent", uniq((c) => c.agent)),
      selectOf("condition", uniq((c) => c.condition)), selectOf("termination", uniq((c) => c.termination)),
      h("label", {}, "search ", h("input", { type: "search", "data-filter": "q", placeholder: "words in utterances" })));
    this.count = h("span", { class: "meta" });
    this.list = h("div", {});
    this.pager = h("div", { class: "pager" });
    this.detail = h("div", { id: "detail" });
    root.append(this.filters, this.count, this.list, this.pager, this.detail);
    this.filters.addEventListener("input", () => { this.page = 0; this.render(); });
  }

  value(name) { return this.filters.querySelector(`[data-filter="${name}"]`).value; }

  haystack(c) {
    if (!this.text) this.text = new Map();
    if (!this.text.has(c.id)) this.text.set(c.id, c.turns.map((t) => t[3]).join("\n").toLowerCase());
    return this.text.get(c.id);
  }

  matches() {
    const f = { task: this.value("task"), agent: this.value("agent"), condition: this.value("condition"),
                termination: this.value("termination") };
    const q = this.value("q").trim().toLowerCase();
    return this.all.filter((c) => Object.entries(f).every(([k, v]) => !v || String(c[k]) === v)
      && (!q || this.haystack(c).includes(q)));
  }

  render() {
    const found = this.matches();
    const pages = Math.max(1, Math.ceil(found.length / PAGE));
    this.page = Math.min(this.page, pages - 1);
    this.count.textContent = `${found.length} of ${this.all.length} conversations`;
    const rows = found.slice(this.page * PAGE, (this.page + 1) * PAGE).map((c) => h("tr", { "data-conversation": c.id },
      h("td", { class: "l" }, h("a", { href: `#c-${c.id}`, class: "cid" }, `#${c.id}`)),
      h("td", { class: "l" }, c.task), h("td", { class: "l" }, c.arm), h("td", { class: "l" }, c.scenario),
      h("td", {}, c.trial === null || c.trial === undefined ? "" : String(c.trial)),
      h("td", { class: "l" }, c.termination), h("td", {}, c.rounds === null ? "–" : String(c.rounds)),
      h("td", {}, fmt((c.metrics || {}).cts)), h("td", {}, lineChart([{ values: c.s || [] }], 90, 22, { small: true }))));
    const head = h("tr", {}, ["id", "task", "agent/cond", "scenario", "trial", "ended", "rounds", "CTS", "s_t"]
      .map((x, i) => h("th", { class: i < 4 || i === 5 ? "l" : null }, x)));
    this.list.replaceChildren(h("table", { class: "data", id: "conversation-list" }, h("thead", {}, head), h("tbody", {}, rows)));
    this.pager.replaceChildren(
      h("button", { onclick: () => { this.page -= 1; this.render(); }, disabled: this.page === 0 }, "previous"),
      h("span", {}, `page ${this.page + 1} of ${pages}`),
      h("button", { onclick: () => { this.page += 1; this.render(); }, disabled: this.page >= pages - 1 }, "next"));
  }

  partners(c) {
    return this.all.filter((o) => o.id !== c.id && o.task === c.task && o.scenario === c.scenario
      && (o.trial ?? null) === (c.trial ?? null) && o.arm !== c.arm);
  }

  show(id) {
    const c = this.byId.get(String(id));
    if (!c) { this.detail.replaceChildren(h("p", { class: "err" }, `no conversation #${id}`)); return; }
    const others = this.partners(c);
    const compare = others.length
      ? h("div", { class: "meta" }, "same scenario: ", others.map((o) => h("a", { href: `#cmp-${c.id}-${o.id}`, class: "badge" }, `compare with ${o.arm} #${o.id}`)))
      : null;
    this.detail.replaceChildren(transcript(c, { anchor: true, compare }));
    this.detail.scrollIntoView();
  }

  compare(a, b) {
    const ca = this.byId.get(String(a)), cb = this.byId.get(String(b));
    if (!ca || !cb) { this.detail.replaceChildren(h("p", { class: "err" }, `no conversation #${ca ? b : a}`)); return; }
    const chart = lineChart([{ values: ca.s || [], label: `${ca.arm} #${ca.id}` }, { values: cb.s || [], label: `${cb.arm} #${cb.id}` }], 560, 180, {});
    this.detail.replaceChildren(h("div", { id: `cmp-${a}-${b}`, "data-compare": `${a}-${b}` },
      h("h3", {}, `Side by side: ${ca.task} scenario ${ca.scenario}`), chart,
      h("div", { class: "pair" }, transcript(ca, {}), transcript(cb, {}))));
    this.detail.scrollIntoView();
  }

  route() {
    const hash = decodeURIComponent(location.hash.slice(1));
    let m = /^c-(\d+)$/.exec(hash);
    if (m) return this.show(m[1]);
    m = /^cmp-(\d+)-(\d+)$/.exec(hash);
    if (m) return this.compare(m[1], m[2]);
  }
}

async function boot() {
  const el = document.getElementById("cogwm-data");
  const root = document.getElementById("conversations-root");
  if (!el || !root) return;
  let data;
  try {
    data = await decode(el);
  } catch (err) {
    root.replaceChildren(h("p", { class: "err" }, `cannot read the report's data: ${err}`));
    return;
  }
  const browser = new Browser(root, data.conversations);
  browser.render();
  window.addEventListener("hashchange", () => browser.route());
  browser.route();
  document.body.dataset.ready = "1";
}

window.cogwm = { h, s, lineChart, stateBox, turnRow, transcript, fmt };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
