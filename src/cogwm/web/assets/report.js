// cogwm report: transcripts, filters, search and side-by-side views of an arena run.
// Every piece of dialogue text reaches the page through textContent, never as markup.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const PAGE = 50;
// Bidirectional embedding, override and isolate controls: shown as they are, they reorder the
// text around them (an utterance could display "evil" as "live"), so every page drops them.
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/** ``text`` as a page may show it: without bidirectional controls. */
function clean(text) { return String(text).replace(BIDI_CONTROLS, ""); }

/** The sentence a metric's column header explains itself with (the page's #cogwm-help). */
function helpText(header) {
  const el = document.getElementById("cogwm-help");
  if (!el) return null;
  if (!helpText.table) helpText.table = JSON.parse(el.textContent);
  return helpText.table[header] || null;
}

/** An element with attributes and children (strings become text nodes). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "onclick" || k === "onchange" || k === "oninput") el[k] = v;
    else el.setAttribute(k, v === true ? "" : clean(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(clean(c)) : c);
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
    const colour = COLOURS[k % COLOURS.length];
    if (pts.length === 1) {
      const [x, y] = pts[0].split(",");
      svg.appendChild(s("circle", { cx: x, cy: y, r: 2, fill: colour, "data-series": k }));
    } else if (pts.length > 1) {
      svg.appendChild(s("polyline", { points: pts.join(" "), fill: "none", "stroke-width": o.small ? 1.2 : 1.8,
                                      stroke: colour, "data-series": k }));
    }
    if (!o.small && ser.label) {
      // A swatch in the line's colour names the line; the text stays dark to be readable.
      svg.appendChild(s("rect", { x: pad + 4, y: 6 + 11 * k, width: 10, height: 3, fill: colour, class: "swatch",
                                  "data-series": k }));
      const t = s("text", { x: pad + 18, y: 12 + 11 * k, class: "legend" });
      t.textContent = clean(ser.label);
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
        st.e[2] !== null && st.e[2] !== undefined ? h("span", { class: "val" }, ` · valence ${fmt(Number(st.e[2]), 2)}`) : null,
        st.e[3] ? h("span", { class: "ev" }, ` “${st.e[3]}”`) : null)
    : h("div", { class: "ev" }, "no emotion");
  // The emotion line and s_t share a row: the line wraps in its own column, s_t keeps its own.
  const composite = h("span", { class: "st", title: "composite s_t" }, "s_t ", st.s === null || st.s === undefined ? "–" : Number(st.s).toFixed(3));
  return h("div", { class: "state", "data-role": "state" },
    h("div", { class: "head" }, emo, composite), items("B", st.b), items("D", st.d), items("I", st.i));
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

/** Order two sort values (numbers or strings) in direction ``dir`` (1 or -1); undefined values
 * (null) go last in either direction. */
function compareValues(a, b, dir) {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return dir * (a - b);
  return dir * String(a).localeCompare(String(b));
}

/** What a table cell sorts by: its exact mean (``data-mean``), else the number it starts with
 * (text columns: the text); null where it shows no value. */
