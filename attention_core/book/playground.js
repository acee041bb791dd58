/* The kernel-free attention playground (attention_core.book.playground): the page computes
   score -> softmax of beta * score over the unmasked keys -> weighted sum of the values, in
   float64 like the PyTorch side, each time the reader drags a point or moves a control. No
   kernel, no widget library, no network. window.acPlaygrounds[uid] exposes compute(), the
   state and the numbers shown, so that a test can compare them with PyTorch. */
function acPlayground(uid) {
  "use strict";
  var root = document.getElementById(uid);
  var data = JSON.parse(document.getElementById(uid + "-data").textContent);
  var SVG = "http://www.w3.org/2000/svg", SIZE = 300, E = data.extent, A = data.additive;
  var state = {keys: data.keys.map(function (k) { return k.slice(); }), values: data.values.slice(),
               query: data.query.slice(), score: data.score, beta: data.beta, valid: data.keys.length};
  var shown = null;

  function dot(a, b) { return a[0] * b[0] + a[1] * b[1]; }
  function unit(a) {  // a / max(|a|, 1e-12), as torch.nn.functional.normalize
    var n = Math.max(Math.sqrt(dot(a, a)), 1e-12);
    return [a[0] / n, a[1] / n];
  }
  function score(name, q, k) {
    if (name === "dot") return dot(q, k);
    if (name === "scaled_dot") return dot(q, k) / Math.sqrt(2);
    if (name === "cosine") return dot(unit(q), unit(k));
    var s = 0;  // additive: w_v . tanh(W_q q + W_k k), with the fixed weights shipped below
    for (var h = 0; h < A.w_v.length; h++) s += A.w_v[h] * Math.tanh(dot(A.W_q[h], q) + dot(A.W_k[h], k));
    return s;
  }
  function compute(c) {
    var scores = c.keys.map(function (k) { return score(c.score, c.query, k); });
    var top = -Infinity, total = 0, output = 0, i;
    for (i = 0; i < c.valid; i++) top = Math.max(top, c.beta * scores[i]);
    var weights = scores.map(function (s, j) { return j < c.valid ? Math.exp(c.beta * s - top) : 0; });
    for (i = 0; i < weights.length; i++) total += weights[i];
    weights = weights.map(function (w) { return w / total; });
    for (i = 0; i < weights.length; i++) output += weights[i] * c.values[i];
    return {scores: scores, weights: weights, output: output};
  }

  // the plane: [-E, E]^2 drawn on SIZE x SIZE, y upwards
  function px(x) { return (x + E) / (2 * E) * SIZE; }
  function py(y) { return (E - y) / (2 * E) * SIZE; }
  var svg = root.querySelector("svg");
  svg.setAttribute("viewBox", "0 0 " + SIZE + " " + SIZE);
  function make(tag, attrs, parent) {
    var el = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (a) { el.setAttribute(a, attrs[a]); });
    (parent || svg).appendChild(el);
    return el;
  }
  for (var g = -E; g <= E; g++) {
    var axis = g === 0 ? "#999" : "#e4e4e4";
    make("line", {x1: px(g), x2: px(g), y1: 0, y2: SIZE, stroke: axis});
    make("line", {y1: py(g), y2: py(g), x1: 0, x2: SIZE, stroke: axis});
    if (g > -E && g < E && g !== 0) {  // coordinates along the axes, so a move can be read off
      make("text", {x: px(g), y: py(0) + 11, "font-size": 9, fill: "#888", "text-anchor": "middle"}).textContent = g;
      make("text", {x: px(0) - 4, y: py(g) + 3, "font-size": 9, fill: "#888", "text-anchor": "end"}).textContent = g;
    }
  }
  var links = state.keys.map(function () { return make("line", {stroke: "#d62728"}); });
  var keys = state.keys.map(function (k, i) {
    var group = make("g", {"data-point": "k" + i, tabindex: "0", role: "button",
                           "aria-label": "key " + (i + 1) + " · 键 " + (i + 1)});
    return {group: group, circle: make("circle", {stroke: "#1f77b4"}, group),
            label: make("text", {"font-size": 11, fill: "#333"}, group)};
  });
  var query = make("g", {"data-point": "q", tabindex: "0", role: "button", "aria-label": "query · 查询"});
  var diamond = make("rect", {width: 12, height: 12, fill: "#d62728"}, query);
  var qLabel = make("text", {"font-size": 11, fill: "#d62728", "font-weight": "bold"}, query);
  qLabel.textContent = "q";
  var rows = root.querySelector("tbody");
  state.keys.forEach(function () { rows.insertRow().innerHTML = new Array(5).join('<td style="padding:0.1em 0.5em 0.1em 0"></td>'); });

  function draw() {
    shown = compute(state);
    var q = state.query;
    state.keys.forEach(function (k, i) {
      var w = shown.weights[i], used = i < state.valid, el = keys[i], r = 6 + 18 * Math.sqrt(w);
      el.circle.setAttribute("cx", px(k[0]));
      el.circle.setAttribute("cy", py(k[1]));
      el.circle.setAttribute("r", r.toFixed(2));
      el.circle.setAttribute("fill", used ? "rgba(31,119,180," + (0.15 + 0.7 * w).toFixed(3) + ")" : "none");
      el.circle.setAttribute("stroke-dasharray", used ? "" : "3 3");
      el.label.setAttribute("x", px(k[0]) + 0.75 * r + 2);
      el.label.setAttribute("y", py(k[1]) - 0.75 * r - 2);  // the label sits outside the disc
      el.label.textContent = "k" + (i + 1) + " v=" + state.values[i];
      el.group.setAttribute("opacity", used ? 1 : 0.5);
      var link = links[i];
      link.setAttribute("x1", px(q[0])); link.setAttribute("y1", py(q[1]));
      link.setAttribute("x2", px(k[0])); link.setAttribute("y2", py(k[1]));
      link.setAttribute("stroke-width", (0.5 + 4 * w).toFixed(3));
      link.setAttribute("stroke-opacity", used ? Math.max(w, 0.15).toFixed(3) : 0);
      var cells = rows.rows[i].cells;
      rows.rows[i].style.color = used ? "" : "#999";
      cells[0].textContent = "k" + (i + 1) + " (" + k[0].toFixed(2) + ", " + k[1].toFixed(2) + ")";
      cells[1].textContent = state.values[i];
      cells[2].textContent = shown.scores[i].toFixed(3);
      cells[3].innerHTML = '<span style="display:inline-block;height:0.7em;background:#1f77b4;width:' +
        (40 * w).toFixed(1) + 'px"></span> ' + w.toFixed(3);
    });
    diamond.setAttribute("x", px(q[0]) - 6);
    diamond.setAttribute("y", py(q[1]) - 6);
    diamond.setAttribute("transform", "rotate(45 " + px(q[0]) + " " + py(q[1]) + ")");
    qLabel.setAttribute("x", px(q[0]) + 10);
    qLabel.setAttribute("y", py(q[1]) + 14);
    root.querySelector("[data-show=query]").textContent = "(" + q[0].toFixed(2) + ", " + q[1].toFixed(2) + ")";
    root.querySelector("[data-show=output]").textContent = shown.output.toFixed(3);
    root.querySelector("[data-show=beta]").textContent = state.beta;
    root.querySelector("[data-show=valid]").textContent = state.valid;
  }

  function point(id) { return id === "q" ? state.query : state.keys[Number(id.slice(1))]; }
  function place(id, x, y) {  // inside the plane, on a 0.01 grid
    var p = point(id), clamp = function (v) { return Math.min(E, Math.max(-E, Math.round(v * 100) / 100)); };
    p[0] = clamp(x); p[1] = clamp(y);
    draw();
  }
  var dragging = null;
  svg.addEventListener("pointerdown", function (e) {
    var target = e.target.closest("[data-point]");
    if (!target) return;
    dragging = target.getAttribute("data-point");
    svg.setPointerCapture(e.pointerId);
    e.preventDefault();
  });
  svg.addEventListener("pointermove", function (e) {
    if (!dragging) return;
    var m = svg.getScreenCTM().inverse(), p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m);
    place(dragging, p.x / SIZE * 2 * E - E, E - p.y / SIZE * 2 * E);
  });
  ["pointerup", "pointercancel"].forEach(function (name) {
    svg.addEventListener(name, function () { dragging = null; });
  });
  svg.addEventListener("keydown", function (e) {
    var target = e.target.closest("[data-point]"), step = e.shiftKey ? 0.5 : 0.1;
    var move = {ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, step], ArrowDown: [0, -step]}[e.key];
    if (!target || !move) return;
    var p = point(target.getAttribute("data-point"));
    place(target.getAttribute("data-point"), p[0] + move[0], p[1] + move[1]);
    e.preventDefault();
  });
  root.querySelector("[data-control=reset]").addEventListener("click", function () {
    state.keys = data.keys.map(function (k) { return k.slice(); });
    state.query = data.query.slice();
    state.score = data.score; state.beta = data.beta; state.valid = data.keys.length;
    root.querySelector("[data-control=score]").value = data.score;
    root.querySelector("[data-control=beta]").value = data.betas.indexOf(data.beta);
    root.querySelector("[data-control=valid]").value = data.keys.length;
    draw();
  });
  root.querySelectorAll("input[data-control], select[data-control]").forEach(function (input) {
    input.addEventListener("input", function () {
      var name = input.getAttribute("data-control");
      if (name === "score") state.score = input.value;
      if (name === "beta") state.beta = data.betas[Number(input.value)];
      if (name === "valid") state.valid = Number(input.value);
      draw();
    });
  });
  // a <select> cannot hold the page's language spans: name the scores in the site's language
  var select = root.querySelector("[data-control=score]"), html = document.documentElement;
  function nameScores() {
    var lang = html.getAttribute("data-book-lang");
    Array.prototype.forEach.call(select.options, function (o) {
      var n = data.names[o.value];
      o.text = lang === "en" ? n[0] : lang === "zh" ? n[1] : n[0] + " · " + n[1];
    });
  }
  new MutationObserver(nameScores).observe(html, {attributes: true, attributeFilter: ["data-book-lang"]});
  nameScores();
  draw();
  window.acPlaygrounds = window.acPlaygrounds || {};
  window.acPlaygrounds[uid] = {
    compute: compute,
    state: function () { return JSON.parse(JSON.stringify(state)); },
    shown: function () { return JSON.parse(JSON.stringify(shown)); }
  };
}
