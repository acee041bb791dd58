/* Language switch: English / 中文 / both. Runs in <head> so the page never flashes the
   other language. The choice comes from the last choice (localStorage), else from the
   browser's language. A link may carry ?lang=: it is applied once, stored as the reader's
   choice, and removed from the address (history.replaceState), so a later choice of the
   reader wins on reload. <html lang> follows the mode, and in 中文 mode the theme's own
   interface (search, contents, previous/next, colour mode, back to top, footer, the search
   page) is shown in Chinese. */
(function () {
  "use strict";
  var KEY = "attention-book-lang";
  var CHOICES = ["en", "zh", "both"];
  var LABELS = { en: "English", zh: "中文", both: "EN + 中文" };
  var SHORT = { en: "EN", zh: "中文", both: "EN+中" };  /* on a phone (book.css) */
  var HTML_LANG = { en: "en", zh: "zh-Hans", both: "en" };

  /* The theme's interface strings (pydata-sphinx-theme, sphinx-book-theme, Sphinx search). */
  var ZH = {
    "Search": "搜索",
    "Search this book...": "在本书中搜索…",
    "Contents": "目录",
    "previous": "上一页",
    "next": "下一页",
    "previous page": "上一页",
    "next page": "下一页",
    "Back to top": "回到顶部",
    "Color mode": "颜色模式",
    "Light": "浅色",
    "Dark": "深色",
    "System Settings": "跟随系统",
    "Skip to main content": "跳到正文",
    "Download this page": "下载本页",
    "Download source file": "下载源文件",
    "Print to PDF": "打印为 PDF",
    "Fullscreen mode": "全屏模式",
    "Toggle hidden content": "展开或收起",
    "Toggle primary sidebar": "显示或隐藏目录侧栏",
    "Toggle secondary sidebar": "显示或隐藏本页目录",
    "Site navigation": "站点导航",
    "Section Navigation": "章节导航",
    "By The attention_core authors": "作者：attention_core 作者组",
    "© Copyright 2026.": "© 版权所有 2026。",
    "Search Results": "搜索结果",
    "Searching": "正在搜索",
    "Preparing search...": "正在准备搜索…",
    "Please activate JavaScript to enable the search functionality.": "请启用 JavaScript 以使用搜索功能。",
    "Your search did not match any documents. Please make sure that all words are spelled correctly and that you've selected enough categories.":
      "没有找到匹配的页面。请检查拼写，或换一个词试试。",
    "Search finished, found ${resultCount} page(s) matching the search query.":
      "搜索完成，找到 ${resultCount} 个匹配的页面。",
    "Language · 语言": "语言 · Language",
    "Download the book as a PDF, in English": "下载本书的英文版 PDF",
    "Download the book as a PDF, in Chinese": "下载本书的中文版 PDF",
    "Book in English (.pdf)": "全书英文版 (.pdf)",
    "Book in Chinese (.pdf)": "全书中文版 (.pdf)"
  };
  var ATTRS = ["title", "aria-label", "alt", "placeholder", "data-bs-title", "data-bs-original-title"];
  var CJK = /[\u3400-\u4dbf\u4e00-\u9fff]/, SEP = " · ";
  var SKIP = "pre, code, script, style, mjx-container, .cell_output, .lang-en, .lang-zh";

  function stored() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }
  }
  function store(lang) {
    try { localStorage.setItem(KEY, lang); } catch (e) { /* private mode: still switch */ }
  }
  function initial() {
    var params = new URLSearchParams(window.location.search);
    var asked = params.get("lang");
    if (params.has("lang")) {
      // a link's choice counts once, as if the reader had clicked it, and leaves the address
      if (CHOICES.indexOf(asked) >= 0) store(asked);
      params.delete("lang");
      var rest = params.toString();
      try {
        history.replaceState(history.state, "",
          window.location.pathname + (rest ? "?" + rest : "") + window.location.hash);
      } catch (e) { /* some file:// pages refuse: the stored choice still wins */ }
    }
    if (CHOICES.indexOf(stored()) >= 0) return stored();
    var nav = (navigator.languages && navigator.languages[0]) || navigator.language || "en";
    return /^zh/i.test(nav) ? "zh" : "en";
  }

  /* Interface text: originals are kept, so switching back restores them exactly. */
  var originalText = new WeakMap(), originalAttr = new WeakMap();
  function localise(root, lang) {
    var zh = lang === "zh";
    if (!root) return;
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (n) {
        var p = n.parentElement;
        return p && !p.closest(SKIP) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
      }
    });
    var node, texts = [];
    while ((node = walker.nextNode())) texts.push(node);
    texts.forEach(function (n) {
      var en = originalText.has(n) ? originalText.get(n) : n.nodeValue;
      var key = en.trim();
      if (!Object.prototype.hasOwnProperty.call(ZH, key)) return;
      originalText.set(n, en);
      var want = zh ? en.replace(key, ZH[key]) : en;
      if (n.nodeValue !== want) n.nodeValue = want;  // (an equal write would re-notify)
    });
    var els = root.querySelectorAll(ATTRS.map(function (a) { return "[" + a + "]"; }).join(", "));
    Array.prototype.forEach.call(els, function (el) { localiseAttrs(el, lang); });
  }
  /* An attribute as this mode shows it: a theme string from ZH, or one half of the book's
     bilingual label "English · 中文" (bilingual.py: Latin before the first separator, Chinese
     after it; the Chinese keeps a leading number); null when the text is not ours to change. */
  function shown(original, lang) {
    var key = original.trim();
    if (Object.prototype.hasOwnProperty.call(ZH, key)) {
      return lang === "zh" ? original.replace(key, ZH[key]) : original;
    }
    var at = original.indexOf(SEP);
    if (at < 0) return null;
    var en = original.slice(0, at), zh = original.slice(at + SEP.length);
    if (CJK.test(en) || !CJK.test(zh)) return null;
    var number = (en.match(/^\s*\d+(\.\d+)*\.?\s+/) || [""])[0];
    return lang === "en" ? en : lang === "zh" ? number + zh : original;
  }
  function localiseAttrs(el, lang) {
    if (el.closest("pre, code, .lang-en, .lang-zh")) return;
    var saved = originalAttr.get(el) || { original: {}, wrote: {} };
    ATTRS.forEach(function (a) {
      var now = el.getAttribute(a);
      // a value written since we last localised (a slider's next frame) is the new original
      if (a in saved.original && now !== saved.wrote[a]) delete saved.original[a];
      if (now === null) return;
      var original = a in saved.original ? saved.original[a] : now;
      var want = shown(original, lang);
      if (want === null) return;
      saved.original[a] = original;
      saved.wrote[a] = want;
      if (now !== want) el.setAttribute(a, want);
    });
    originalAttr.set(el, saved);
  }
  /* Sphinx's search page asks Documentation.gettext for its messages at search time. */
  function localiseMessages(lang) {
    if (typeof Documentation === "undefined" || !Documentation.TRANSLATIONS) return;
    Object.keys(ZH).forEach(function (en) {
      if (lang === "zh") Documentation.TRANSLATIONS[en] = ZH[en];
      else if (Documentation.TRANSLATIONS[en] === ZH[en]) delete Documentation.TRANSLATIONS[en];
    });
  }

  function apply(lang) {
    var html = document.documentElement;
    html.setAttribute("data-book-lang", lang);
    html.setAttribute("lang", HTML_LANG[lang]);
    localiseMessages(lang);
    var buttons = document.querySelectorAll(".lang-switch button");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].setAttribute("aria-pressed", String(buttons[i].value === lang));
    }
    if (document.body) localise(document.body, lang);
    setWindowTitle(lang);
  }
  /* The window title in the reader's language: each page names it in both (heading_languages);
     the "both" mode keeps the title the page was written with. */
  var bilingualTitle = null;
  function setWindowTitle(lang) {
    var meta = document.querySelector('meta[name="book-title-' + lang + '"]');
    if (!bilingualTitle && document.title) bilingualTitle = document.title;  // as written
    var want = meta ? meta.getAttribute("content") : bilingualTitle;
    if (want && document.title !== want) document.title = want;
  }
  function choose(lang) {
    store(lang);
    apply(lang);
  }

  /* Tables with one column per language (the notation table's meaning · 含义) show the
     column of the chosen language; the language-neutral columns stay. */
  function markLanguageColumns() {
    document.querySelectorAll("article table").forEach(function (table) {
      var heads = table.querySelectorAll("thead th");
      heads.forEach(function (th, col) {
        var text = th.textContent.trim();
        var cls = /^meaning$/i.test(text) ? "lang-en" : text === "含义" ? "lang-zh" : null;
        if (!cls) return;
        table.querySelectorAll("tr").forEach(function (tr) {
          var cell = tr.children[col];
          if (cell) cell.classList.add(cls, "lang-column");
        });
      });
    });
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
      b.lang = lang === "zh" ? "zh-Hans" : "en";
      b.title = LABELS[lang];
      var long = document.createElement("span"), short = document.createElement("span");
      long.className = "lang-long"; long.textContent = LABELS[lang];
      short.className = "lang-short"; short.textContent = SHORT[lang];
      b.appendChild(long); b.appendChild(short);
      b.addEventListener("click", function () { choose(lang); });
      group.appendChild(b);
    });
    var host = document.querySelector(".article-header-buttons") ||
               document.querySelector(".bd-header-article") || document.body;
    host.insertBefore(group, host.firstChild);
    // the book as a PDF in each language (make book prints them into pdf/ beside the pages):
    // two links beside the switch on a wide screen, and two entries in the download menu
    var root = document.documentElement.getAttribute("data-content_root") || "";
    var menu = document.querySelector(".dropdown-download-buttons .dropdown-menu");
    [["en", "Book in English (.pdf)", "Download the book as a PDF, in English"],
     ["zh", "Book in Chinese (.pdf)", "Download the book as a PDF, in Chinese"]].forEach(function (d) {
      if (!menu) return;
      var li = document.createElement("li"), a = document.createElement("a");
      a.href = root + "pdf/attention-" + d[0] + ".pdf";
      a.className = "btn btn-sm dropdown-item book-pdf-item";
      a.title = d[2];
      a.setAttribute("download", "");
      a.innerHTML = '<span class="btn__icon-container"><i class="fas fa-book"></i></span>' +
        '<span class="btn__text-container"></span>';
      a.lastChild.textContent = d[1];
      li.appendChild(a);
      menu.appendChild(li);
    });
    var pdfs = document.createElement("div");
    pdfs.className = "pdf-links";
    var icon = document.createElement("span");
    icon.className = "fa-solid fa-file-pdf";
    icon.setAttribute("aria-hidden", "true");
    pdfs.appendChild(icon);
    [["en", "English", "Download the book as a PDF, in English"],
     ["zh", "中文", "Download the book as a PDF, in Chinese"]].forEach(function (d) {
      var a = document.createElement("a");
      a.href = root + "pdf/attention-" + d[0] + ".pdf";
      a.hreflang = d[0] === "zh" ? "zh-Hans" : "en";
      a.lang = a.hreflang;
      a.title = d[2];
      a.setAttribute("download", "");
      a.textContent = d[1];  // each language's own name, as on the switch
      pdfs.appendChild(a);
    });
    host.insertBefore(pdfs, group.nextSibling);
    markLanguageColumns();
    apply(document.documentElement.getAttribute("data-book-lang"));
    // the search page writes its results after loading: localise what it writes
    var results = document.getElementById("search-results");
    if (results && window.MutationObserver) {
      new MutationObserver(function () {
        localise(results, document.documentElement.getAttribute("data-book-lang"));
      }).observe(results, { childList: true, subtree: true, characterData: true });
    }
    // figures label what they draw as they draw it (a slider frame's alt, a point's name):
    // each label a figure writes is shown in the reader's language too
    if (window.MutationObserver) {
      new MutationObserver(function (records) {
        var lang = document.documentElement.getAttribute("data-book-lang");
        records.forEach(function (r) {
          if (r.type === "attributes") localiseAttrs(r.target, lang);
          else r.addedNodes.forEach(function (n) {
            if (n.nodeType !== 1) return;
            localiseAttrs(n, lang);
            n.querySelectorAll("[alt], [aria-label], [title]").forEach(function (el) {
              localiseAttrs(el, lang);
            });
          });
        });
      }).observe(document.body, { subtree: true, childList: true, attributes: true,
                                  attributeFilter: ["alt", "aria-label", "title"] });
    }
  });
  // the theme's deferred scripts add tooltips and buttons after DOMContentLoaded
  window.addEventListener("load", function () {
    apply(document.documentElement.getAttribute("data-book-lang"));
  });
})();
