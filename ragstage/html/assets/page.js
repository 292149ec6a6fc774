// The ragstage report and comparison pages. Everything is built from the JSON block
// #ragstage-data; text goes into the page through textContent only (never as markup).
// The question table renders one page of rows at a time, so 100,000 questions stay responsive.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("ragstage-data").textContent);
  var PAGE_SIZE = 100;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] === null || attrs[k] === undefined) return;
        if (k === "text") node.textContent = attrs[k];
        else if (k === "cls") node.className = attrs[k];
        else node.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function fmt(x) {
    if (typeof x === "number" && !Number.isInteger(x)) return x.toFixed(3);
    return x === null || x === undefined ? "–" : String(x);
  }
  function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%"; }
  function byId(id) { return document.getElementById(id); }

  function bucketChip(b) {
    var chip = el("span", {cls: "chip bucket", text: b, title: DATA.labels[b] || b, "data-bucket": b});
    chip.style.background = DATA.colours[b] || "#eee";
    chip.style.color = ["retrieval", "generation", "source_or_label", "none", "endpoint_unavailable",
                        "query_understanding"].indexOf(b) >= 0 ? "#fff" : "#111";
    return chip;
  }
  function sevChip(s) { return s ? el("span", {cls: "chip sev-" + s, text: s}) : el("span", {cls: "muted", text: "–"}); }
  function flagList(mask) {
    return DATA.flag_names.filter(function (f, i) { return mask & (1 << i); });
  }

  // A table of numbers: every cell keeps its exact value in data-value (the tests read it). A table
  // of more than TABLE_PAGE rows (a report of thousands of groups) shows one page of rows at a time.
  var TABLE_PAGE = 500;
  function numberTable(id, rows, columns) {
    var head = el("tr", null, columns.map(function (c) { return el("th", {text: c}); }));
    var body = el("tbody");
    var table = el("table", {id: id}, [el("thead", null, [head]), body]);
    function row(r) {
      return el("tr", null, columns.map(function (c) {
        var v = r[c];
        var isNum = typeof v === "number";
        return el("td", {cls: isNum ? "num" : null, "data-col": c, "data-value": String(v),
                         text: isNum ? fmt(v) : String(v)});
      }));
    }
    if (rows.length <= TABLE_PAGE) {
      rows.forEach(function (r) { body.appendChild(row(r)); });
      return table;
    }
    var page = 0;
    var prev = el("button", {cls: "table-prev", text: "‹ previous"});
    var next = el("button", {cls: "table-next", text: "next ›"});
    var info = el("span", {cls: "page-info"});
    function draw() {
      body.textContent = "";
      var start = page * TABLE_PAGE, end = Math.min(start + TABLE_PAGE, rows.length);
      rows.slice(start, end).forEach(function (r) { body.appendChild(row(r)); });
      info.textContent = "rows " + (start + 1) + "–" + end + " of " + rows.length.toLocaleString("en");
      prev.disabled = page === 0;
      next.disabled = end >= rows.length;
    }
    prev.addEventListener("click", function () { if (page > 0) { page--; draw(); } });
    next.addEventListener("click", function () { if ((page + 1) * TABLE_PAGE < rows.length) { page++; draw(); } });
    draw();
    return el("div", {cls: "paged"}, [table, el("div", {cls: "pager"}, [prev, next, info])]);
  }
  function card(key, value, id) {
    return el("div", {cls: "card", id: id}, [el("div", {cls: "v", text: String(value)}), el("div", {cls: "k", text: key})]);
  }

  // ---- one trace -----------------------------------------------------------------------
  // A ranked list as stored on the page: ids, with scores and sections as parallel arrays.
  function entries(t, stage) {
    var scores = t[stage + "_scores"] || [], sections = t[stage + "_sections"] || [];
    return (t[stage] || []).map(function (id, i) {
      return {id: id, score: scores[i] === undefined ? null : scores[i], section: sections[i] === undefined ? null : sections[i]};
    });
  }
  // The after side of a comparison is stored as its difference from the before side.
  function afterTrace(q) {
    if (!q.z.t) {
      var t = Object.assign({}, q.a.t, q.z.d);
      q.z.gone.forEach(function (k) { delete t[k]; });
      q.z.t = t;
    }
    return q.z;
  }
  function describeGold(id) {
    var m = /^(.*)#(\d+)-(\d+)$/.exec(id);
    return m ? id + " (characters " + m[2] + "–" + m[3] + " of " + m[1] + ")" : id;
  }
  function rankedTable(t, name, gold, truncated) {
    if (t[name] === undefined || t[name] === null) return el("p", {cls: "muted", text: name + ": not logged"});
    var rows = entries(t, name).map(function (e, i) {
      var isGold = gold.has(e.id);
      var cut = truncated.has(e.id);
      return el("tr", {cls: isGold ? "gold" : null, "data-id": e.id, "data-gold": isGold ? "true" : "false"}, [
        el("td", {cls: "num", text: String(i + 1)}),
        el("td", null, [el("span", {cls: "id", text: e.id}), isGold ? " ★ gold" : null,
                        cut ? el("span", {cls: "truncated-mark", text: " truncated"}) : null]),
        el("td", {cls: "num", text: e.score === null || e.score === undefined ? "–" : fmt(e.score)}),
        el("td", {text: e.section === null || e.section === undefined ? "–" : String(e.section)})]);
    });
    return el("table", {cls: "ranked " + name}, [
      el("thead", null, [el("tr", null, ["rank", "id", "score", "section"].map(function (c) { return el("th", {text: c}); }))]),
      el("tbody", null, rows)]);
  }
  function answerNode(answer, prompt, gold) {
    var node = el("div", {cls: "answer"});
    var re = /\[(\d+)\]/g, last = 0, m;
    while ((m = re.exec(answer)) !== null) {
      node.appendChild(document.createTextNode(answer.slice(last, m.index)));
      var k = parseInt(m[1], 10);
      var target = prompt && k >= 1 && k <= prompt.length ? prompt[k - 1] : null;
      var cls = "marker" + (prompt && target === null ? " fabricated" : "") + (target && gold.has(target) ? " gold" : "");
      node.appendChild(el("span", {cls: cls, text: m[0],
        title: target ? "prompt passage " + k + ": " + target : (prompt ? "no passage " + k + " in the prompt" : "prompt ids not logged")}));
      last = re.lastIndex;
    }
    node.appendChild(document.createTextNode(answer.slice(last)));
    return node;
  }
  // A stored trace with its recurring strings (ids, sections, provenance) back from DATA.strings.
  var TABLED_LISTS = ["gold", "retrieved", "reranked", "prompt", "answer_ids", "truncated", "retrieved_sections",
                      "reranked_sections"];
  var TABLED_TEXTS = ["pipeline", "model", "prompt_version", "timestamp", "prompt_source"];
  function expand(stored) {
    var t = Object.assign({}, stored);
    TABLED_LISTS.forEach(function (k) {
      if (Array.isArray(t[k])) t[k] = t[k].map(function (i) { return i === null ? null : DATA.strings[i]; });
    });
    TABLED_TEXTS.forEach(function (k) { if (typeof t[k] === "number") t[k] = DATA.strings[t[k]]; });
    return t;
  }
  function traceView(side, label, group) {
    var t = expand(side.t);
    var gold = new Set(t.gold || []);
    var truncated = new Set(t.truncated || []);
    var flags = flagList(side.f);
    var box = el("div", {cls: "trace", "data-qid": t.query_id, "data-side": label || "trace"});
    box.appendChild(el("h3", null, [label ? label + ": " : "", el("span", {cls: "qid", text: t.query_id}),
                                    el("span", {cls: "muted", text: "  " + (t.pipeline || "default") + (group ? " · group " + group : "")})]));
    box.appendChild(el("dl", null, [
      el("dt", {text: "bucket"}), el("dd", null, [bucketChip(DATA.buckets[side.b])]),
      el("dt", {text: "reason"}), el("dd", {cls: "reason", text: DATA.reasons[side.r]}),
      el("dt", {text: "severity"}), el("dd", null, [sevChip(side.s)]),
      el("dt", {text: "flags"}), el("dd", {cls: "flags", text: flags.length ? flags.join(", ") : "–"}),
      el("dt", {text: "recall / retention"}), el("dd", {text: pct(side.recall) + " / " + pct(side.retention)})]));
    box.appendChild(el("h4", {text: "question"}));
    box.appendChild(el("p", {text: t.query || "(no question text logged)"}));
    box.appendChild(el("h4", {text: "gold"}));
    box.appendChild(t.answerable === false ? el("p", {text: "unanswerable: the right answer is a refusal"}) :
      el("div", {cls: "ids gold-ids"}, (t.gold || []).length ? t.gold.map(function (g) {
        return el("span", {cls: "id gold", text: describeGold(g)});
      }) : [el("span", {cls: "muted", text: "no gold labelled"})]));
    box.appendChild(el("h4", {text: "retrieved (" + (t.retrieved || []).length + ")"}));
    box.appendChild(rankedTable(Object.assign({retrieved: []}, t), "retrieved", gold, truncated));
    box.appendChild(el("h4", {text: "reranked" + (t.reranked ? " (" + t.reranked.length + ")" : "")}));
    box.appendChild(rankedTable(t, "reranked", gold, truncated));
    var source = t.prompt === undefined ? "not logged" : (t.prompt_source || "source unstated");
    box.appendChild(el("h4", {text: "prompt ids (" + source + ")"}));
    box.appendChild(rankedTable(t, "prompt", gold, truncated));
    if (t.truncated && t.truncated.length) {
      box.appendChild(el("h4", {text: "truncated passages"}));
      box.appendChild(el("div", {cls: "ids"}, t.truncated.map(function (x) {
        return el("span", {cls: "id" + (gold.has(x) ? " gold" : ""), text: x + " (only part of its text reached the prompt)"});
      })));
    }
    box.appendChild(el("h4", {text: "answer"}));
    box.appendChild(t.answer ? answerNode(t.answer, t.prompt || null, gold) : el("p", {cls: "muted", text: "(no answer text)"}));
    var judged = [];
    ["answer_ids", "correct", "refused", "claims", "complete", "query_ok", "error", "model", "prompt_version", "timestamp"]
      .forEach(function (k) {
        if (t[k] !== undefined) judged.push(el("dt", {text: k}), el("dd", {text: typeof t[k] === "object" ? JSON.stringify(t[k]) : String(t[k])}));
      });
    if (judged.length) { box.appendChild(el("h4", {text: "labels and context"})); box.appendChild(el("dl", null, judged)); }
    box.appendChild(el("h4", {text: "what the missing fields make impossible"}));
    box.appendChild(side.m.length ? el("ul", {cls: "missing"}, side.m.map(function (i) {
      var c = DATA.checks[i];
      return el("li", {"data-field": c.name}, [el("code", {text: c.name}), c.blocking ? el("span", {cls: "blocking", text: " blocks attribution"}) : null,
                                                ": " + c.impact]);
    })) : el("p", {cls: "muted", text: "nothing: every field of the minimum log is there"}));
    if (t.meta) { box.appendChild(el("h4", {text: "meta"})); box.appendChild(el("pre", {text: JSON.stringify(t.meta, null, 2)})); }
    box.appendChild(el("details", null, [el("summary", {text: "every field of the trace"}), el("pre", {text: JSON.stringify(t, null, 2)})]));
    return box;
  }

  // ---- the filterable, paginated question table ------------------------------------------
  function questionTable(spec) {
    var host = byId("questions");
    host.appendChild(el("h2", {text: spec.title}));
    if (spec.note) host.appendChild(spec.note);
    var filters = el("div", {cls: "filters"});
    var state = {page: 0, rows: [], selected: -1};
    var selects = spec.filters.map(function (f) {
      var select = el("select", {id: "filter-" + f.id}, [el("option", {value: "", text: "all"})].concat(
        f.options.map(function (o) { return el("option", {value: o[0], text: o[1]}); })));
      filters.appendChild(el("label", null, [f.label, select]));
      select.addEventListener("change", function () { apply(); });
      return {spec: f, node: select};
    });
    var search = el("input", {type: "search", id: "search", placeholder: "question id or text"});
    search.addEventListener("input", function () { apply(); });
    filters.appendChild(el("label", null, ["search", search]));
    var count = el("span", {id: "match-count"});
    filters.appendChild(count);
    host.appendChild(filters);
    var tbody = el("tbody");
    host.appendChild(el("table", {id: "question-table"}, [
      el("thead", null, [el("tr", null, spec.columns.map(function (c) { return el("th", {text: c}); }))]), tbody]));
    var prev = el("button", {id: "prev", text: "‹ previous"});
    var next = el("button", {id: "next", text: "next ›"});
    var info = el("span", {id: "page-info"});
    prev.addEventListener("click", function () { if (state.page > 0) { state.page--; draw(); } });
    next.addEventListener("click", function () { if ((state.page + 1) * PAGE_SIZE < state.rows.length) { state.page++; draw(); } });
    host.appendChild(el("div", {cls: "pager"}, [prev, next, info]));
    var view = el("div", {id: "trace-view"});
    host.appendChild(view);
    var haystack = null;

    function apply() {
      var wanted = selects.map(function (s) { return [s.spec.test, s.node.value]; }).filter(function (w) { return w[1] !== ""; });
      var text = search.value.trim().toLowerCase();
      if (text && haystack === null) haystack = DATA.questions.map(spec.text);
      state.rows = [];
      for (var i = 0; i < DATA.questions.length; i++) {
        var q = DATA.questions[i], keep = true;
        for (var j = 0; j < wanted.length && keep; j++) keep = wanted[j][0](q, wanted[j][1]);
        if (keep && text) keep = haystack[i].indexOf(text) >= 0;
        if (keep) state.rows.push(i);
      }
      state.page = 0;
      count.textContent = state.rows.length.toLocaleString("en") + " of " + DATA.questions.length.toLocaleString("en") + " questions";
      draw();
    }
    function draw() {
      tbody.textContent = "";
      var start = state.page * PAGE_SIZE;
      state.rows.slice(start, start + PAGE_SIZE).forEach(function (i) {
        var tr = el("tr", {"data-index": String(i), "data-qid": spec.id(DATA.questions[i]), cls: i === state.selected ? "selected" : null},
                    spec.cells(DATA.questions[i]));
        tr.addEventListener("click", function () { show(i); });
        tbody.appendChild(tr);
      });
      var end = Math.min(start + PAGE_SIZE, state.rows.length);
      info.textContent = state.rows.length ? "rows " + (start + 1) + "–" + end + " of " + state.rows.length : "no question matches";
      prev.disabled = state.page === 0;
      next.disabled = end >= state.rows.length;
    }
    function show(i) {
      state.selected = i;
      view.textContent = "";
      view.appendChild(spec.detail(DATA.questions[i]));
      Array.prototype.forEach.call(tbody.children, function (tr) {
        tr.classList.toggle("selected", tr.getAttribute("data-index") === String(i));
      });
      view.scrollIntoView({block: "nearest"});
    }
    apply();
  }

  function counted(values, names) {
    var n = {};
    values.forEach(function (v) { n[v] = (n[v] || 0) + 1; });
    return names.map(function (name, i) { return [i, n[i] || 0, name]; }).filter(function (x) { return x[1] > 0; });
  }

  // ---- the report page ----------------------------------------------------------------------
  function report() {
    byId("subtitle").textContent = DATA.files.join(", ") + " · grouped by " + (DATA.by || "nothing (one group)") +
      " · require " + DATA.require + " · ragstage " + DATA.version;
    if (DATA.n === 0) {
      var empty = byId("empty");
      empty.hidden = false;
      empty.textContent = "No traces: " + DATA.files.join(", ") + (DATA.files.length > 1 ? " hold" : " holds") +
        " no trace, so there is nothing to attribute.";
      return;
    }
    var partial = DATA.listed < DATA.n;
    var overview = byId("overview");
    overview.appendChild(el("div", {cls: "cards"}, [card("traces", DATA.n, "card-n"), card("groups", DATA.groups.length, "card-groups"),
                                                     partial ? card("questions listed", DATA.listed, "card-listed") : null]));
    if (DATA.judge_labels.judged) overview.appendChild(judgeNote());
    var tables = byId("tables");
    if (DATA.gold_sample) goldSampleTable(tables);
    tables.appendChild(el("h2", {text: "Attribution per group (ragstage attribute)"}));
    tables.appendChild(numberTable("attribution-table", DATA.attribution, ["group", "stage", "count", "n", "share", "low", "high"]));
    tables.appendChild(el("h2", {text: "The conditional funnel"}));
    tables.appendChild(numberTable("funnel-table", DATA.funnel, ["group", "stage", "entered", "survived", "rate", "low", "high"]));
    tables.appendChild(el("h2", {text: "Flags by severity (ragstage attribute --flags)"}));
    var order = {critical: 0, high: 1, medium: 2};
    var flags = DATA.flags.slice().sort(function (a, b) { return (order[a.severity] - order[b.severity]) || 0; });
    tables.appendChild(numberTable("flag-table", flags, ["group", "flag", "severity", "count", "n", "share", "low", "high"]));
    var sev = {critical: 0, high: 0, medium: 0, none: 0};
    DATA.questions.forEach(function (q) { sev[q.s || "none"]++; });
    tables.appendChild(el("div", {cls: "cards", id: "severity-cards"}, ["critical", "high", "medium", "none"].map(function (s) {
      return card((partial ? "listed questions" : "questions") + " of severity " + s, sev[s], "sev-" + s);
    })));

    var bucketOpts = counted(DATA.questions.map(function (q) { return q.b; }), DATA.buckets)
      .map(function (x) { return [DATA.buckets[x[0]], x[2] + " (" + x[1] + ")"]; });
    var groupOpts = counted(DATA.questions.map(function (q) { return q.g; }), DATA.groups)
      .map(function (x) { return [String(x[0]), x[2] + " (" + x[1] + ")"]; });
    var flagOpts = DATA.flag_names.map(function (f, i) {
      var n = DATA.questions.filter(function (q) { return q.f & (1 << i); }).length;
      return [f, f + " (" + n + ")"];
    }).concat([["(none)", "no flag"]]);
    questionTable({
      title: partial ? "The first " + DATA.listed.toLocaleString("en") + " of " + DATA.n.toLocaleString("en") +
        " questions (in file order)" : "Every question",
      note: partial ? leftOutNote() : null,
      columns: ["id", "question", "group", "bucket", "reason", "severity", "flags"],
      filters: [
        {id: "bucket", label: "bucket", options: bucketOpts, test: function (q, v) { return DATA.buckets[q.b] === v; }},
        {id: "flag", label: "flag", options: flagOpts, test: function (q, v) {
          return v === "(none)" ? q.f === 0 : flagList(q.f).indexOf(v) >= 0; }},
        {id: "group", label: "group", options: groupOpts, test: function (q, v) { return String(q.g) === v; }},
        {id: "severity", label: "severity", options: [["critical", "critical"], ["high", "high"], ["medium", "medium"], ["(none)", "none"]],
         test: function (q, v) { return (q.s || "(none)") === v; }}],
      text: function (q) { return (q.t.query_id + " " + (q.t.query || "")).toLowerCase(); },
      id: function (q) { return q.t.query_id; },
      cells: function (q) {
        return [el("td", {cls: "qid", text: q.t.query_id}), el("td", {cls: "text", text: q.t.query || "", title: q.t.query || ""}),
                el("td", {text: DATA.groups[q.g]}), el("td", null, [bucketChip(DATA.buckets[q.b])]),
                el("td", {cls: "text", text: DATA.reasons[q.r], title: DATA.reasons[q.r]}), el("td", null, [sevChip(q.s)]),
                el("td", {text: flagList(q.f).join(", ")})];
      },
      detail: function (q) { return traceView(q, null, DATA.groups[q.g]); }
    });
  }

  // Labels from a judge: every rate computed from them alone is the judge's, biased by its errors.
  function judgeNote() {
    var j = DATA.judge_labels;
    var judges = Object.keys(j.judges).map(function (k) { return k + " (" + j.judges[k].toLocaleString("en") + ")"; });
    var of = j.traces < DATA.n ? " of the " + j.traces.toLocaleString("en") + " questions listed (the others were not read for this)"
                               : " of " + DATA.n.toLocaleString("en") + " traces";
    return el("p", {id: "judge-labels", cls: "note warning", "data-value": String(j.judged)}, [
      el("strong", {text: "Labels by a judge: "}), j.judged.toLocaleString("en") + of + " carry labels from a judge, not from " +
      "people (" + judges.join(", ") + "). The rates on this page are the judge's, biased by its errors" +
      (DATA.gold_sample ? "; the table of rates with a gold sample corrects them." :
       " until corrected with a gold sample: ragstage sample, then ragstage report --gold-sample GOLD --sample SAMPLE.")]);
  }

  // The three rates per bucket of attribute --gold-sample: judge only (biased), gold only, PPI++.
  function goldSampleTable(host) {
    var g = DATA.gold_sample;
    function f3(x) { return x.toFixed(3); }
    function interval(low, high) { return low === null || high === null ? "–" : f3(low) + " to " + f3(high); }
    host.appendChild(el("h2", {text: "Rates with a gold sample (ragstage attribute --gold-sample)"}));
    host.appendChild(el("p", {cls: "note"}, [
      g.drawn.toLocaleString("en") + " requests drawn (seed " + g.seed + (g.stratified ? ", stratified by the judge's bucket" : "") +
      ") and labelled by people (" + g.files.gold + "). Judge vs gold on the sample: " + g.agreement.agree + " of " +
      g.agreement.n + " agree, Cohen's kappa " + (g.agreement.kappa === null ? "undefined" : fmt(g.agreement.kappa)) + ". " +
      (g.stratified ? "Estimate: each stratum's gold share, weighted by its share of the requests." :
       "Estimate: PPI++ (tuned lambda), the judge's rate corrected by its error on the sample.")]));
    var columns = ["stage", "n", "judge-only rate (biased)", "gold k/n", "gold-only 95% Wilson", "estimate", "95% interval", "warning"];
    host.appendChild(el("table", {id: "gold-sample-table"}, [
      el("thead", null, [el("tr", null, columns.map(function (c) { return el("th", {text: c}); }))]),
      el("tbody", null, g.rows.map(function (r) {
        return el("tr", {"data-stage": r.stage}, [
          el("td", {text: r.stage}), el("td", {cls: "num", text: String(r.n)}),
          el("td", {cls: "num biased", "data-col": "judge_rate", "data-value": String(r.judge_rate),
                    title: "the judge's buckets alone: biased by its errors", text: f3(r.judge_rate) + " (biased)"}),
          el("td", {cls: "num", text: r.gold_k + "/" + r.gold_n}),
          el("td", {cls: "num", "data-col": "gold", "data-value": String(r.gold_low) + " " + String(r.gold_high),
                    text: interval(r.gold_low, r.gold_high)}),
          el("td", {cls: "num", "data-col": "estimate", "data-value": String(r.estimate), text: f3(r.estimate)}),
          el("td", {cls: "num", "data-col": "interval", "data-value": String(r.low) + " " + String(r.high),
                    text: interval(r.low, r.high)}),
          el("td", {cls: r.warning ? "verdict-fail" : null, text: r.warning || ""})]);
      }))]));
  }

  // What the question table does not list, bucket by bucket: every trace is in the numbers above.
  function leftOutNote() {
    var left = DATA.n - DATA.listed;
    var parts = Object.keys(DATA.left_out).map(function (b) { return b + " " + DATA.left_out[b].toLocaleString("en"); });
    return el("p", {id: "left-out", cls: "note", "data-value": String(left)}, [
      left.toLocaleString("en") + " questions are counted in every table and figure above but not listed below (" +
      parts.join(", ") + "). ", el("code", {text: "ragstage report --max-questions N"}), " lists more (-1: all; a page " +
      "of every question of a large file may be too heavy for a browser); ", el("code", {text: "ragstage attribute"}),
      " and the Python API read every trace."]);
  }

  // ---- the comparison page ------------------------------------------------------------------
  function comparison() {
    var c = DATA.comparison;
    byId("subtitle").textContent = "before: " + DATA.files[0] + " · after: " + DATA.files[1] + " · require " + DATA.require +
      (DATA.intersect ? " · shared questions only (" + DATA.only_before + " only before, " + DATA.only_after + " only after)" : "") +
      " · ragstage " + DATA.version;
    var overview = byId("overview");
    var partial = DATA.listed < c.n;
    overview.appendChild(el("div", {cls: "cards"}, [
      partial ? card("pairs listed", DATA.listed, "card-listed") : null, card("questions paired", c.n, "card-n"), card("right before", DATA.right_before, "card-right-before"),
      card("right after", DATA.right_after, "card-right-after"), card("fixed", c.fixed, "card-fixed"),
      card("broken", c.broken, "card-broken"), card("undecided", c.undecided, "card-undecided"),
      card("exact McNemar p", c.p_value < 1e-4 && c.p_value > 0 ? c.p_value.toExponential(2) : String(Math.round(c.p_value * 1e4) / 1e4), "card-p")]));
    var pv = byId("card-p");
    pv.setAttribute("data-value", String(c.p_value));
    ["fixed", "broken", "undecided", "n"].forEach(function (k) { byId("card-" + k).setAttribute("data-value", String(c[k])); });
    var tables = byId("tables");
    tables.appendChild(el("h2", {text: "Bucket migration (rows: before, columns: after)"}));
    var used = DATA.buckets.filter(function (b) {
      if (c.migration[b]) return true;
      return Object.keys(c.migration).some(function (s) { return c.migration[s][b]; });
    });
    var max = 1;
    used.forEach(function (s) { used.forEach(function (d) { max = Math.max(max, (c.migration[s] || {})[d] || 0); }); });
    tables.appendChild(el("table", {id: "migration-table", cls: "heat"}, [
      el("thead", null, [el("tr", null, [el("th", {text: "before \\ after"})].concat(used.map(function (b) { return el("th", {text: b}); })))]),
      el("tbody", null, used.map(function (s) {
        return el("tr", null, [el("th", {text: s})].concat(used.map(function (d) {
          var v = (c.migration[s] || {})[d] || 0;
          var td = el("td", {"data-before": s, "data-after": d, "data-value": String(v), text: v ? String(v) : "·"});
          if (v) td.style.background = "rgba(31,119,180," + (0.08 + 0.6 * v / max).toFixed(3) + ")";
          return td;
        })));
      }))]));
    var statusOpts = counted(DATA.questions.map(function (q) { return q.st; }), DATA.statuses)
      .map(function (x) { return [DATA.statuses[x[0]], x[2] + " (" + x[1] + ")"]; });
    var bucketOpts = DATA.buckets.map(function (b) { return [b, b]; });
    questionTable({
      title: (partial ? "The " + DATA.listed.toLocaleString("en") + " paired questions listed of " + c.n.toLocaleString("en")
                      : "Every paired question") + ": " + DATA.groups.join(", ") + " (each group in the after run's order)",
      note: partial ? pairsLeftOutNote(c.n - DATA.listed) : null,
      columns: ["id", "question", "status", "before", "after", "reason after", "newly critical"],
      filters: [
        {id: "status", label: "status", options: statusOpts, test: function (q, v) { return DATA.statuses[q.st] === v; }},
        {id: "before", label: "bucket before", options: bucketOpts, test: function (q, v) { return DATA.buckets[q.a.b] === v; }},
        {id: "after", label: "bucket after", options: bucketOpts, test: function (q, v) { return DATA.buckets[q.z.b] === v; }},
        {id: "critical", label: "newly critical", options: [["yes", "yes"], ["no", "no"]],
         test: function (q, v) { return (q.crit.length > 0) === (v === "yes"); }}],
      text: function (q) { return (q.id + " " + (q.a.t.query || "")).toLowerCase(); },
      id: function (q) { return q.id; },
      cells: function (q) {
        var st = DATA.statuses[q.st];
        return [el("td", {cls: "qid", text: q.id}), el("td", {cls: "text", text: q.a.t.query || "", title: q.a.t.query || ""}),
                el("td", {cls: "status " + st, text: st}), el("td", null, [bucketChip(DATA.buckets[q.a.b])]),
                el("td", null, [bucketChip(DATA.buckets[q.z.b])]),
                el("td", {cls: "text", text: DATA.reasons[q.z.r], title: DATA.reasons[q.z.r]}),
                el("td", {cls: q.crit.length ? "verdict-fail" : null, text: q.crit.join(", ")})];
      },
      detail: function (q) {
        return el("div", null, [el("h3", {text: q.id + ": " + DATA.statuses[q.st]}),
                                el("div", {cls: "sides"}, [traceView(q.a, "before"), traceView(afterTrace(q), "after")])]);
      }
    });
  }

  // What the comparison's question table does not list, per transition: every pair is in the numbers above.
  function pairsLeftOutNote(left) {
    var groups = {};
    DATA.left_out.forEach(function (x) { groups[x.group] = (groups[x.group] || 0) + x.count; });
    var rows = DATA.left_out.map(function (x) {
      return el("tr", {"data-group": x.group, "data-before": x.before, "data-after": x.after, "data-value": String(x.count)}, [
        el("td", {text: x.group}), el("td", {text: x.before + " → " + x.after}), el("td", {cls: "num", text: x.count.toLocaleString("en")})]);
    });
    return el("div", {id: "left-out", cls: "note", "data-value": String(left)}, [
      el("p", null, [left.toLocaleString("en") + " paired questions are counted in every card, table and figure above but not " +
        "listed below (" + Object.keys(groups).map(function (g) { return g + " " + groups[g].toLocaleString("en"); }).join(", ") +
        "). The list takes the changed pairs first, in this order: " + DATA.groups.join(", ") + ". ",
        el("code", {text: "ragstage report --compare --max-questions N"}), " lists more (-1: all; a page of every pair of " +
        "large runs may be too heavy for a browser); ", el("code", {text: "ragstage compare"}), " and ",
        el("code", {text: "ragstage.gate.pair_runs"}), " read every pair."]),
      el("table", {id: "left-out-table"}, [
        el("thead", null, [el("tr", null, ["group", "transition (before → after)", "not listed"].map(function (h) { return el("th", {text: h}); }))]),
        el("tbody", null, rows)])]);
  }

  if (DATA.kind === "report") report(); else comparison();
  document.body.setAttribute("data-ready", "true");
})();
