/* Language switch: English / 中文 / both. Runs in <head> so the page never flashes the
   other language. The choice comes from ?lang=, then from the last choice (localStorage),
   then from the browser's language; it is remembered across pages. */
(function () {
  "use strict";
  var KEY = "attention-book-lang";
  var CHOICES = ["en", "zh", "both"];
  var LABELS = { en: "English", zh: "中文", both: "EN + 中文" };

  function stored() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }
  }
  function initial() {
    var asked = new URLSearchParams(window.location.search).get("lang");
    if (CHOICES.indexOf(asked) >= 0) return asked;
    if (CHOICES.indexOf(stored()) >= 0) return stored();
    var nav = (navigator.languages && navigator.languages[0]) || navigator.language || "en";
    return /^zh/i.test(nav) ? "zh" : "en";
  }
  function apply(lang) {
    document.documentElement.setAttribute("data-book-lang", lang);
    var buttons = document.querySelectorAll(".lang-switch button");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].setAttribute("aria-pressed", String(buttons[i].value === lang));
    }
  }
  function choose(lang) {
    apply(lang);
    try { localStorage.setItem(KEY, lang); } catch (e) { /* private mode: still switch */ }
  }

  apply(initial());

  document.addEventListener("DOMContentLoaded", function () {
    var group = document.createElement("div");
    group.className = "lang-switch";
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", "Language · 语言");
    CHOICES.forEach(function (lang) {
      var b = document.createElement("button");
      b.type = "button";
      b.value = lang;
      b.textContent = LABELS[lang];
      b.addEventListener("click", function () { choose(lang); });
      group.appendChild(b);
    });
    var host = document.querySelector(".article-header-buttons") ||
               document.querySelector(".bd-header-article") || document.body;
    host.insertBefore(group, host.firstChild);
    apply(document.documentElement.getAttribute("data-book-lang"));
  });
})();
