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

// A failed htmx request says so in the page's notice line (#notice; added at the top of the
// page where it has none): htmx swaps nothing for an error status (the htmx-config meta in
// base.html), so without this a click would seem to do nothing. The views answer what they
// expect themselves (a form's error, a row deleted elsewhere); this is for the rest.
var FAILURES = {
  403: "Your page is out of date: reload it, then try again.",
  404: "This is no longer here: reload the page to see what is.",
  413: "That is too large to send.",
  429: "Too many requests: wait a minute, then try again."
};

function failureText(status) {
  if (FAILURES[status]) return FAILURES[status];
  if (status >= 500) return "Something went wrong on our side (HTTP " + status + "). Try again in a moment.";
  return "That did not work (HTTP " + status + "). Reload the page, then try again.";
}

function showFailure(text) {
  var notice = document.getElementById("notice");
  if (!notice) {
    notice = document.createElement("div");
    notice.id = "notice";
    var main = document.getElementById("main");
    main.insertBefore(notice, main.firstChild);
  }
  notice.className = "notice is-error";
  notice.setAttribute("role", "alert");
  var line = document.createElement("p");
  line.textContent = text;
  notice.replaceChildren(line);
}

document.addEventListener("htmx:responseError", function (event) {
  showFailure(failureText(event.detail.xhr.status));
});
document.addEventListener("htmx:sendError", function () {
  showFailure("The server could not be reached: check your connection, then try again.");
});

// An action that refreshes a whole section (deleting a note or a session's memory, marking a
// fact no longer true; deleting a conversation refreshes the facts too, out of band) replaces
// every item in it, and with them any edit form the person has open elsewhere in the
// section: what they typed would be lost. The server cannot know what is typed, so the
// browser keeps it: an item being edited (class is-edit) that a refreshed section still holds
// is put back as it was, typed text, caret and focus included. An item the section no longer
// holds went away (deleted), and the edit with it; the item the action came from, or that it
// targets itself (a Save, a Cancel), takes the answer.
var keptEdits = [];
var keptFocus = null;

document.addEventListener("htmx:beforeSwap", function (event) {
  keptEdits = [];
  keptFocus = null;
  if (!event.detail.shouldSwap) return;
  var target = event.detail.target;
  var acting = event.detail.requestConfig && event.detail.requestConfig.elt;
  keptEdits = Array.prototype.filter.call(
    document.querySelectorAll(".is-edit[id]"),
    function (item) { return item !== target && !(acting && item.contains(acting)); }
  );
  var active = document.activeElement;
  if (active && keptEdits.some(function (item) { return item.contains(active); })) {
    keptFocus = {element: active, start: active.selectionStart, end: active.selectionEnd};
  }
});

document.addEventListener("htmx:afterSwap", function () {
  keptEdits.forEach(function (item) {
    var fresh = document.getElementById(item.id);  // the item itself where nothing was swapped
    if (fresh && fresh !== item) fresh.replaceWith(item);
  });
  keptEdits = [];
});

// After the settle, where htmx focuses the new content's autofocus (the section's heading).
document.addEventListener("htmx:afterSettle", function () {
  var kept = keptFocus;
  keptFocus = null;
  if (!kept || !document.body.contains(kept.element)) return;
  kept.element.focus({preventScroll: true});
  if (kept.start != null && kept.element.setSelectionRange) {
    try { kept.element.setSelectionRange(kept.start, kept.end); } catch (e) { /* no caret */ }
  }
});
