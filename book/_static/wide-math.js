/* A display equation wider than its column scrolls inside its own box (book.css). Such a box
   is made a Tab stop, so that a reader without a mouse can scroll it with the arrow keys
   (WCAG 2.1.1); an equation that fits is not a Tab stop (MathJax's menu is off in _config.yml).
   Whether an equation fits changes with the window and with the language mode (the columns),
   so it is decided again after each. */
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll('div.math mjx-container[display="true"]').forEach(function (m) {
      var wide = m.scrollWidth > m.clientWidth + 1;  // 0 and 0 when hidden: not a Tab stop
      if (wide && m.getAttribute("tabindex") !== "0") m.setAttribute("tabindex", "0");
      if (!wide && m.hasAttribute("tabindex")) m.removeAttribute("tabindex");
    });
  }
  var pending = null;
  function later() {
    if (pending) clearTimeout(pending);
    pending = setTimeout(mark, 100);
  }
  window.addEventListener("load", function () {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(mark);
    }
    window.addEventListener("resize", later);
    new MutationObserver(later).observe(document.documentElement,
      { attributes: true, attributeFilter: ["data-book-lang"] });
  });
})();
