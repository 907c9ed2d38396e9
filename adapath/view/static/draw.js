/* adapath view: shared helpers and the path drawing (our own SVG, a layered layout). */
"use strict";

const VIEW = (() => {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const parseStart = performance.now();
  const data = JSON.parse(document.getElementById("view-data").textContent);
  const timings = { parse: performance.now() - parseStart };

  // Stable colours for PrimeKG's node types; any other type takes one by its name's hash.
  const TYPE_COLOURS = {
    "gene/protein": "#4e79a7", "drug": "#e15759", "disease": "#f28e2b",
    "effect/phenotype": "#b07aa1", "anatomy": "#9c755f", "biological_process": "#59a14f",
    "molecular_function": "#76b7b2", "cellular_component": "#edc948", "pathway": "#ff9da7",
    "exposure": "#8c8c8c",
  };
  const SPARE = ["#17becf", "#bcbd22", "#7f7f7f", "#d62728", "#9467bd", "#2ca02c", "#1f77b4"];

  function typeColour(typeName) {
    if (TYPE_COLOURS[typeName]) return TYPE_COLOURS[typeName];
    let h = 0;
    for (const ch of String(typeName)) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    return SPARE[h % SPARE.length];
  }

  function tint(hex, amount) {  // mix a colour with white
    const n = parseInt(hex.slice(1), 16);
    const mix = (c) => Math.round(c + (255 - c) * amount);
    return `rgb(${mix(n >> 16)}, ${mix((n >> 8) & 255)}, ${mix(n & 255)})`;
  }

  function node(id) {
    const entry = data.nodes[String(id)];
    return entry ? { id, name: entry[0], type: data.types[entry[1]] || "" }
                 : { id, name: `#${id}`, type: "" };
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "cls") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    // children may nest arrays of nodes to any depth (a helper's list inside a list): all unpacked
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children.flat(Infinity)) if (c) e.append(c);
    return e;
  }

  function dot(typeName) {
    const d = el("span", { cls: "dot", title: typeName });
    d.style.background = typeColour(typeName);
    return d;
  }

  function chip(id, extraClass) {
    const n = node(id);
    return el("span", { cls: "chip" + (extraClass ? " " + extraClass : ""),
                        title: `${n.name} (${n.type || "unknown type"}, id ${id})`,
                        "data-node": id }, dot(n.type), n.name);
  }

  function typeChip(typeName) {
    const c = el("span", { cls: "tchip" }, typeName);
    c.style.background = tint(typeColour(typeName), 0.78);
    c.style.borderColor = typeColour(typeName);
    return c;
  }

  // "type0 -[rel1]- type1 ..." as coloured type chips joined by relation names.
  function metapath(text) {
    const pieces = String(text).trim().split(/\s*-\[(.*?)\]-\s*/);
    const out = el("span", { cls: "metapath", title: text });
    pieces.forEach((p, i) => out.append(i % 2 === 0 ? typeChip(p) : el("span", { cls: "rel" }, p)));
    return out;
  }

  // One path as text: names joined by relations (full names, never cut); a step walked
  // against its stored edge (chain.b) reads "← relation".
  function pathText(chain, goldEdges) {
    const line = el("div", { cls: "pathline" });
    const back = new Set(chain.b || []);
    chain.n.forEach((id, i) => {
      if (i > 0) {
        const gold = goldEdges && goldEdges.has(edgeKey(chain.n[i - 1], id, chain.r[i - 1]));
        const reversed = back.has(i - 1);
        line.append(el("span", { cls: "rel" + (gold ? " gold" : "") + (reversed ? " reversed" : ""),
                                 title: reversed ? `stored the other way: ${node(id).name} ${chain.r[i - 1]} `
                                                   + node(chain.n[i - 1]).name : null },
                       (reversed ? "← " : "") + chain.r[i - 1]));
      }
      line.append(chip(id));
    });
    return line;
  }

  function edgeKey(a, b, r) {
    return (String(a) < String(b) ? `${a}|${b}` : `${b}|${a}`) + "|" + r;
  }

  function goldEdgeSet(gold) {
    const s = new Set();
    if (gold) for (let i = 1; i < gold.n.length; i++) s.add(edgeKey(gold.n[i - 1], gold.n[i], gold.r[i - 1]));
    return s;
  }

  function clip(text, n) {
    return text.length > n ? text.slice(0, n - 1) + "…" : text;
  }

  // Text widths as the page draws them (a canvas measures with the page's own font), so a
  // name or a label is cut to the room it has rather than to a count of characters.
  let measurer = null;
  function textWidth(text, font) {
    if (!measurer) measurer = document.createElement("canvas").getContext("2d");
    measurer.font = `${font} ${getComputedStyle(document.body).fontFamily}`;
    return measurer.measureText(text).width;
  }

  function fit(text, room, font) {
    if (textWidth(text, font) <= room) return text;
    let lo = 0, hi = text.length;  // the longest cut that fits with its ellipsis
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (textWidth(text.slice(0, mid).trimEnd() + "…", font) <= room) lo = mid; else hi = mid - 1;
    }
    return text.slice(0, lo).trimEnd() + "…";
  }

  // The t at which a left-to-right cubic reaches x (its x grows with t).
  function bezierAt(controls, x) {
    let lo = 0, hi = 1;
    for (let i = 0; i < 30; i++) {
      const mid = (lo + hi) / 2;
      if (bezierPoint(mid, ...controls)[0] < x) lo = mid; else hi = mid;
    }
    return (lo + hi) / 2;
  }

  function bezierPoint(t, p0, p1, p2, p3) {
    const u = 1 - t;
    return [0, 1].map((k) => u * u * u * p0[k] + 3 * u * u * t * p1[k] + 3 * u * t * t * p2[k] + t * t * t * p3[k]);
  }

  const NODE_W = 178, NODE_H = 40, GAP_X = 136, GAP_Y = 14, PAD = 12;
  const TEXT_X = 14, TEXT_ROOM = NODE_W - TEXT_X - 8;  // a node's text: after its colour bar, inside its box
  const LABEL_MARGIN = 6;  // an edge label keeps this far from the boxes
  const NAME_FONT = "600 12px", TYPE_FONT = "10.5px", LABEL_FONT = "11px", GOLD_LABEL_FONT = "600 11px";

  /* Paths (and the gold path, when known) as one layered graph: a node's column is its
   * smallest position along any path; within a column nodes follow the mean row of their
   * neighbours in the column before (one barycentre sweep). */
  function drawPaths(chains, opts) {
    opts = opts || {};
    const gold = opts.gold || null;
    const answerName = (opts.answerName || "").trim().toLowerCase();
    const all = chains.map((c) => ({ c, gold: false }));
    if (gold) all.push({ c: gold, gold: true });
    const column = new Map(), seen = [];
    for (const { c } of all) c.n.forEach((id, i) => {
      if (!column.has(id)) seen.push(id);
      if (!column.has(id) || column.get(id) > i) column.set(id, i);
    });
    const edges = new Map();
    for (const { c, gold: isGold } of all) {
      const back = new Set(c.b || []);
      for (let i = 1; i < c.n.length; i++) {
        const key = edgeKey(c.n[i - 1], c.n[i], c.r[i - 1]);
        const e = edges.get(key) || { a: c.n[i - 1], b: c.n[i], rel: c.r[i - 1], returned: false, gold: false };
        if (isGold) e.gold = true; else e.returned = true;
        if (back.has(i - 1)) e.storedFrom = c.n[i];  // the edge is stored c.n[i] -> c.n[i - 1]
        edges.set(key, e);
      }
    }
    const sparse = [];
    for (const id of seen) (sparse[column.get(id)] = sparse[column.get(id)] || []).push(id);
    // A depth where no node stands first (each one there is nearer the start on another path)
    // would leave an empty column, and a hole that makes the drawing's height NaN: close it.
    const columns = sparse.filter(Boolean);
    columns.forEach((ids, k) => ids.forEach((id) => column.set(id, k)));
    const row = new Map();
    columns.forEach((ids, k) => {
      if (k > 0) {
        const centre = new Map();
        for (const id of ids) {
          const rows = [];
          for (const e of edges.values()) {
            const other = e.a === id ? e.b : e.b === id ? e.a : null;
            if (other !== null && column.get(other) === k - 1) rows.push(row.get(other));
          }
          centre.set(id, rows.length ? rows.reduce((s, v) => s + v, 0) / rows.length : Infinity);
        }
        ids.sort((x, y) => centre.get(x) - centre.get(y));
      }
      ids.forEach((id, i) => row.set(id, i));
    });
    const tallest = Math.max(...columns.map((ids) => ids.length));
    const height = tallest * (NODE_H + GAP_Y) - GAP_Y + 2 * PAD;
    const width = columns.length * (NODE_W + GAP_X) - GAP_X + 2 * PAD;
    const pos = new Map();
    columns.forEach((ids, k) => {
      const offset = (tallest - ids.length) * (NODE_H + GAP_Y) / 2;
      ids.forEach((id, i) => pos.set(id, { x: PAD + k * (NODE_W + GAP_X), y: PAD + offset + i * (NODE_H + GAP_Y) }));
    });
    const goldNodes = new Set(gold ? gold.n : []);
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "paths",
                              role: "img", "aria-label": "paths" });
    const under = svg("g", { class: "gold-under" }), lines = svg("g"), labels = svg("g"), boxes = svg("g");
    root.append(under, lines, labels, boxes);
    const degree = new Map();
    for (const e of edges.values()) for (const id of [e.a, e.b]) degree.set(id, (degree.get(id) || 0) + 1);
    const pairCount = new Map();
    for (const e of edges.values()) {
      let p = pos.get(e.a), q = pos.get(e.b), left = e.a, right = e.b;
      if (p.x > q.x) [p, q, left, right] = [q, p, right, left];
      const sameColumn = p.x === q.x;  // a loop out to the right
      const x1 = p.x + NODE_W, y1 = p.y + NODE_H / 2;
      const x2 = sameColumn ? q.x + NODE_W : q.x, y2 = q.y + NODE_H / 2;
      const bend = sameColumn ? 60 : (x2 - x1) / 2;
      const d = `M${x1},${y1} C${x1 + bend},${y1} ${x2 + (sameColumn ? bend : -bend)},${y2} ${x2},${y2}`;
      if (e.gold) under.append(svg("path", { d, class: "gold-edge" }));
      lines.append(svg("path", { d, class: e.returned ? "edge" : "edge missed" }));
      const pair = edgeKey(e.a, e.b, "");
      const nth = pairCount.get(pair) || 0;
      pairCount.set(pair, nth + 1);
      // The label sits in one gap between columns, clear of the boxes: the gap right of the
      // left end (an edge may span several columns, whose boxes stand in its other gaps).
      // Within it, where the edges have spread out: near the end with fewer edges.
      const controls = [[x1, y1], [x1 + bend, y1], [x2 + (sameColumn ? bend : -bend), y2], [x2, y2]];
      const gapLeft = x1 + LABEL_MARGIN, gapRight = (sameColumn ? x1 + GAP_X : Math.min(x2, x1 + GAP_X)) - LABEL_MARGIN;
      const font = e.gold ? GOLD_LABEL_FONT : LABEL_FONT;
      // an edge known to be stored right to left as drawn reads "← relation"
      const label = fit((!sameColumn && e.storedFrom === right ? "← " : "") + e.rel, gapRight - gapLeft, font);
      const half = textWidth(label, font) / 2;
      const fanOut = degree.get(left) - degree.get(right);
      let t = sameColumn ? 0.5 : fanOut > 0 ? 0.62 : fanOut < 0 ? 0.38 : 0.5;
      if (!sameColumn && x2 - x1 > GAP_X) t = bezierAt(controls, x1 + GAP_X / 2);
      const [mx, my0] = bezierPoint(t, ...controls);
      const my = my0 + nth * 13;
      const lx = Math.min(Math.max(mx, gapLeft + half), gapRight - half);
      labels.append(svg("text", { x: lx, y: my + 4, class: "edge-label" + (e.gold ? " gold" : ""),
                                  "text-anchor": "middle", text: label },
                        svg("title", { text: e.rel })));
    }
    for (const [id, { x, y }] of pos) {
      const n = node(id);
      const colour = typeColour(n.type);
      const isAnswer = answerName && n.name.trim().toLowerCase() === answerName;
      const g = svg("g", { class: "node" + (goldNodes.has(id) ? " on-gold" : "") + (isAnswer ? " answer" : ""),
                           transform: `translate(${x},${y})`, "data-node": id });
      g.append(svg("title", { text: `${n.name}\n${n.type || "unknown type"} · id ${id}` }));
      g.append(svg("rect", { width: NODE_W, height: NODE_H, rx: 7, fill: tint(colour, 0.82), stroke: colour, class: "box" }));
      g.append(svg("rect", { width: 6, height: NODE_H, rx: 3, fill: colour }));
      g.append(svg("text", { x: TEXT_X, y: 17, class: "node-name", text: fit(n.name, TEXT_ROOM, NAME_FONT) }));
      g.append(svg("text", { x: TEXT_X, y: 32, class: "node-type", text: fit(n.type || "?", TEXT_ROOM, TYPE_FONT) }));
      boxes.append(g);
    }
    return root;
  }

  function legend(typeNames, withGold) {
    const box = el("div", { cls: "legend" });
    for (const t of [...new Set(typeNames)].sort()) box.append(el("span", { cls: "item" }, dot(t), t || "unknown"));
    if (withGold) box.append(el("span", { cls: "item" }, el("span", { cls: "swatch gold" }), "gold path"));
    box.append(el("span", { cls: "item" }, el("span", { cls: "swatch answer" }), "answer"));
    return box;
  }

  // A drawn graph with its legend and, under it, every path written out with full names.
  function pathFigure(chains, opts) {
    opts = opts || {};
    const fig = el("figure", { cls: "pathfig" });
    if (!chains.length && !opts.gold) {
      fig.append(el("p", { cls: "muted" }, "No paths."));
      return fig;
    }
    const shown = chains.slice(0, opts.max || 40);
    const drawing = drawPaths(shown, opts);
    // Shrink to fit a narrow column, but never below 80% (scroll sideways instead).
    drawing.style.minWidth = `${Math.round(0.8 * drawing.width.baseVal.value)}px`;
    const scroller = el("div", { cls: "svgwrap" }, drawing);
    const types = [];
    for (const c of shown.concat(opts.gold ? [opts.gold] : [])) for (const id of c.n) types.push(node(id).type);
    fig.append(legend(types, !!opts.gold), scroller);
    const list = el("div", { cls: "pathlist" });
    const golds = goldEdgeSet(opts.gold);
    shown.forEach((c, i) => {
      const line = pathText(c, golds);
      line.prepend(el("span", { cls: "num" }, opts.labels ? opts.labels[i] : `${i + 1}`));
      list.append(line);
    });
    if (opts.total && opts.total > shown.length) list.append(el("p", { cls: "muted" }, `${opts.total - shown.length} more paths not shown`));
    fig.append(list);
    return fig;
  }

  function section(title, ...body) {
    return el("section", { cls: "block" }, el("h3", {}, title), ...body);
  }

  function details(summary, ...body) {
    return el("details", {}, el("summary", {}, summary), ...body);
  }

  function option(value, label, selected) {
    return el("option", { value, selected: selected ? "selected" : null }, label);
  }

  function select(name, label, options, value, onchange) {
    const s = el("select", { name, id: `f-${name}`, onchange });
    for (const [v, l] of options) s.append(option(v, l, String(v) === String(value)));
    return el("label", { cls: "field" }, el("span", {}, label), s);
  }

  function readHash() {
    const out = {};
    for (const part of location.hash.replace(/^#/, "").split("&")) {
      if (!part) continue;
      const [k, v] = part.split("=");
      out[decodeURIComponent(k)] = decodeURIComponent(v || "");
    }
    return out;
  }

  function writeHash(state) {
    const text = Object.entries(state).filter(([, v]) => v !== "" && v !== null && v !== undefined)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
    try { history.replaceState(null, "", "#" + text); } catch (err) { /* some file:// contexts refuse */ }
  }

  /* A scrolling list that keeps only the visible rows in the DOM, so thousands of items
   * cost nothing until they scroll into view. */
  function virtualList(container, rowHeight, renderRow) {
    const spacer = el("div", { cls: "vspacer" });
    container.append(spacer);
    let items = [], drawn = new Map();
    function paint() {
      const top = container.scrollTop, h = container.clientHeight || 600;
      const first = Math.max(0, Math.floor(top / rowHeight) - 5);
      const last = Math.min(items.length, Math.ceil((top + h) / rowHeight) + 5);
      for (const [i, e] of drawn) if (i < first || i >= last) { e.remove(); drawn.delete(i); }
      for (let i = first; i < last; i++) {
        if (drawn.has(i)) continue;
        const e = renderRow(items[i], i);
        e.style.top = `${i * rowHeight}px`;
        e.style.height = `${rowHeight}px`;
        spacer.append(e);
        drawn.set(i, e);
      }
    }
    container.addEventListener("scroll", paint, { passive: true });
    window.addEventListener("resize", paint);
    return {
      set(newItems) {
        items = newItems;
        for (const e of drawn.values()) e.remove();
        drawn.clear();
        spacer.style.height = `${items.length * rowHeight}px`;
        paint();
      },
      refresh() { for (const e of drawn.values()) e.remove(); drawn.clear(); paint(); },
      scrollTo(i) {
        const top = i * rowHeight, h = container.clientHeight;
        if (top < container.scrollTop || top + rowHeight > container.scrollTop + h) container.scrollTop = Math.max(0, top - h / 2);
        paint();
      },
    };
  }

  function fmt(v) {
    if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(3);
    return String(v);
  }

  return { data, el, svg, node, chip, dot, typeColour, tint, typeChip, metapath, pathText, pathFigure,
           drawPaths, legend, section, details, select, option, readHash, writeHash, virtualList,
           edgeKey, goldEdgeSet, fmt, clip, timings };
})();
