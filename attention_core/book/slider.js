/* The kernel-free face of an interactive figure (attention_core.book.widgets): one range input
   per slider swaps precomputed PNG frames, listed in row-major order over the sliders (the
   last slider varies fastest). No kernel, no widget library, no network. */
function acSliderFigure(uid) {
  "use strict";
  var root = document.getElementById(uid);
  var data = JSON.parse(document.getElementById(uid + "-data").textContent);
  var img = root.querySelector("img");
  var inputs = root.querySelectorAll("input"), outputs = root.querySelectorAll("output");
  var pos = data.starts.slice();
  function show() {
    var k = 0;
    for (var i = 0; i < pos.length; i++) {
      k = k * data.sizes[i] + pos[i];
      outputs[i].innerHTML = data.outputs[i][pos[i]];  // our own markup: a value in each language
    }
    img.src = "data:image/png;base64," + data.frames[k];
    img.alt = data.alts[pos.join(",")];
  }
  inputs.forEach(function (input, i) {
    input.addEventListener("input", function () { pos[i] = Number(input.value); show(); });
  });
}
