/* Translate your own sentence (attention_core.book.translator): chapter 4's Bahdanau model or
   chapter 8's Transformer run in the page. The weights (float32, shipped with the book) load
   from the site itself the first time the reader asks; then every edit is tokenised, encoded
   and decoded greedily in float64, the steps of seq2seq.py and transformer.py (the Transformer
   with a KV cache). No kernel, no network beyond the site's own file.
   window.acTranslators[uid] exposes load() and translate(text) so that a test can compare
   them with PyTorch. */
function acTranslator(uid) {
  "use strict";
  var root = document.getElementById(uid);
  var data = JSON.parse(document.getElementById(uid + "-data").textContent);
  var input = root.querySelector('[data-control="source"]');
  var loadButton = root.querySelector('[data-control="load"]');
  var status = root.querySelector(".ac-translator-status");
  var output = root.querySelector(".ac-translator-output");
  var heatmap = root.querySelector(".ac-translator-heatmap");
  var model = null, loading = null;

  function say(en, zh) {  // one message in both languages, shown by the site's language mode
    status.innerHTML = "";
    [["lang-en", "en", en], ["lang-sep", null, " · "], ["lang-zh", "zh-Hans", zh]].forEach(function (p) {
      var span = document.createElement("span");
      span.className = p[0];
      if (p[1]) span.lang = p[1]; else span.setAttribute("aria-hidden", "true");
      span.textContent = p[2];
      status.appendChild(span);
    });
  }

  // ---- the model: float32 parameters, read into row-major matrices -----------------------
  function unpack(payload) {
    var bytes = atob(payload.float32), raw = new Uint8Array(bytes.length);
    for (var i = 0; i < bytes.length; i++) raw[i] = bytes.charCodeAt(i);
    var all = new Float32Array(raw.buffer), at = 0, p = {};
    payload.order.forEach(function (name) {
      var shape = payload.shapes[name], size = shape.reduce(function (a, b) { return a * b; }, 1);
      p[name] = {data: all.subarray(at, at + size), rows: shape[0], cols: shape.length > 1 ? shape[1] : 1};
      at += size;
    });
    var stoi = {};
    payload.src_itos.forEach(function (t, i) { stoi[t] = i; });
    var layers = 0;
    while (p["decoder.blks." + layers + ".ffn.dense1.weight"]) layers++;
    return {name: payload.name, p: p, stoi: stoi, src_itos: payload.src_itos, tgt_itos: payload.tgt_itos,
            maxLen: payload.max_len, maxSource: payload.max_source, layers: layers, heads: payload.heads};
  }
  function matvec(m, x, bias) {  // m.data (rows, cols) @ x (+ bias)
    var y = new Float64Array(m.rows);
    for (var r = 0; r < m.rows; r++) {
      var s = bias ? bias.data[r] : 0, off = r * m.cols;
      for (var c = 0; c < m.cols; c++) s += m.data[off + c] * x[c];
      y[r] = s;
    }
    return y;
  }
  function row(m, i) { return m.data.subarray(i * m.cols, (i + 1) * m.cols); }
  function sigmoid(x) { return 1 / (1 + Math.exp(-x)); }
  function gru(prefix, x, h) {  // torch.nn.GRU, one step; gates in the order r, z, n
    var p = model.p, d = h.length;
    var gi = matvec(p[prefix + "weight_ih_l0"], x, p[prefix + "bias_ih_l0"]);
    var gh = matvec(p[prefix + "weight_hh_l0"], h, p[prefix + "bias_hh_l0"]);
    var next = new Float64Array(d);
    for (var j = 0; j < d; j++) {
      var r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[d + j] + gh[d + j]);
      var n = Math.tanh(gi[2 * d + j] + r * gh[2 * d + j]);
      next[j] = (1 - z) * n + z * h[j];
    }
    return next;
  }

  // ---- one sentence: tokens -> encoder -> greedy decoding with additive attention --------
  function tokenize(text) {  // as WORDS in worlds/translation.py: words and punctuation apart
    return text.toLowerCase().match(/[\p{L}\p{N}_]+(?:'[\p{L}\p{N}_]+)?|[^\p{L}\p{N}_\s]/gu) || [];
  }
  function translate(text) {
    var source = tokenize(text), unknown = [];
    source.forEach(function (t) { if (!(t in model.stoi) && unknown.indexOf(t) < 0) unknown.push(t); });
    var result = {source: source, unknown: unknown, output: [], weights: []};
    if (!source.length || source.length > model.maxSource || unknown.length) return result;
    var ids = source.map(function (t) { return model.stoi[t]; }).concat([model.stoi["<eos>"]]);
    var step = model.name === "transformer" ? transformerDecoder(ids) : bahdanauDecoder(ids);
    var token = model.tgt_itos.indexOf("<bos>");
    for (var t = 0; t < model.maxLen; t++) {  // greedy: the most likely token, until <eos>
      var out = step(token, t), logits = out.logits, best = 0;
      for (var v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
      result.weights.push(out.weights);
      token = best;
      if (model.tgt_itos[best] === "<eos>") break;
      result.output.push(model.tgt_itos[best]);
    }
    return result;
  }
  function softmax(scores) {
    var top = Math.max.apply(null, scores), total = 0;
    var e = scores.map(function (s) { var x = Math.exp(s - top); total += x; return x; });
    return e.map(function (x) { return x / total; });
  }

  // chapter 4: a GRU encoder; the decoder's previous state queries additive attention
  function bahdanauDecoder(ids) {
    var p = model.p, d = p["encoder.rnn.weight_hh_l0"].cols;
    var h = new Float64Array(d), memory = [], keys = [];
    ids.forEach(function (id) {  // the encoder: o_j for every token, <eos> included
      h = gru("encoder.rnn.", row(p["encoder.embedding.weight"], id), h);
      memory.push(h);
      keys.push(matvec(p["decoder.attention.W_k.weight"], h));  // W_k o_j, once per sentence
    });
    var w_v = p["decoder.attention.w_v.weight"].data, E = p["decoder.embedding.weight"];
    return function (token) {
      var q = matvec(p["decoder.attention.W_q.weight"], h);
      var alpha = softmax(keys.map(function (k) {  // w_v . tanh(W_q s_{t-1} + W_k o_j)
        var s = 0;
        for (var a = 0; a < k.length; a++) s += w_v[a] * Math.tanh(q[a] + k[a]);
        return s;
      }));
      var x = new Float64Array(E.cols + d);
      x.set(row(E, token));
      memory.forEach(function (o, j) {  // [e(y_{t-1}); c_t], c_t = sum_j alpha_j o_j
        for (var c = 0; c < d; c++) x[E.cols + c] += alpha[j] * o[c];
      });
      h = gru("decoder.rnn.", x, h);
      return {logits: matvec(p["decoder.dense.weight"], h, p["decoder.dense.bias"]), weights: alpha};
    };
  }

  // chapter 8: post-norm Transformer blocks; the decoder caches its keys and values
  function embed(prefix, id, position) {  // embedding * sqrt(d) + sinusoidal positions
    var E = model.p[prefix + "embedding.weight"], P = row(model.p.positions, position);
    var x = new Float64Array(E.cols), scale = Math.sqrt(E.cols), e = row(E, id);
    for (var c = 0; c < E.cols; c++) x[c] = e[c] * scale + P[c];
    return x;
  }
  function layerNorm(prefix, x) {  // torch.nn.LayerNorm, eps 1e-5
    var n = x.length, mean = 0, varSum = 0, y = new Float64Array(n), i;
    for (i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (i = 0; i < n; i++) varSum += (x[i] - mean) * (x[i] - mean);
    var inv = 1 / Math.sqrt(varSum / n + 1e-5), g = model.p[prefix + "weight"].data, b = model.p[prefix + "bias"].data;
    for (i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * g[i] + b[i];
    return y;
  }
  function add(a, b) { var y = new Float64Array(a.length); for (var i = 0; i < a.length; i++) y[i] = a[i] + b[i]; return y; }
  function ffn(prefix, x) {
    var hidden = matvec(model.p[prefix + "dense1.weight"], x, model.p[prefix + "dense1.bias"]);
    for (var i = 0; i < hidden.length; i++) hidden[i] = Math.max(0, hidden[i]);
    return matvec(model.p[prefix + "dense2.weight"], hidden, model.p[prefix + "dense2.bias"]);
  }
  function heads(prefix, q, keys, values) {  // softmax(q k^T / sqrt(d_head)) v per head, then W_o
    var h = model.heads, dh = q.length / h, out = new Float64Array(q.length), weights = [];
    for (var k = 0; k < h; k++) {
      var alpha = softmax(keys.map(function (key) {
        var s = 0;
        for (var c = k * dh; c < (k + 1) * dh; c++) s += q[c] * key[c];
        return s / Math.sqrt(dh);
      }));
      alpha.forEach(function (a, j) { for (var c = k * dh; c < (k + 1) * dh; c++) out[c] += a * values[j][c]; });
      weights.push(alpha);
    }
    return {out: matvec(model.p[prefix + "W_o.weight"], out), weights: weights};
  }
  function transformerDecoder(ids) {
    var p = model.p, layers = model.layers;
    var X = ids.map(function (id, i) { return embed("encoder.", id, i); });
    for (var l = 0; l < layers; l++) {  // encoder block: self-attention over every source token
      var b = "encoder.blks." + l + ".";
      var K = X.map(function (x) { return matvec(p[b + "attention.W_k.weight"], x); });
      var V = X.map(function (x) { return matvec(p[b + "attention.W_v.weight"], x); });
      X = X.map(function (x) {
        var y = layerNorm(b + "addnorm1.ln.", add(x, heads(b + "attention.", matvec(p[b + "attention.W_q.weight"], x), K, V).out));
        return layerNorm(b + "addnorm2.ln.", add(y, ffn(b + "ffn.", y)));
      });
    }
    var cross = [], cache = [];
    for (l = 0; l < layers; l++) {  // each block's cross-attention keys and values, once
      b = "decoder.blks." + l + ".attention2.";
      cross.push({K: X.map(function (x) { return matvec(p[b + "W_k.weight"], x); }),
                  V: X.map(function (x) { return matvec(p[b + "W_v.weight"], x); })});
      cache.push({K: [], V: []});
    }
    return function (token, t) {
      var x = embed("decoder.", token, t), weights = [];
      for (var l = 0; l < layers; l++) {
        var b = "decoder.blks." + l + ".";
        cache[l].K.push(matvec(p[b + "attention1.W_k.weight"], x));  // positions 0..t
        cache[l].V.push(matvec(p[b + "attention1.W_v.weight"], x));
        var y = layerNorm(b + "addnorm1.ln.", add(x, heads(b + "attention1.", matvec(p[b + "attention1.W_q.weight"], x), cache[l].K, cache[l].V).out));
        var c = heads(b + "attention2.", matvec(p[b + "attention2.W_q.weight"], y), cross[l].K, cross[l].V);
        var z = layerNorm(b + "addnorm2.ln.", add(y, c.out));
        x = layerNorm(b + "addnorm3.ln.", add(z, ffn(b + "ffn.", z)));
        weights.push(c.weights);  // (heads, n_src) of this layer
      }
      return {logits: matvec(p["decoder.dense.weight"], x, p["decoder.dense.bias"]), weights: weights};
    };
  }

  // ---- what the reader sees -----------------------------------------------------------------
  function show(result, ms) {
    output.textContent = "";
    heatmap.innerHTML = "";
    if (!result.source.length) { say("Type an English number or date.", "请输入一个英文数字或日期。"); return; }
    if (result.source.length > model.maxSource) {
      say("At most " + model.maxSource + " tokens, please (this has " + result.source.length + ").",
          "请不要超过 " + model.maxSource + " 个词元（这里有 " + result.source.length + " 个）。");
      return;
    }
    if (result.unknown.length) {
      say("Not in the model's vocabulary: " + result.unknown.join(", ") + ". Nothing is translated: the model would read each as <unk>, a token it never saw. See what it knows below the box.",
          "模型词表中没有：" + result.unknown.join("、") + "。因此不翻译：模型会把它们都读成从未见过的 <unk>。它认识的内容见输入框下方。");
      root.querySelector(".ac-translator-help").style.fontWeight = "bold";
      return;
    }
    root.querySelector(".ac-translator-help").style.fontWeight = "";
    output.textContent = result.output.join("");
    var items = result.source.filter(function (t) { return t === ";"; }).length + 1;
    var ended = result.weights.length > result.output.length;  // the last step chose <eos>
    say("Greedy decoding, " + result.weights.length + " steps, " + ms.toFixed(1) + " ms in this page." +
        (ended ? "" : " It stopped at the limit of " + model.maxLen + " tokens without <eos>.") +
        (items > 4 ? " The model was trained on one to four items; with " + items + " it may drop or repeat some." : ""),
        "贪心解码，" + result.weights.length + " 步，在本页用时 " + ms.toFixed(1) + " 毫秒。" +
        (ended ? "" : "它在 " + model.maxLen + " 个词元的上限处停下，没有生成 <eos>。") +
        (items > 4 ? "模型只在一到四项的句子上训练过；这里有 " + items + " 项，它可能漏掉或重复其中一些。" : ""));
    if (model.name === "transformer") headView(result); else alignmentTable(result);
  }
  function alignmentTable(result) {  // chapter 4's heatmap: rows output tokens, columns source
    var table = document.createElement("table"), head = table.insertRow();
    table.style.cssText = "border-collapse:collapse;font-size:0.75em;margin:0.5em 0";
    head.insertCell().textContent = "";
    result.source.concat(["<eos>"]).forEach(function (t) {
      var th = document.createElement("th");
      th.textContent = t;
      th.style.cssText = t.length > 1 ? "writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;padding:2px 0;text-align:left"
                                      : "font-weight:bold;vertical-align:bottom;padding:2px 0";  // "," and ";" upright
      head.appendChild(th);
    });
    result.weights.forEach(function (alpha, i) {
      var tr = table.insertRow(), label = tr.insertCell();
      label.textContent = i < result.output.length ? result.output[i] : "<eos>";
      label.style.cssText = "padding:0 0.4em;text-align:right;white-space:nowrap";
      alpha.forEach(function (a) {
        var td = tr.insertCell();
        td.title = a.toFixed(3);
        td.style.cssText = "width:1.4em;min-width:1.4em;height:1.4em;border:1px solid #fff;background:rgba(214,39,40," + a.toFixed(3) + ")";
      });
    });
    heatmap.appendChild(table);
    var caption = document.createElement("p");
    caption.style.cssText = "font-size:0.8em;margin:0";
    caption.innerHTML = '<span class="lang-en" lang="en">rows: output tokens, top to bottom; columns: source tokens; darker = more weight (hover a cell for its value)</span><span class="lang-sep" aria-hidden="true"> · </span><span class="lang-zh" lang="zh-Hans">行：从上到下的输出词元；列：源词元；颜色越深权重越大（鼠标悬停可看数值）</span>';
    heatmap.appendChild(caption);
  }
  // a <select> cannot hold the page's language spans: its "all" follows the site's language mode
  function localiseAll() {
    var lang = document.documentElement.getAttribute("data-book-lang");
    root.querySelectorAll('option[value="all"]').forEach(function (o) {
      o.text = lang === "en" ? "all" : lang === "zh" ? "全部" : "all · 全部";
    });
  }
  new MutationObserver(localiseAll).observe(document.documentElement, {attributes: true, attributeFilter: ["data-book-lang"]});
  var COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
  var view = {layer: null, head: "all"};  // opens on the last layer, where chapter 8's heads align
  function headView(result) {  // chapter 8's head view: lines from the decoder's inputs to the source
    if (view.layer === null) view.layer = model.layers - 1;
    var controls = document.createElement("div"), SVG = "http://www.w3.org/2000/svg";
    function select(label, options, key) {
      var wrap = document.createElement("label"), el = document.createElement("select");
      wrap.style.marginRight = "1em";
      wrap.innerHTML = label + " ";
      options.forEach(function (o) {
        var opt = document.createElement("option");
        opt.value = o[0] === "all" ? "all" : String(o[0] + 1);
        opt.textContent = o[1];
        if (String(view[key]) === String(o[0])) opt.selected = true;  // values count from 1, as the labels
        el.appendChild(opt);
      });
      el.dataset.control = key;
      el.addEventListener("change", function () {
        view[key] = el.value === "all" ? "all" : +el.value - 1;
        show(last, lastMs);  // redraws the controls too: the new menu takes the keyboard's focus
        var again = root.querySelector('select[data-control="' + key + '"]');
        if (again) again.focus();
      });
      wrap.appendChild(el);
      controls.appendChild(wrap);
    }
    var both = function (en, zh) { return '<span class="lang-en" lang="en">' + en + '</span><span class="lang-sep" aria-hidden="true"> · </span><span class="lang-zh" lang="zh-Hans">' + zh + "</span>"; };
    var layerOptions = [], headOptions = [["all", "all · 全部"]];
    for (var l = 0; l < model.layers; l++) layerOptions.push([l, String(l + 1)]);
    for (var k = 0; k < model.heads; k++) headOptions.push([k, String(k + 1)]);
    select(both("layer", "层"), layerOptions, "layer");
    select(both("head", "头"), headOptions, "head");
    localiseAll();
    var legend = document.createElement("span");  // one swatch per head, as in chapter 8's figure
    for (k = 0; k < model.heads; k++) {
      var item = document.createElement("span"), swatch = document.createElement("span");
      item.style.whiteSpace = "nowrap";  // a swatch and its head's number stay together
      swatch.style.cssText = "display:inline-block;width:1.2em;height:0.35em;vertical-align:middle;margin:0 0.2em 0 0.6em;background:" + COLORS[k % COLORS.length] + ";opacity:" + (view.head === "all" || +view.head === k ? 1 : 0.2);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(String(k + 1)));
      legend.appendChild(item);
      legend.appendChild(document.createTextNode(" "));
    }
    legend.style.fontSize = "0.85em";
    controls.appendChild(legend);
    heatmap.appendChild(controls);
    var queries = ["<bos>"].concat(result.output).slice(0, result.weights.length);
    var keys = result.source.concat(["<eos>"]), rows = Math.max(queries.length, keys.length);
    var W = 340, H = 16 * rows + 30, x0 = 70, x1 = 230;
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "cross-attention head view · 交叉注意力头视图");  // lang-switch.js picks
    svg.style.cssText = "width:100%;max-width:" + W * 1.4 + "px;display:block";
    function y(i, n) { return n > 1 ? 10 + (H - 30) * i / (n - 1) : H / 2; }
    function make(tag, attrs) {
      var el = document.createElementNS(SVG, tag);
      Object.keys(attrs).forEach(function (a) { el.setAttribute(a, attrs[a]); });
      svg.appendChild(el);
      return el;
    }
    var shown = view.head === "all" ? Array.from({length: model.heads}, function (_, i) { return i; }) : [+view.head];
    var spread = 0.25 * (H - 30) / Math.max(keys.length - 1, 1);
    shown.forEach(function (k) {
      var shift = view.head === "all" ? spread * (k - (model.heads - 1) / 2) / Math.max(model.heads - 1, 1) : 0;
      result.weights.forEach(function (layers, i) {
        layers[view.layer][k].forEach(function (a, j) {
          if (a > 0.02) make("line", {x1: x0, y1: y(i, queries.length), x2: x1, y2: y(j, keys.length) + shift,
                                      stroke: COLORS[k % COLORS.length], "stroke-opacity": Math.min(1, a).toFixed(3),
                                      "stroke-width": (0.5 + 3 * a).toFixed(2), "stroke-linecap": "round"});
        });
      });
    });
    queries.forEach(function (t, i) { make("text", {x: x0 - 4, y: y(i, queries.length) + 4, "text-anchor": "end", "font-size": 11}).textContent = t; });
    keys.forEach(function (t, j) { make("text", {x: x1 + 4, y: y(j, keys.length) + 4, "font-size": 11}).textContent = t; });
    heatmap.appendChild(svg);
  }
  var last = null, lastMs = 0;
  function run() {
    var start = performance.now(), result = translate(input.value);
    last = result;
    lastMs = performance.now() - start;
    show(result, lastMs);
    return result;
  }
  function load() {  // the model's script, from the site's _static beside lang-switch.js
    if (loading) return loading;
    var ready = window.acModels && window.acModels[data.model];
    loading = new Promise(function (resolve, reject) {
      if (ready) { resolve(); return; }
      var here = document.querySelector('script[src*="lang-switch.js"]');
      var script = document.createElement("script");
      script.src = here ? here.src.replace(/lang-switch\.js.*$/, data.script) : "_static/" + data.script;
      script.onload = resolve;
      script.onerror = function () { reject(new Error("could not load " + script.src)); };
      say("Loading the model…", "正在加载模型…");
      document.head.appendChild(script);
    }).then(function () {
      model = unpack(window.acModels[data.model]);
      loadButton.hidden = true;
      run();
    }, function (error) {
      loading = null;
      say("The model's file could not be loaded (" + error.message + ").", "无法加载模型文件（" + error.message + "）。");
      throw error;
    });
    return loading;
  }

  loadButton.addEventListener("click", function () { load().catch(function () {}); });
  input.addEventListener("input", function () {
    if (model) run();
    else if (!loading) say("Press the button above, or Enter, to run the model.", "按上面的按钮或回车键运行模型。");
  });
  input.addEventListener("keydown", function (e) { if (e.key === "Enter") load().catch(function () {}); });
  root.querySelectorAll("[data-example]").forEach(function (b) {
    b.addEventListener("click", function () {
      input.value = data.examples[+b.dataset.example];
      if (model) run(); else load().catch(function () {});
    });
  });
  (window.acTranslators = window.acTranslators || {})[uid] = {
    load: load, translate: function (text) { return translate(text); },
    run: function (text) { input.value = text; return run(); }};
}
