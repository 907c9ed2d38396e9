/* adapath view: questions, answers, meta-paths, paths and explored entities per method. */
"use strict";

(() => {
  const V = VIEW, D = V.data, el = V.el;
  if (D.kind !== "questions") return;
  const ROW_H = 52;
  const methods = D.methods;
  const rows = D.rows.map(([qi, level, res]) => {
    const q = D.questions[qi];
    return { q, level, res, key: `${q.id}|${level}` };
  });
  const state = Object.assign({ m: methods[0], vs: "", level: "", hops: "", tpl: "", grp: "", ok: "", q: "", sel: "" },
                              V.readHash());
  if (!methods.includes(state.m)) state.m = methods[0];
  if (!methods.includes(state.vs) || state.vs === state.m) state.vs = "";

  const result = (row, m) => (row.res[m] === undefined ? null : D.results[m][row.res[m]]);
  const questionText = (row) => row.q.texts[row.level] || row.q.texts.question || Object.values(row.q.texts)[0] || "";
  const mark = (r) => (r === null ? "none" : r.correct === true ? "yes" : r.correct === false ? "no" : "unknown");
  const MARK_TEXT = { yes: "✓", no: "✗", unknown: "?", none: "–" };
  const MARK_TITLE = { yes: "correct", no: "incorrect", unknown: "not scored", none: "no result" };
  let searchText = null;  // lower-cased id + text per row, built on the first search

  function matches(row) {
    const r = result(row, state.m);
    if (r === null) return false;
    if (state.level && row.level !== state.level) return false;
    if (state.hops && String(row.q.hops) !== state.hops) return false;
    if (state.tpl && String(row.q.template) !== state.tpl) return false;
    if (state.grp && String(row.q.group) !== state.grp) return false;
    if (state.ok === "correct" && r.correct !== true) return false;
    if (state.ok === "incorrect" && r.correct !== false) return false;
    if (state.ok === "differs") {
      const others = state.vs ? [state.vs] : methods.filter((m) => m !== state.m);
      if (!others.some((m) => { const o = result(row, m); return o !== null && o.correct !== r.correct; })) return false;
    }
    if (state.q) {
      if (searchText === null) searchText = rows.map((x) => `${x.q.id} ${questionText(x)}`.toLowerCase());
      if (!searchText[row.index].includes(state.q.toLowerCase())) return false;
    }
    return true;
  }
  rows.forEach((row, i) => { row.index = i; });

  // ----------------------------------------------------------------------------- summary
  const summary = document.getElementById("summary");
  for (const m of methods) {
    let answered = 0, correct = 0, scored = 0;
    for (const r of D.results[m]) {
      answered++;
      if (r.correct !== null) scored++;
      if (r.correct === true) correct++;
    }
    const pct = scored ? ` (${(100 * correct / scored).toFixed(1)}%)` : "";
    const mean = (k) => D.results[m].reduce((s, r) => s + (Number((r.usage || {})[k]) || 0), 0) / Math.max(1, answered);
    const cost = mean("calls") || mean("prompt_tokens")
      ? ` · ${mean("calls").toFixed(1)} calls, ${Math.round(mean("prompt_tokens") + mean("completion_tokens"))} tokens per answer` : "";
    summary.append(el("span", { cls: "stat", "data-method": m }, el("b", {}, m), ` ${correct} / ${scored} correct${pct}`,
                      answered > scored ? ` · ${answered - scored} unscored` : "", cost));
  }
  summary.append(el("span", { cls: "stat muted" }, `${D.questions.length.toLocaleString("en")} questions`));

  // ----------------------------------------------------------------------------- filters
  const uniq = (values) => [...new Set(values.filter((v) => v !== null && v !== undefined))];
  const levels = uniq(rows.map((r) => r.level));
  const hops = uniq(D.questions.map((q) => q.hops)).sort((a, b) => a - b);
  const templates = uniq(D.questions.map((q) => q.template)).sort();
  const groups = uniq(D.questions.map((q) => q.group)).sort();
  const refilter = () => { applyFilters(); };
  const filterChange = (key) => (ev) => { state[key] = ev.target.value; refilter(); };
  const controls = el("form", { cls: "filters", id: "filters", onsubmit: (ev) => ev.preventDefault() },
    V.select("m", "Method", methods.map((m) => [m, m]), state.m, (ev) => {
      state.m = ev.target.value;
      if (state.vs === state.m) { state.vs = ""; document.getElementById("f-vs").value = ""; }
      refilter();
    }),
    V.select("vs", "Compare with", [["", "—"], ...methods.map((m) => [m, m])], state.vs, (ev) => {
      state.vs = ev.target.value === state.m ? "" : ev.target.value;
      ev.target.value = state.vs;
      refilter();
    }),
    V.select("level", "Level", [["", "all"], ...levels.map((l) => [l, l])], state.level, filterChange("level")),
    V.select("hops", "Hops", [["", "all"], ...hops.map((h) => [h, `${h}`])], state.hops, filterChange("hops")),
    templates.length ? V.select("tpl", "Template", [["", "all"], ...templates.map((t) => [t, t])], state.tpl, filterChange("tpl")) : null,
    groups.length ? V.select("grp", "Group", [["", "all"], ...groups.map((g) => [g, g])], state.grp, filterChange("grp")) : null,
    V.select("ok", "Answer", [["", "all"], ["correct", "correct"], ["incorrect", "incorrect"],
                              ["differs", "methods differ"]], state.ok, filterChange("ok")),
    el("label", { cls: "field wide" }, el("span", {}, "Search"),
       el("input", { type: "search", id: "f-q", value: state.q, placeholder: "id or words of the question",
                     oninput: (ev) => { state.q = ev.target.value.trim(); refilter(); } })));
  const count = el("p", { cls: "count", id: "count" });
  const listBox = el("div", { cls: "list", id: "list", tabindex: "0" });
  const detail = el("section", { cls: "detail", id: "detail" });
  document.getElementById("app").replaceChildren(
    el("aside", { cls: "sidebar" }, controls, count, listBox), detail);

  let shown = [], selected = -1;
  const list = V.virtualList(listBox, ROW_H, (row, i) => {
    const marks = el("span", { cls: "marks" });
    for (const m of state.vs ? [state.m, state.vs] : [state.m]) {
      const k = mark(result(row, m));
      marks.append(el("span", { cls: `mark ${k}`, title: `${m}: ${MARK_TITLE[k]}` }, MARK_TEXT[k]));
    }
    const meta = [row.q.id, row.level, row.q.hops !== null ? `${row.q.hops} hop${row.q.hops === 1 ? "" : "s"}` : null,
                  row.q.template].filter((x) => x !== null && x !== undefined).join(" · ");
    return el("div", { cls: "row" + (i === selected ? " selected" : ""), "data-key": row.key,
                       onclick: () => choose(i) },
      el("div", { cls: "rowhead" }, marks, el("span", { cls: "rowmeta" }, meta)),
      el("div", { cls: "rowtext" }, questionText(row)));
  });

  function applyFilters() {
    shown = rows.filter(matches);
    count.textContent = `${shown.length.toLocaleString("en")} of ${rows.length.toLocaleString("en")} answers`;
    count.dataset.count = shown.length;
    let i = shown.findIndex((r) => r.key === state.sel);
    if (i < 0 && shown.length) i = 0;
    selected = i;
    list.set(shown);
    if (i >= 0) list.scrollTo(i);
    renderDetail(i >= 0 ? shown[i] : null);
  }

  function choose(i) {
    if (i < 0 || i >= shown.length) return;
    selected = i;
    list.refresh();
    list.scrollTo(i);
    renderDetail(shown[i]);
  }

  listBox.addEventListener("keydown", (ev) => {
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      choose(selected + (ev.key === "ArrowDown" ? 1 : -1));
    }
  });

  // ----------------------------------------------------------------------------- detail
  function badge(r) {
    const k = mark(r);
    return el("span", { cls: `badge ${k}` }, `${MARK_TEXT[k]} ${MARK_TITLE[k]}`);
  }

  function questionBlock(row) {
    const q = row.q;
    const head = el("div", { cls: "qhead" }, el("h2", {}, `Question ${q.id}`),
      el("span", { cls: "pill" }, row.level),
      q.hops !== null ? el("span", { cls: "pill" }, `${q.hops} hop${q.hops === 1 ? "" : "s"}`) : null,
      q.template ? el("span", { cls: "pill" }, `template ${q.template}`) : null,
      q.group ? el("span", { cls: "pill" }, q.group) : null);
    const texts = el("div", { cls: "texts" });
    for (const [level, text] of Object.entries(q.texts)) {
      texts.append(el("div", { cls: "qtext" + (level === row.level ? " current" : "") },
                      el("span", { cls: "label" }, level), el("span", {}, text)));
    }
    const facts = el("dl", { cls: "facts" });
    if (q.options.length) {
      facts.append(el("dt", {}, "Options"), el("dd", {}, el("ol", { cls: "options" }, q.options.map((o, i) =>
        el("li", { cls: i === q.correctOption ? "gold" : "" }, o, i === q.correctOption ? el("span", { cls: "goldtag" }, "correct") : null)))));
    }
    if (q.topics.length) facts.append(el("dt", {}, "Topic"), el("dd", {}, q.topics.map((id) => V.chip(id, "topic"))));
    if (q.answer) {
      const valid = q.validCount > 1
        ? V.details(`${q.validCount} valid answers`, el("div", { cls: "chips" },
            q.valid.map((n) => el("span", { cls: "chip plain" }, n)),
            q.validCount > q.valid.length ? el("span", { cls: "muted" }, ` and ${q.validCount - q.valid.length} more`) : null))
        : null;
      const chip = q.answer.id === null ? el("span", { cls: "chip plain gold" }, q.answer.name) : V.chip(q.answer.id, "gold");
      facts.append(el("dt", {}, "Gold answer"), el("dd", {}, chip, valid));
    }
    if (q.gold) facts.append(el("dt", {}, "Gold path"), el("dd", {}, V.pathText(q.gold, V.goldEdgeSet(q.gold))));
    if (q.goldMetapath) facts.append(el("dt", {}, "Gold meta-path"), el("dd", {}, V.metapath(q.goldMetapath)));
    return el("div", { cls: "card question" }, head, texts, facts);
  }

  function usageLine(r) {
    const u = r.usage || {};
    const parts = [];
    const add = (k, label) => { if (u[k] !== undefined && u[k] !== null) parts.push(el("span", { cls: "kv" }, el("b", {}, V.fmt(u[k])), ` ${label}`)); };
    add("calls", "LLM calls");
    add("prompt_tokens", "prompt tokens");
    add("completion_tokens", "completion tokens");
    if (u.seconds !== undefined) parts.push(el("span", { cls: "kv" }, el("b", {}, Number(u.seconds).toFixed(2)), " s"));
    for (const [k, v] of Object.entries(u)) {
      if (!["calls", "prompt_tokens", "completion_tokens", "seconds"].includes(k)) parts.push(el("span", { cls: "kv" }, el("b", {}, V.fmt(v)), ` ${k}`));
    }
    return el("div", { cls: "usage" }, parts);
  }

  function exploredBlock(r, q) {
    const box = el("div", { cls: "explored" });
    if (!r.explored.length) return el("p", { cls: "muted" }, "Nothing recorded.");
    for (const [depth, ids, total] of r.explored) {
      const goldNode = q.gold && depth < q.gold.n.length ? q.gold.n[depth] : null;
      const hit = goldNode !== null && ids.includes(goldNode);
      const chips = el("div", { cls: "chips" }, ids.map((id) => V.chip(id, id === goldNode ? "gold" : "")),
                       total > ids.length ? el("span", { cls: "muted" }, ` +${(total - ids.length).toLocaleString("en")} more`) : null);
      box.append(el("div", { cls: "depth" },
        el("div", { cls: "depthhead" }, el("b", {}, `depth ${depth}`), ` · ${total.toLocaleString("en")} entities`,
           goldNode !== null ? el("span", { cls: "hit " + (hit ? "yes" : "no") }, hit ? "gold node reached" : "gold node missed") : null),
        chips));
    }
    return box;
  }

  function metapathTable(r, q) {
    if (!r.metapaths.length) return el("p", { cls: "muted" }, "None.");
    const table = el("table", { cls: "mptable" }, el("tr", {}, el("th", {}, "score"), el("th", {}, "meta-path")));
    for (const [mp, score] of r.metapaths) {
      const gold = q.goldMetapath && mp === q.goldMetapath;
      table.append(el("tr", { cls: gold ? "goldrow" : "" },
        el("td", { cls: "num" }, score === null || score === undefined ? "" : V.fmt(score)),
        el("td", {}, V.metapath(mp), gold ? el("span", { cls: "goldtag", title: "the question's gold meta-path" }, "gold") : null)));
    }
    return table;
  }

  // A setting as words, never raw JSON: lists comma-separated, objects as "key value" pairs.
  function settingText(v) {
    if (Array.isArray(v)) return v.map(settingText).join(", ") || "none";
    if (v && typeof v === "object") {
      return Object.entries(v).filter(([, x]) => x !== null && x !== undefined)
        .map(([k, x]) => `${k} ${settingText(x)}`).join(", ") || "none";
    }
    if (typeof v === "boolean") return v ? "yes" : "no";
    return String(v);
  }

  // A method's result in four parts, so that a comparison can line them up row by row.
  function headPart(m, r, q) {
    if (r === null) return [el("h3", { cls: "mhead" }, m), el("p", { cls: "muted" }, "No result for this question at this level.")];
    const facts = [];
    if (r.control) facts.push(el("span", { cls: "kv" }, "control: ", Object.entries(r.control).map(([k, v]) => `${k} ${v}`).join(", ")));
    if (r.answer_source) facts.push(el("span", { cls: "kv" }, `answer read: ${r.answer_source}`));
    if (r.fallback) facts.push(el("span", { cls: "kv warn" }, `fallback: ${r.fallback}`));
    const settings = D.settings && D.settings[m];
    return [
      el("div", { cls: "mhead" }, el("h3", {}, m), badge(r)),
      el("div", { cls: "answer" }, el("span", { cls: "label" }, "answer"), el("span", { cls: "answertext" }, r.answer || "(empty)")),
      usageLine(r), facts.length ? el("div", { cls: "usage" }, facts) : null,
      settings ? V.details("Run settings", el("dl", { cls: "facts" }, Object.entries(settings)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => [el("dt", {}, k), el("dd", {}, settingText(v))]))) : null,
      // a method that reads no meta-paths (PathMind, the LLM baselines) shows no empty section
      r.metapaths.length ? V.section(`Meta-paths (${r.metapaths.length})`, metapathTable(r, q)) : null,
    ];
  }

  const pathsPart = (r, q) => V.pathFigure(r.paths, { gold: q.gold, answerName: r.answer, total: r.pathCount });

  function morePart(r) {
    const out = [];
    if (r.prioritized) out.push(V.section(`Prioritized entities (${r.prioritized.length})`,
      el("div", { cls: "chips" }, r.prioritized.map((id) => V.chip(id)))));
    if (r.retrieved) {
      const body = Array.isArray(r.retrieved) && r.retrieved.every((x) => x && typeof x === "object")
        ? el("table", { cls: "mptable" }, el("tr", {}, ...Object.keys(r.retrieved[0] || {}).map((k) => el("th", {}, k))),
             r.retrieved.map((x) => el("tr", {}, Object.values(x).map((v) => el("td", {}, V.fmt(v))))))
        : el("pre", {}, JSON.stringify(r.retrieved, null, 1));
      out.push(V.details(`Retrieved training queries (${Array.isArray(r.retrieved) ? r.retrieved.length : 1})`, body));
    }
    if (r.raw) out.push(V.details("Raw LLM output", el("pre", {}, r.raw)));
    if (r.extra) {
      out.push(V.details(`Other fields (${Object.keys(r.extra).length})`, el("dl", { cls: "facts" },
        Object.entries(r.extra).map(([k, v]) => [el("dt", {}, k), el("dd", {}, el("pre", {}, typeof v === "string" ? v : JSON.stringify(v, null, 1)))]))));
    }
    return out;
  }

  function oneMethod(m, row) {
    const r = result(row, m);
    const card = el("div", { cls: "card method", "data-method": m }, headPart(m, r, row.q));
    if (r !== null) card.append(V.section(`Paths (${r.pathCount})`, pathsPart(r, row.q)),
                                V.section("Explored entities per depth", exploredBlock(r, row.q)), ...morePart(r));
    return el("div", { cls: "methods n1", id: "methods" }, card);
  }

  /* Two methods: heads and meta-paths side by side; the two drawings in one full-width row
   * (beside each other when both fit, else one above the other); then explored entities
   * and the rest side by side again. */
  function twoMethods(ms, row) {
    const rs = ms.map((m) => result(row, m));
    const grid = el("div", { cls: "methods n2", id: "methods" });
    ms.forEach((m, i) => grid.append(el("div", { cls: "card method", "data-method": m }, headPart(m, rs[i], row.q))));
    const figures = el("div", { cls: "figrow" });
    ms.forEach((m, i) => {
      if (rs[i] === null) return;
      const fig = pathsPart(rs[i], row.q);
      const svgEl = fig.querySelector("svg");
      const cell = el("div", { cls: "mfig", "data-method": m }, el("h3", {}, `${m} · ${rs[i].pathCount} paths`), fig);
      cell.style.flexBasis = svgEl ? svgEl.style.minWidth : "300px";
      figures.append(cell);
    });
    grid.append(el("div", { cls: "card span2" }, figures));
    ms.forEach((m, i) => grid.append(el("div", { cls: "card mcell", "data-method": m }, rs[i] === null ? null
      : [V.section("Explored entities per depth", exploredBlock(rs[i], row.q)), morePart(rs[i])])));
    return grid;
  }

  function renderDetail(row) {
    state.sel = row ? row.key : "";
    V.writeHash(state);
    if (!row) {
      detail.replaceChildren(el("p", { cls: "empty" }, "No answers match these filters."));
      return;
    }
    detail.replaceChildren(questionBlock(row), state.vs ? twoMethods([state.m, state.vs], row) : oneMethod(state.m, row));
    detail.scrollTop = 0;
  }

  applyFilters();
  document.body.dataset.ready = "1";
  window.viewReadyAt = performance.now();
})();