function cellValue(td, text) {
  if (!td) return null;
  if (td.dataset.mean !== undefined) return Number(td.dataset.mean);
  const shown = (td.firstChild ? td.firstChild.textContent : td.textContent).trim();
  if (text) return shown === "" || shown === "–" ? null : shown;
  const n = parseFloat(shown.replace(/^#/, "").replace("−", "-").replace(/,/g, "")); // "#12", "1,234"
  return Number.isFinite(n) ? n : null;
}

/** The next direction of a sortable header: numbers first high to low, text A to Z. */
function nextDirection(th, text) {
  const now = th.getAttribute("aria-sort");
  if (!now) return text ? 1 : -1;
  return now === "ascending" ? -1 : 1;
}

function markSorted(th, dir) {
  for (const other of th.parentElement.children) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
}

/** Sort ``table``'s body rows by column ``col`` in direction ``dir`` (1 up, -1 down). */
function sortTable(table, col, dir) {
  const th = table.tHead.rows[0].cells[col];
  const text = th.classList.contains("l");
  markSorted(th, dir);
  const body = table.tBodies[0];
  const rows = [...body.rows].map((tr, i) => [cellValue(tr.cells[col], text), i, tr]);
  rows.sort((x, y) => compareValues(x[0], y[0], dir) || x[1] - y[1]);
  body.append(...rows.map((r) => r[2]));
}

/** Headers of ``table`` sort its column on click (or Enter; again: reversed). ``memo`` keeps
 * the last order, so a table drawn again (the live page's) is shown in it. */
function sortable(table, memo) {
  const last = memo || {};
  [...table.tHead.rows[0].cells].forEach((th, col) => {
    th.classList.add("sortable");
    th.tabIndex = 0;
    const sort = () => {
      last.col = col;
      last.dir = nextDirection(th, th.classList.contains("l"));
      sortTable(table, col, last.dir);
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", (e) => { if (e.key === "Enter") sort(); });
  });
  if (last.col !== undefined && last.col < table.tHead.rows[0].cells.length) sortTable(table, last.col, last.dir);
  return table;
}

/** Every server-drawn table on the page sorts on its headers (tables the script draws are marked
 * ``data-sortable="script"`` and sort their own way). */
function sortableTables(root) {
  for (const table of root.querySelectorAll("table.data:not([data-sortable])")) {
    if (table.tHead && table.tBodies.length) sortable(table);
  }
}

/** Keep anchors clear of the sticky tab bar: its height, as the pages' ``--tabs``. */
function trackTabBar() {
  const nav = document.querySelector("nav.tabs");
  if (!nav) return;
  const set = () => document.documentElement.style.setProperty("--tabs", `${Math.ceil(nav.getBoundingClientRect().height)}px`);
  set();
  window.addEventListener("resize", set);
}

//: The conversation list's columns: header, text column?, the value it sorts by.
const LIST_COLUMNS = [
  ["id", false, (c) => c.id], ["task", true, (c) => c.task], ["agent/cond", true, (c) => c.arm],
  ["scenario", true, (c) => c.scenario], ["trial", false, (c) => c.trial ?? null],
  ["ended", true, (c) => c.termination], ["rounds", false, (c) => c.rounds ?? null],
  ["CTS", false, (c) => (c.metrics || {}).cts ?? null], ["s_t", false, null],
];

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
    this.order = null; // [column, direction] the list is sorted by
    root.replaceChildren(this.filters, this.count, this.list, this.pager, this.detail);
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

  sorted(found) {
    if (!this.order) return found;
    const [col, dir] = this.order;
    const key = LIST_COLUMNS[col][2];
    return found.map((c, i) => [key(c), i, c]).sort((x, y) => compareValues(x[0], y[0], dir) || x[1] - y[1])
      .map((x) => x[2]);
  }

  header() {
    return h("tr", {}, LIST_COLUMNS.map(([name, text, key], i) => {
      const th = h("th", { class: text ? "l" : null, title: helpText(name) }, name);
      if (!key) return th;
      th.classList.add("sortable");
      if (this.order && this.order[0] === i) th.setAttribute("aria-sort", this.order[1] === 1 ? "ascending" : "descending");
      th.tabIndex = 0;
      const sort = () => { this.order = [i, nextDirection(th, text)]; this.page = 0; this.render(); };
      th.onclick = sort;
      th.onkeydown = (e) => { if (e.key === "Enter") sort(); };
      return th;
    }));
  }

  render() {
    const found = this.sorted(this.matches());
    const pages = Math.max(1, Math.ceil(found.length / PAGE));
    this.page = Math.min(this.page, pages - 1);
    this.count.textContent = `${found.length} of ${this.all.length} conversations`;
    const rows = found.slice(this.page * PAGE, (this.page + 1) * PAGE).map((c) => h("tr", { "data-conversation": c.id },
      h("td", { class: "l" }, h("a", { href: `#c-${c.id}`, class: "cid" }, `#${c.id}`)),
      h("td", { class: "l" }, c.task), h("td", { class: "l" }, c.arm), h("td", { class: "l" }, c.scenario),
      h("td", {}, c.trial === null || c.trial === undefined ? "" : String(c.trial)),
      h("td", { class: "l" }, c.termination), h("td", {}, c.rounds === null ? "–" : String(c.rounds)),
      h("td", {}, fmt((c.metrics || {}).cts)), h("td", {}, lineChart([{ values: c.s || [] }], 90, 22, { small: true }))));
    this.list.replaceChildren(h("table", { class: "data", id: "conversation-list", "data-sortable": "script" },
      h("thead", {}, this.header()), h("tbody", {}, rows)));
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
    const box = transcript(c, { anchor: true, compare });
    this.detail.replaceChildren(box);
    box.scrollIntoView(); // its scroll-margin keeps it below the sticky tab bar
  }

  compare(a, b) {
    const ca = this.byId.get(String(a)), cb = this.byId.get(String(b));
    if (!ca || !cb) { this.detail.replaceChildren(h("p", { class: "err" }, `no conversation #${ca ? b : a}`)); return; }
    const chart = lineChart([{ values: ca.s || [], label: `${ca.arm} #${ca.id}` }, { values: cb.s || [], label: `${cb.arm} #${cb.id}` }], 560, 180, {});
    const box = h("div", { id: `cmp-${a}-${b}`, "data-compare": `${a}-${b}` },
      h("h3", {}, `Side by side: ${ca.task} scenario ${ca.scenario}`), chart,
      h("div", { class: "pair" }, transcript(ca, {}), transcript(cb, {})));
    this.detail.replaceChildren(box);
    box.scrollIntoView();
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
  trackTabBar();
  sortableTables(document);
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

window.cogwm = { h, s, clean, helpText, sortable, lineChart, stateBox, turnRow, transcript, fmt };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
