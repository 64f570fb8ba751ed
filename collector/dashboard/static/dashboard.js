// The ldp-telemetry dashboard: talks only to the collector's admin JSON API, with the admin key from this tab's
// sessionStorage in the Authorization header. Every value is written with textContent (never parsed as HTML); plots
// are SVG built here. A campaign's panel is drawn generically: its kind's report side describes it.
"use strict";
(() => {
  const KEY = "ldpAdminKey";
  const POLL_MS = 3000;
  // Okabe-Ito: distinguishable with every common colour-vision deficiency
  const PALETTE = ["#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000"];
  const SVG = "http://www.w3.org/2000/svg";
  const main = document.getElementById("main");
  const status = document.getElementById("status");
  const login = document.getElementById("login");
  let timer = null;
  let listState = { filter: "", sort: "name", descending: false };

  class Refused extends Error {}
  class Unreachable extends Error {}

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value);
    }
    for (const child of children) if (child != null) node.append(child);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text != null) node.textContent = text;
    return node;
  }
  function show(message, isError) {
    status.textContent = message;
    status.className = isError ? "error" : "";
  }
  function tick(value, step) {
    const digits = Math.max(0, -Math.floor(Math.log10(step)));
    return Math.abs(step) >= 1e6 ? value.toExponential(1) : value.toFixed(Math.min(digits, 10));
  }
  function number(value) {
    if (value === null || value === undefined) return "-";
    if (typeof value !== "number") return String(value);
    if (Number.isInteger(value)) return value.toLocaleString("en-US");
    const magnitude = Math.abs(value);
    return magnitude !== 0 && (magnitude >= 1e6 || magnitude < 1e-3) ? value.toExponential(3) : value.toPrecision(4);
  }

  async function api(path, init) {
    const key = sessionStorage.getItem(KEY);
    if (!key) throw new Refused("enter the admin key");
    const headers = Object.assign({ Authorization: "Bearer " + key }, (init && init.headers) || {});
    let response;
    try {
      response = await fetch(path, Object.assign({}, init, { headers, cache: "no-store" }));
    } catch (error) {
      throw new Unreachable("the collector is unreachable: " + error.message);
    }
    const body = await response.json().catch(() => null);
    if (response.status === 401 || response.status === 403) {
      throw new Refused("the collector refused the key (HTTP " + response.status + "): " +
        ((body && body.detail) || ""));
    }
    if (!response.ok) {
      const error = new Error((body && body.detail) || "HTTP " + response.status);
      error.problem = body || {};
      error.status = response.status;
      throw error;
    }
    return body;
  }

  function failed(error) {
    if (error instanceof Refused) {
      show(error.message, true);
      login.hidden = false;
      document.getElementById("key").focus();
    } else if (error instanceof Unreachable) {
      show(error.message + " (retrying)", true);
    } else {
      show(error.message, true);
    }
  }

  function table(columns, rows, options) {
    const numeric = (options && options.numeric) || [];
    const head = el("tr", {}, ...columns.map((name, i) => el("th", { scope: "col", class: numeric[i] ? "num" : "" },
      (options && options.header) ? options.header(name, i) : name)));
    const body = rows.map((cells) => el("tr", {}, ...cells.map((cell, i) =>
      el("td", { class: numeric[i] ? "num" : "" }, cell instanceof Node ? cell : document.createTextNode(
        cell === null || cell === undefined ? "-" : typeof cell === "object" ? JSON.stringify(cell) : String(cell))))));
    return el("table", (options && options.id) ? { id: options.id } : {}, el("thead", {}, head), el("tbody", {}, ...body));
  }
  function notes(lines) {
    return lines && lines.length ? el("ul", { class: "notes" }, ...lines.map((line) => el("li", { text: line }))) : null;
  }

  // -- plots ----------------------------------------------------------------------------------------------------
  function scale(domain, range) {
    const [d0, d1] = domain[0] === domain[1] ? [domain[0] - 1, domain[1] + 1] : domain;
    return (value) => range[0] + ((value - d0) / (d1 - d0)) * (range[1] - range[0]);
  }
  function ticks(low, high, count) {
    if (low === high) { low -= 1; high += 1; }
    const step = Math.pow(10, Math.floor(Math.log10((high - low) / count)));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => (high - low) / s <= count) || step * 10;
    const out = [];
    out.step = nice;
    for (let t = Math.ceil(low / nice) * nice; t <= high + nice * 1e-9; t += nice) out.push(+t.toPrecision(12));
    return out;
  }
  function extent(values) {
    const finite = values.filter((v) => typeof v === "number" && Number.isFinite(v));
    return finite.length ? [Math.min(0, ...finite), Math.max(0, ...finite)] : [0, 1];
  }
  // Horizontal error bars: one row per label (linear axis: zero is on it)
  function intervalPlot(description) {
    const points = description.points;
    const width = 720, left = 170, right = 30, top = 10, row = 26, height = top + row * points.length + 44;
    const [low, high] = extent(points.flatMap((p) => [p.low, p.high, p.estimate]));
    const x = scale([low, high], [left, width - right]);
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": description.title });
    root.append(svg("title", {}, description.title));
    const axisY = top + row * points.length + 6;
    const xticks = ticks(low, high, 6);
    for (const t of xticks) {
      root.append(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: top, y2: axisY }));
      root.append(svg("text", { x: x(t), y: axisY + 16, "text-anchor": "middle" }, tick(t, xticks.step)));
    }
    root.append(svg("line", { class: "axis", x1: left, x2: width - right, y1: axisY, y2: axisY, stroke: "#1b1b1b" }));
    root.append(svg("text", { x: (left + width - right) / 2, y: height - 4, "text-anchor": "middle" },
      description.xlabel || "estimate"));
    points.forEach((p, i) => {
      const y = top + row * i + row / 2;
      root.append(svg("text", { x: left - 8, y: y + 4, "text-anchor": "end" }, p.label.length > 24 ?
        p.label.slice(0, 23) + "…" : p.label));
      if (p.low !== null && p.high !== null) {
        root.append(svg("line", { class: "bar", x1: x(p.low), x2: x(p.high), y1: y, y2: y, stroke: PALETTE[0] }));
        for (const end of [p.low, p.high]) {
          root.append(svg("line", { class: "bar", x1: x(end), x2: x(end), y1: y - 6, y2: y + 6, stroke: PALETTE[0] }));
        }
      }
      if (p.estimate !== null) root.append(svg("circle", { class: "dot", cx: x(p.estimate), cy: y, r: 4, fill: PALETTE[0] }));
    });
    return root;
  }
  // Per-day lines with their interval bands
  function seriesPlot(series) {
    const days = series.lines.length ? series.lines[0].points.map((p) => p[0]) : [];
    const width = 720, left = 70, right = 20, top = 10, bottom = 50, height = 300;
    const values = series.lines.flatMap((line) => line.points.flatMap((p) => [p[1], p[2], p[3]]));
    const [low, high] = extent(values);
    const x = scale([0, Math.max(1, days.length - 1)], [left, width - right]);
    const y = scale([low, high], [height - bottom, top]);
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": `${series.ylabel} per day` });
    root.append(svg("title", {}, `${series.ylabel} per day (${series.shown}), with 95% bands`));
    const yticks = ticks(low, high, 6);
    for (const t of yticks) {
      root.append(svg("line", { class: "grid", x1: left, x2: width - right, y1: y(t), y2: y(t) }));
      root.append(svg("text", { x: left - 6, y: y(t) + 4, "text-anchor": "end" }, tick(t, yticks.step)));
    }
    const every = Math.max(1, Math.ceil(days.length / 8));
    days.forEach((day, i) => {
      if (i % every === 0 || i === days.length - 1) {
        root.append(svg("text", { x: x(i), y: height - bottom + 16,
          "text-anchor": days.length > 1 && i === days.length - 1 ? "end" : i === 0 && days.length > 1 ? "start" : "middle" }, day));
      }
    });
    root.append(svg("line", { x1: left, x2: width - right, y1: height - bottom, y2: height - bottom, stroke: "#1b1b1b" }));
    root.append(svg("line", { x1: left, x2: left, y1: top, y2: height - bottom, stroke: "#1b1b1b" }));
    root.append(svg("text", { x: (left + width - right) / 2, y: height - 8, "text-anchor": "middle" }, series.xlabel));
    root.append(svg("text", { x: 14, y: (top + height - bottom) / 2, "text-anchor": "middle",
      transform: `rotate(-90 14 ${(top + height - bottom) / 2})` }, series.ylabel));
    series.lines.forEach((line, index) => {
      const colour = PALETTE[index % PALETTE.length];
      const valid = line.points.map((p, i) => [i, p]).filter(([, p]) => p[1] !== null);
      if (!valid.length) return;
      const upper = valid.map(([i, p]) => `${x(i)},${y(p[3] ?? p[1])}`);
      const lower = valid.map(([i, p]) => `${x(i)},${y(p[2] ?? p[1])}`).reverse();
      root.append(svg("polygon", { class: "band", points: upper.concat(lower).join(" "), fill: colour }));
      root.append(svg("polyline", { class: "series", points: valid.map(([i, p]) => `${x(i)},${y(p[1])}`).join(" "),
        stroke: colour }));
      for (const [i, p] of valid) root.append(svg("circle", { cx: x(i), cy: y(p[1]), r: 3, fill: colour }));
    });
    const legend = el("p", { class: "legend" }, ...series.lines.map((line, index) => {
      const swatch = svg("svg", { width: 16, height: 10, "aria-hidden": "true" });
      swatch.append(svg("rect", { width: 16, height: 10, fill: PALETTE[index % PALETTE.length] }));
      return el("span", {}, swatch, document.createTextNode(" " + line.label));
    }));
    return el("div", {}, root, legend);
  }

  // -- pages ----------------------------------------------------------------------------------------------------
  const LIST_COLUMNS = [["name", "name"], ["kind", "kind"], ["trust", "trust model"], ["epsilon", "epsilon"],
    ["state", "state"], ["reports", "reports so far"], ["last_day", "last day"]];

  async function campaignList() {
    const answer = await api("/v1/dashboard/campaigns");
    const filter = listState.filter.toLowerCase();
    const rows = answer.campaigns.filter((c) => !filter ||
      [c.name, c.kind, c.trust, c.state].some((v) => String(v).toLowerCase().includes(filter)));
    const key = listState.sort, sign = listState.descending ? -1 : 1;
    rows.sort((a, b) => (a[key] === b[key] ? 0 : (a[key] ?? "") < (b[key] ?? "") ? -sign : sign));
    const input = el("input", { id: "filter", type: "search", placeholder: "filter by name, kind, state",
      "aria-label": "filter campaigns", value: listState.filter });
    input.addEventListener("input", () => { listState.filter = input.value; render(); });
    const header = (name, i) => el("button", { type: "button", "data-sort": LIST_COLUMNS[i][0], onclick: () => {
      listState = { ...listState, sort: LIST_COLUMNS[i][0],
        descending: listState.sort === LIST_COLUMNS[i][0] ? !listState.descending : false };
      render();
    } }, document.createTextNode(name + (LIST_COLUMNS[i][0] === key ? (listState.descending ? " ▼" : " ▲") : "")));
    const body = rows.map((c) => [el("a", { href: "#/campaign/" + encodeURIComponent(c.name), text: c.name }),
      c.kind, c.trust, number(c.epsilon), c.state, number(c.reports), c.last_day ?? "-"]);
    const focused = document.activeElement && document.activeElement.id === "filter";
    main.replaceChildren(el("h2", { text: `Campaigns (${rows.length} of ${answer.campaigns.length})` }), input,
      table(LIST_COLUMNS.map((c) => c[1]), body, { id: "campaigns", header,
        numeric: [false, false, false, true, false, true, false] }));
    if (focused) { input.focus(); input.setSelectionRange(input.value.length, input.value.length); }
  }

  async function campaignPage(name) {
    const path = "/v1/campaigns/" + encodeURIComponent(name);
    const parts = [el("h2", { id: "campaign-name", text: name })];
    const actions = el("p", { class: "actions" }, el("button", { type: "button", id: "close", onclick: async () => {
      if (!window.confirm(`Close campaign ${name}? Devices stop recording it and its reports are rejected.`)) return;
      try { await api(path + "/close", { method: "POST" }); show(`campaign ${name} closed`); render(); }
      catch (error) { failed(error); }
    } }, document.createTextNode("close campaign")));
    parts.push(actions);
    let panel = null;
    let progressPath = null;
    try {
      panel = await api(path + "/panel");
    } catch (error) {
      if (error instanceof Refused || error instanceof Unreachable || error.status !== 404) throw error;
      parts.push(el("p", { id: "no-estimate", text: error.message }));
      if (error.problem && error.problem.rejections) parts.push(...rejections(error.problem.rejections));
      progressPath = (error.problem && error.problem.progress) || null; // a distributed batch not yet released
    }
    if (panel) {
      parts.push(el("div", { class: "header-lines", id: "header" }, ...panel.header.map((line) => el("p", { text: line }))));
      for (const flag of panel.flags) parts.push(el("p", { class: "flag", text: flag }));
      parts.push(el("p", { id: "n", "data-n": String(panel.n), text: `n = ${number(panel.n)} reports` }));
      panel.tables.forEach((t, i) => parts.push(el("h2", { text: t.title }),
        table(t.columns, t.rows, { id: "table-" + i }), notes(t.notes)));
      if (panel.intervals.points.length) parts.push(el("h2", { text: panel.intervals.title }), intervalPlot(panel.intervals));
      if (panel.central) {
        parts.push(el("h2", { text: "central-DP baseline" }), table(["central mechanism", "central CI +-", "LDP/central ratio"],
          [[panel.central.mechanism, number(panel.central.halfwidth), panel.central.ratio_text ?? "-"]], { id: "central" }),
        notes([panel.central.definition]));
      }
      if (panel.series) parts.push(el("h2", { text: `per day: ${panel.series.shown}` }), seriesPlot(panel.series));
      if (panel.planner) {
        parts.push(el("h2", { text: panel.planner.title }), table(panel.planner.columns, panel.planner.rows,
          { id: "planner", numeric: [true, true] }), notes(panel.planner.notes));
      }
      if (panel.budget) parts.push(el("h2", { text: "privacy budget (release ledger)" }), ...budget(panel.budget));
      if (panel.rejections) parts.push(...rejections(panel.rejections));
    }
    if (panel) progressPath = panel.progress;
    if (progressPath) parts.push(...await progress(progressPath, path));
    main.replaceChildren(...parts);
  }

  function rejections(counts) {
    const rows = Object.entries(counts).map(([reason, n]) => [reason, number(n)]);
    if (!rows.length) return [el("h2", { text: "rejected reports" }), el("p", { id: "rejections", text: "none" })];
    return [el("h2", { text: "rejected reports, by the refused field" }),
      table(["reason (field)", "reports"], rows, { id: "rejections", numeric: [false, true] })];
  }

  // the budget's figures as rows, and its ledger (one object per release) as a table of its own
  function budget(view) {
    const { ledger, ...figures } = view;
    const releases = Array.isArray(ledger) ? ledger : [];
    const columns = releases.length ? Object.keys(releases[0]) : [];
    const parts = [keyValues(figures, "budget")];
    if (releases.length) {
      parts.push(el("h3", { text: "releases" }), table(columns, releases.map((r) => columns.map((c) =>
        typeof r[c] === "number" ? number(r[c]) : r[c])), { id: "ledger", numeric: columns.map((c) =>
        typeof releases[0][c] === "number") }));
    }
    return parts;
  }

  // nested figures ({spent: {basic: {...}}}) as dotted rows, each a number or a text
  function flatten(object, prefix) {
    return Object.entries(object).flatMap(([k, v]) => v !== null && typeof v === "object" && !Array.isArray(v)
      ? flatten(v, prefix + k + ".") : [[prefix + k, v]]);
  }

  function keyValues(object, id) {
    return table(["figure", "value"], flatten(object, "").map(([k, v]) => [k, typeof v === "number" ? number(v) : v]),
      { id });
  }

  async function progress(progressPath, path) {
    const answer = await api(progressPath);
    const batches = Array.isArray(answer.batches) ? answer.batches : [];
    const columns = batches.length ? Object.keys(batches[0]) : [];
    const done = (batch) => batch.state === "collected" || batch.state === "collecting";  // nothing to collect
    const rows = batches.map((batch) => columns.map((c) => batch[c]).concat([done(batch) ? "-" : el("button", { type: "button",
      onclick: async () => {
        if (!window.confirm(`Collect batch ${batch.batch}? Its release spends privacy budget.`)) return;
        try { await api(path + "/collect", { method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ batch: batch.batch }) }); show(`batch ${batch.batch} collected`); render(); }
        catch (error) { failed(error); }
      } }, document.createTextNode("collect"))]));
    return [el("h2", { text: "distributed batches" }), table(columns.concat(["action"]), rows, { id: "batches" })];
  }

  function newCampaign() {
    const spec = el("textarea", { id: "spec", "aria-describedby": "spec-error", spellcheck: "false" });
    spec.value = JSON.stringify({ name: "new_campaign", mechanism: "oue", epsilon: 1.0, domain: ["a", "b", "c"] }, null, 2);
    const error = el("span", { id: "spec-error", class: "field-error", role: "alert" });
    const form = el("form", { id: "create" }, el("label", { for: "spec", text: "Campaign spec (JSON)" }), spec, error,
      el("p", {}, el("button", { type: "submit" }, document.createTextNode("create campaign"))));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      error.textContent = "";
      let body;
      try { body = JSON.parse(spec.value); } catch (e) { error.textContent = "spec: not JSON: " + e.message; return; }
      if (!window.confirm(`Create campaign ${body && body.name}?`)) return;
      try {
        const created = await api("/v1/campaigns", { method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify(body) });
        location.hash = "#/campaign/" + encodeURIComponent(created.name || body.name);
      } catch (e) {
        if (e instanceof Refused || e instanceof Unreachable) return failed(e);
        error.textContent = (e.problem && e.problem.field ? `field ${e.problem.field}: ` : "") + e.message;
        error.dataset.field = (e.problem && e.problem.field) || "";
      }
    });
    main.replaceChildren(el("h2", { text: "New campaign" }), form);
  }

  async function render() {
    clearTimeout(timer);
    const route = location.hash.replace(/^#/, "") || "/";
    try {
      if (route === "/new") { newCampaign(); return; }
      if (route.startsWith("/campaign/")) await campaignPage(decodeURIComponent(route.slice("/campaign/".length)));
      else await campaignList();
      login.hidden = true;
      show("updated " + new Date().toLocaleTimeString("en-GB"));
      document.body.dataset.updated = String(Date.now());
    } catch (error) {
      failed(error);
      if (error instanceof Refused) return;
    }
    timer = setTimeout(render, POLL_MS);
  }

  login.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, document.getElementById("key").value);
    document.getElementById("key").value = "";
    render();
  });
  document.getElementById("forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY); clearTimeout(timer); main.replaceChildren(); login.hidden = false; show("key forgotten");
  });
  window.addEventListener("hashchange", () => render());
  if (sessionStorage.getItem(KEY)) render(); else { login.hidden = false; show("enter the admin key"); }
})();
