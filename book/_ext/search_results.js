/* The search page's results (book/_ext/zh_search.py passes this file to Sphinx as
   html_search_scorer, so it opens Sphinx's language_data.js).

   Ranking. Sphinx gives every page whose section titles hold the query's words the same
   title score, so chapter 10 ("positional encoding" in a section title) could rank above
   chapter 6, "Positional Encoding". A page whose own title holds every word of the query
   ranks first, then a section so titled, then pages that only mention the words. A page's
   title is indexed twice (as the page, with the heading's language spans, and as its first
   section, without): the second entry is made equal to the first, so Sphinx drops it.

   Snippets. Sphinx cuts a snippet from the page's main block, which holds the page's contents
   list and its code: we keep the article's prose in the reader's language, drop code, figures
   and the page title (the result's link shows it), and write each formula as plain text
   (\mathbf{q}^\top\mathbf{k}/\sqrt{d} as qᵀk/√d) instead of raw TeX. */
var Scorer = {
  score: function (result) {
    var words = (new URLSearchParams(window.location.search).get("q") || "")
      .toLowerCase().split(/\s+/).filter(Boolean);
    var plain = function (html) { return String(html || "").replace(/<[^>]*>/g, ""); };
    var parts = String(result[1] || "").split(" > ");
    if (parts.length === 2 && parts[1] === plain(parts[0])) {  // the page's own title again
      result[1] = parts[0];
    }
    var title = plain(result[1]);
    var holds = function (text) {
      text = text.toLowerCase();
      return words.length > 0 && words.every(function (w) { return text.indexOf(w) >= 0; });
    };
    if (!result[2] && holds(plain(result[1]))) return result[4] + 50;
    if (holds(title)) return result[4] + 20;
    return result[4];
  },
  // Sphinx's own weights (searchtools.js), which a Scorer must restate
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2
};

var bookTexToText = (function () {
  var NAMES = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ",
    eta: "η", theta: "θ", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π",
    rho: "ρ", sigma: "σ", tau: "τ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω",
    Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Pi: "Π", Sigma: "Σ", Phi: "Φ",
    Psi: "Ψ", Omega: "Ω", top: "ᵀ", cdot: "·", times: "×", le: "≤", leq: "≤", ge: "≥",
    geq: "≥", ne: "≠", neq: "≠", approx: "≈", sum: "Σ", prod: "∏", in: "∈", infty: "∞",
    to: "→", rightarrow: "→", leftarrow: "←", mapsto: "↦", partial: "∂", nabla: "∇",
    odot: "⊙", otimes: "⊗", ell: "ℓ", ldots: "…", cdots: "⋯", dots: "…", propto: "∝",
    sim: "~", pm: "±", mid: "|", Vert: "‖", lVert: "‖", rVert: "‖", langle: "⟨",
    rangle: "⟩", lfloor: "⌊", rfloor: "⌋", lceil: "⌈", rceil: "⌉", quad: " ", qquad: " ",
    left: "", right: "", big: "", Big: "", bigg: "", Bigg: ""
  };
  var has = function (o, k) { return Object.prototype.hasOwnProperty.call(o, k); };
  return function (tex) {
    var t = tex.trim().replace(/^(\\\(|\\\[|\$\$?)/, "").replace(/(\\\)|\\\]|\$\$?)$/, "");
    t = t.replace(/\\([A-Za-z]+)/g, function (m, name) { return has(NAMES, name) ? NAMES[name] : m; });
    t = t.replace(/\\\|/g, "‖");
    t = t.replace(/\\(?:mathbf|mathrm|mathit|mathsf|mathcal|mathbb|boldsymbol|textbf|textrm|text|operatorname)\s*\{([^{}]*)\}/g, "$1");
    var group = function (x) { return /^\s*[^\s()+\-]{1,4}\s*$/.test(x) ? x.trim() : "(" + x + ")"; };
    t = t.replace(/\\sqrt\s*\{([^{}]*)\}/g, function (m, x) { return "√" + group(x); });
    for (var i = 0; i < 3; i++) {
      t = t.replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, function (m, a, b) {
        return group(a) + "/" + group(b);
      });
    }
    t = t.replace(/\\([A-Za-z]+)/g, "$1");  // a command we do not know: its name
    t = t.replace(/\\[,;:!> ]/g, " ").replace(/\\([{}_%&#$])/g, "$1");
    t = t.replace(/\^\s*\{?\s*ᵀ\s*\}?/g, "ᵀ").replace(/[{}]/g, "");
    return t.replace(/\s+/g, " ").trim();
  };
})();

document.addEventListener("DOMContentLoaded", function () {
  if (typeof Search === "undefined" || !Search.htmlToText) return;
  var original = Search.htmlToText;
  Search.htmlToText = function (htmlString, anchor) {
    var doc = new DOMParser().parseFromString(htmlString, "text/html");
    var main = doc.querySelector('[role="main"]'), article = doc.querySelector("article.bd-article");
    if (main && article) main.replaceChildren(article);  // not the contents list or buttons
    var lang = document.documentElement.getAttribute("data-book-lang");
    var drop = "h1, .cell_input, .cell_output, div.highlight, pre, .ac-slider-figure, " +
      "mjx-container, script, style" +
      (lang === "en" ? ", .lang-zh" : lang === "zh" ? ", .lang-en" : "");
    doc.querySelectorAll(drop).forEach(function (el) { el.remove(); });
    doc.querySelectorAll(".math").forEach(function (m) {
      m.textContent = " " + bookTexToText(m.textContent) + " ";
    });
    return original(doc.documentElement.outerHTML, anchor);
  };
});
