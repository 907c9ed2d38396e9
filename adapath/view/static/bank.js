/* adapath bank view: meta-path counts by hop and topic type, and sampled registered paths. */
"use strict";

(() => {
  const V = VIEW, D = V.data, el = V.el;
  if (D.kind !== "bank") return;
  const M = D.manifest || {};
  const n = (v) => Number(v || 0).toLocaleString("en");

  const summary = document.getElementById("summary");
  summary.append(
    el("span", { cls: "stat" }, el("b", {}, `${n(M.queries_done)} / ${n(M.queries_total)}`), " queries",
       M.complete ? "" : el("span", { cls: "badge no" }, "partial")),
    el("span", { cls: "stat" }, el("b", {}, n(D.totals.paths)), " paths"),
    el("span", { cls: "stat" }, el("b", {}, n(D.totals.metapaths)), " distinct meta-paths"),
    el("span", { cls: "stat" }, el("b", {}, n(D.totals.queries)), " queries with paths"));

  const app = document.getElementById("app");
  app.classList.add("bankapp");

  // -------------------------------------------------------------- counts by hop and topic type
  function bar(value, max) {
    const outer = el("span", { cls: "bar" }), inner = el("span", { cls: "fill" });
    inner.style.width = `${max ? (100 * value / max).toFixed(1) : 0}%`;
    outer.append(inner);
    return outer;
  }

  const hopMax = Math.max(1, ...D.byHop.map((r) => r[1]));
  const hopTable = el("table", { cls: "counts", id: "by-hop" },
    el("tr", {}, el("th", { cls: "num" }, "hop"), el("th", { cls: "num" }, "paths"), el("th", {}), el("th", { cls: "num" }, "queries")),
    [...D.byHop].sort((a, b) => a[0] - b[0]).map(([hop, paths, queries]) =>
      el("tr", {}, el("td", { cls: "num" }, hop), el("td", { cls: "num" }, n(paths)), el("td", { cls: "barcell" }, bar(paths, hopMax)),
         el("td", { cls: "num" }, n(queries)))));

  const topicTypes = [...new Set(D.byTopicHop.map((r) => r[0]))].sort();
  const hopValues = [...new Set(D.byHop.map((r) => r[0]))].sort((a, b) => a - b);
  const cell = new Map(D.byTopicHop.map(([t, h, paths]) => [`${t}|${h}`, paths]));
  const cellMax = Math.max(1, ...D.byTopicHop.map((r) => r[2]));
  const matrix = el("table", { cls: "counts matrix", id: "by-topic" },
    el("tr", {}, el("th", {}, "topic type"), hopValues.map((h) => el("th", { cls: "num" }, `hop ${h}`))),
    topicTypes.map((t) => el("tr", {}, el("td", {}, V.typeChip(t)), hopValues.map((h) => {
      const v = cell.get(`${t}|${h}`) || 0;
      const td = el("td", { cls: "num heat" }, v ? n(v) : "");
      if (v) td.style.background = `rgba(78, 121, 167, ${(0.08 + 0.5 * v / cellMax).toFixed(3)})`;
      return td;
    }))));

  const mpState = { hop: "", topic: "", all: false };
  const mpBody = el("div", { id: "metapaths" });
  function drawMetapaths() {
    const pick = D.byMetapath.filter(([, hop, topic]) =>
      (!mpState.hop || String(hop) === mpState.hop) && (!mpState.topic || topic === mpState.topic));
    const top = mpState.all ? pick : pick.slice(0, 25);
    const max = Math.max(1, ...top.map((r) => r[3]));
    const table = el("table", { cls: "counts" },
      el("tr", {}, el("th", { cls: "num" }, "paths"), el("th", {}), el("th", { cls: "num" }, "queries"), el("th", { cls: "num" }, "hop"), el("th", {}, "meta-path")),
      top.map(([mp, hop, , paths, queries]) => el("tr", {},
        el("td", { cls: "num" }, n(paths)), el("td", { cls: "barcell" }, bar(paths, max)), el("td", { cls: "num" }, n(queries)),
        el("td", { cls: "num" }, hop), el("td", {}, V.metapath(mp)))));
    const more = pick.length > top.length
      ? el("button", { type: "button", onclick: () => { mpState.all = true; drawMetapaths(); } }, `show all ${pick.length}`)
      : null;
    mpBody.replaceChildren(el("p", { cls: "count", id: "mp-count", "data-count": pick.length }, `${pick.length} meta-paths`), table, more);
  }
  const mpFilters = el("div", { cls: "filters inline" },
    V.select("mphop", "Hop", [["", "all"], ...hopValues.map((h) => [h, `${h}`])], "", (ev) => { mpState.hop = ev.target.value; drawMetapaths(); }),
    V.select("mptopic", "Topic type", [["", "all"], ...topicTypes.map((t) => [t, t])], "", (ev) => { mpState.topic = ev.target.value; drawMetapaths(); }));
  drawMetapaths();

  // -------------------------------------------------------------- sampled queries and their paths
  const sampleState = { hop: "", topic: "" };
  const sampleList = el("div", { cls: "samplelist", id: "samples" });
  const sampleDetail = el("div", { cls: "sampledetail", id: "sample-detail" });
  let current = null;

  function showSample(s) {
    current = s;
    for (const e of sampleList.children) e.classList.toggle("selected", e.dataset.key === s.id);
    const groups = new Map();
    for (const p of s.paths) {
      const key = `${p.pair} pair · ${p.hop} hop${p.hop === 1 ? "" : "s"}`;
      (groups.get(key) || groups.set(key, []).get(key)).push(p);
    }
    const texts = el("div", { cls: "texts" }, Object.entries(s.texts).map(([lv, t]) =>
      el("div", { cls: "qtext" }, el("span", { cls: "label" }, lv), el("span", {}, t))));
    const facts = el("dl", { cls: "facts" });
    if (s.topic !== null) facts.append(el("dt", {}, "Topic"), el("dd", {}, V.chip(s.topic, "topic")));
    if (s.answer !== null) facts.append(el("dt", {}, "Answer"), el("dd", {}, V.chip(s.answer, "gold")));
    if (s.template) facts.append(el("dt", {}, "Template"), el("dd", {}, `${s.template} (${s.hops} hops)`));
    const blocks = [];
    for (const [key, paths] of groups) {
      const first = paths[0];
      blocks.push(V.section(`${key} · corridor K ${first.k}${first.fallback ? ` · fallback ${first.fallback}` : ""}`,
        V.pathFigure(paths, { labels: paths.map((p) => `#${p.rank} · cost ${p.cost}`),
                              answerName: s.answer !== null ? V.node(s.answer).name : "" })));
    }
    if (!blocks.length) blocks.push(el("p", { cls: "muted" }, "No paths registered."));
    sampleDetail.replaceChildren(el("div", { cls: "card question" },
      el("div", { cls: "qhead" }, el("h2", {}, `Training query ${s.id}`)), texts, facts), ...blocks);
  }

  function drawSamples() {
    const pick = D.samples.filter((s) =>
      (!sampleState.hop || s.paths.some((p) => String(p.hop) === sampleState.hop)) &&
      (!sampleState.topic || s.topicType === sampleState.topic ||
       (s.topicType === null && s.paths.some((p) => V.node(p.n[0]).type === sampleState.topic))));
    sampleList.replaceChildren(...pick.map((s) => el("div", {
      cls: "row static", "data-key": s.id, onclick: () => showSample(s) },
      el("div", { cls: "rowhead" }, el("span", { cls: "rowmeta" },
        [s.id, s.topicType && s.answerType ? `${s.topicType} → ${s.answerType}` : null, `${s.paths.length} paths`]
          .filter(Boolean).join(" · "))),
      el("div", { cls: "rowtext" }, s.texts.explicit || Object.values(s.texts)[0] || ""))));
    const keep = pick.includes(current) ? current : pick[0];
    if (keep) showSample(keep); else sampleDetail.replaceChildren(el("p", { cls: "empty" }, "No sampled query matches."));
  }

  const sampleFilters = el("div", { cls: "filters inline" },
    V.select("shop", "Hop", [["", "all"], ...hopValues.map((h) => [h, `${h}`])], "", (ev) => { sampleState.hop = ev.target.value; drawSamples(); }),
    V.select("stopic", "Topic type", [["", "all"], ...topicTypes.map((t) => [t, t])], "", (ev) => { sampleState.topic = ev.target.value; drawSamples(); }));

  const params = M.parameters ? V.details("Build parameters",
    el("dl", { cls: "facts" }, Object.entries(M.parameters).map(([k, v]) => [el("dt", {}, k), el("dd", {}, JSON.stringify(v))]))) : null;

  app.replaceChildren(
    el("div", { cls: "bankgrid" },
      el("div", { cls: "card" }, el("h2", {}, "Paths per hop"), hopTable, params),
      el("div", { cls: "card" }, el("h2", {}, "Paths by topic type and hop"), matrix)),
    el("div", { cls: "card" }, el("h2", {}, "Meta-paths"), mpFilters, mpBody),
    el("div", { cls: "card" }, el("h2", {}, `Sample of registered paths (${D.samples.length} queries)`),
       D.named ? null : el("p", { cls: "muted" }, "Names need the graph: pass --kg to show them."),
       sampleFilters,
       el("div", { cls: "samplegrid" }, sampleList, sampleDetail)));
  drawSamples();
  document.body.dataset.ready = "1";
  window.viewReadyAt = performance.now();
})();
