// The only script of our own (no inline scripts: the Content-Security-Policy forbids them).
// Copy buttons: <button data-copy="element-id" data-copied-text="Copied">.
"use strict";
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy]");
  if (!button) return;
  var source = document.getElementById(button.getAttribute("data-copy"));
  if (!source) return;
  var text = source.textContent.trim();
  var done = function () {
    var label = button.textContent;
    button.textContent = button.getAttribute("data-copied-text") || "Copied";
    setTimeout(function () { button.textContent = label; }, 2000);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, function () { selectText(source); });
  } else {
    selectText(source);
  }
});

// Without clipboard access, select the text so the person can copy it themselves.
function selectText(element) {
  var range = document.createRange();
  range.selectNodeContents(element);
  var selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}
