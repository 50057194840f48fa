// The operator console's one behaviour beyond the shared console.js: ask before a destructive action
// (revoking a key, suspending a team, deleting a model). Buttons name their question in data-confirm.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    var question = button && button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();
