// DialToM report: every answer with its item; filters, search and per-answer links.
"use strict";

(function () {
  const { h } = window.cogwm;
  const PER_PAGE = 30;

  function optionList(item, answer) {
    return h("ol", { class: "options", type: "A" }, answer.shown.map(([letter, index]) => {
      const marks = [];
      if (index === item.gold_index) marks.push("gold");
      if (index === answer.chosen_index) marks.push("chosen");
      return h("li", { "data-letter": letter, class: marks.join(" ") || null },
        h("b", {}, `${letter}. `), item.options[index], marks.length ? h("span", { class: "badge" }, marks.join(" + ")) : null);
    }));
  }

  function answerBox(key, answer, item, run) {
    const ctx = item.history_turns === 0 ? [] : (item.shown.length ? item.shown : item.context.map(([sp, , tx]) => [sp, tx]));
    const probs = Object.entries(answer.probs || {}).map(([k, v]) => `${k} ${(+v).toFixed(3)}`).join(" · ");
    return h("div", { class: "conv", id: key, "data-answer": key },
      h("h3", {}, h("a", { href: `#${key}` }, answer.item), ` · ${run.model} (${run.condition}, seed ${run.seed})`),
      h("div", { class: "meta" },
        h("span", { class: "badge", "data-field": "correct" }, answer.correct ? "correct" : "wrong"),
        answer.parsed ? null : h("span", { class: "badge" }, "unparsed"),
        `${item.task} · ${item.variant} · ${item.domain}${item.attribute ? " · " + item.attribute : ""} · ${item.source} from ${item.corpus} ${item.dialogue}`),
      ctx.length ? h("div", { class: "context" }, ctx.map(([speaker, text]) => h("div", { class: "turn" }, h("div", { class: "utt" }, h("b", {}, `${speaker}: `), text), h("div", {})))) : null,
      item.profile ? h("p", {}, h("b", {}, "Profile: "), item.profile) : null,
      h("p", {}, h("b", {}, "Question: "), item.question),
      optionList(item, answer),
      h("p", { class: "meta" }, `gold ${answer.gold_letter} · chosen ${answer.choice || "none"} · scored by ${answer.path}`, probs ? ` · ${probs}` : ""),
      h("details", { class: "reasoning" }, h("summary", {}, "raw output"), h("pre", {}, answer.raw)));
  }

  function start(data) {
    const root = document.getElementById("tom-root");
    const answers = data.answers.map((a, i) => ({ ...a, key: `a-${i}`, item_rec: data.items[a.item], run_rec: data.runs[a.run] }));
    const uniq = (f) => [...new Set(answers.map(f))].filter((v) => v !== null && v !== undefined).sort();
    const sel = (name, values) => h("label", {}, `${name} `, h("select", { "data-filter": name }, h("option", { value: "" }, "all"), values.map((v) => h("option", { value: v }, v))));
    const filters = h("div", { class: "filters" },
      sel("model", uniq((a) => a.run_rec.model)), sel("condition", uniq((a) => a.run_rec.condition)),
      sel("task", uniq((a) => a.item_rec.task)), sel("domain", uniq((a) => a.item_rec.domain)),
      sel("attribute", uniq((a) => a.item_rec.attribute)), sel("outcome", ["correct", "wrong", "unparsed"]),
      h("label", {}, "search ", h("input", { type: "search", "data-filter": "q" })));
    const count = h("span", { class: "meta" });
    const list = h("div", {});
    const pager = h("div", { class: "pager" });
    root.replaceChildren(filters, count, pager, list);
    let page = 0;
    const value = (n) => filters.querySelector(`[data-filter="${n}"]`).value;
    function matches() {
      const q = value("q").trim().toLowerCase();
      return answers.filter((a) => (!value("model") || a.run_rec.model === value("model"))
        && (!value("condition") || a.run_rec.condition === value("condition"))
        && (!value("task") || a.item_rec.task === value("task"))
        && (!value("domain") || a.item_rec.domain === value("domain"))
        && (!value("attribute") || a.item_rec.attribute === value("attribute"))
        && (!value("outcome") || (value("outcome") === "correct" ? a.correct : value("outcome") === "wrong" ? !a.correct : !a.parsed))
        && (!q || (a.item_rec.question + "\n" + a.item_rec.options.join("\n") + "\n" + a.item_rec.context.map((c) => c[2]).join("\n") + "\n" + a.raw).toLowerCase().includes(q)));
    }
    function render(focus) {
      const found = matches();
      const pages = Math.max(1, Math.ceil(found.length / PER_PAGE));
      if (focus) {
        const at = found.findIndex((a) => a.key === focus);
        if (at >= 0) page = Math.floor(at / PER_PAGE);
      }
      page = Math.min(page, pages - 1);
      count.textContent = `${found.length} of ${answers.length} answers`;
      list.replaceChildren(...found.slice(page * PER_PAGE, (page + 1) * PER_PAGE).map((a) => answerBox(a.key, a, a.item_rec, a.run_rec)));
      pager.replaceChildren(
        h("button", { onclick: () => { page -= 1; render(); }, disabled: page === 0 }, "previous"),
        h("span", {}, `page ${page + 1} of ${pages}`),
        h("button", { onclick: () => { page += 1; render(); }, disabled: page >= pages - 1 }, "next"));
      if (focus) { const el = document.getElementById(focus); if (el) el.scrollIntoView(); }
    }
    filters.addEventListener("input", () => { page = 0; render(); });
    window.addEventListener("hashchange", () => render(location.hash.slice(1)));
    render(location.hash.slice(1) || null);
    document.body.dataset.ready = "1";
  }

  async function boot() {
    const el = document.getElementById("cogwm-data");
    if (!el || !document.getElementById("tom-root")) return;
    const raw = el.textContent.trim();
    const bytes = Uint8Array.from(atob(raw), (ch) => ch.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    start(JSON.parse(await new Response(stream).text()));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
