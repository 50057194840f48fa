// The console's own script: charts (uPlot), copy buttons and the live log tail. No inline scripts
// anywhere (the pages' Content-Security-Policy forbids them); data comes in <script type="application/json">.
(function () {
  "use strict";

  var PALETTE = ["#0b5cad", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0c8599", "#c2255c", "#5c940d"];

  function formatValue(unit, v) {
    if (v == null) return "-";
    if (unit === "usd") return "$" + (Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3));
    if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (Math.abs(v) >= 1e3) return (v / 1e3).toFixed(1) + "k";
    return String(Math.round(v * 100) / 100);
  }

  function drawChart(el) {
    if (!window.uPlot) return;
    var source = el.querySelector("script[type='application/json']");
    if (!source) return;
    var spec = JSON.parse(source.textContent);
    var target = el.querySelector(".chart-canvas") || el;
    target.textContent = "";
    if (!spec.x || spec.x.length === 0) {
      var empty = document.createElement("p");
      empty.className = "muted";
      empty.textContent = spec.empty || "No data in this period.";
      target.appendChild(empty);
      return;
    }
    var series = [{ label: "Day", value: function (u, v) { return v == null ? "-" : new Date(v * 1000).toISOString().slice(0, 10); } }];
    var data = [spec.x];
    spec.series.forEach(function (s, i) {
      var color = PALETTE[i % PALETTE.length];
      series.push({
        label: s.label,
        stroke: color,
        fill: spec.series.length === 1 ? color + "22" : undefined,
        width: 2,
        points: { show: spec.x.length < 40 },
        value: function (u, v) { return formatValue(spec.unit, v); },
      });
      data.push(s.values);
    });
    var width = Math.max(280, target.clientWidth || el.clientWidth || 600);
    var opts = {
      width: width,
      height: spec.height || 240,
      series: series,
      scales: { x: { time: true } },
      tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); }, // days are UTC days
      axes: [
        {},
        { size: 70, values: function (u, vals) { return vals.map(function (v) { return formatValue(spec.unit, v); }); } },
      ],
      legend: { live: true },
    };
    var plot = new window.uPlot(opts, data, target);
    el._plot = plot;
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        var w = Math.max(280, el.clientWidth);
        if (Math.abs(w - plot.width) > 4) plot.setSize({ width: w, height: opts.height });
      }).observe(el);
    }
  }

  function wireCopy(button) {
    button.addEventListener("click", function () {
      var field = document.getElementById(button.getAttribute("data-copy"));
      if (!field) return;
      var text = field.value !== undefined ? field.value : field.textContent;
      var done = function () {
        var status = document.getElementById(button.getAttribute("data-copy") + "-status");
        if (status) status.textContent = "Copied to the clipboard.";
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { field.select(); document.execCommand("copy"); done(); });
      } else {
        field.select();
        document.execCommand("copy");
        done();
      }
    });
  }

  function wireTail(el) {
    var url = el.getAttribute("data-tail-url");
    var body = document.getElementById(el.getAttribute("data-tail-body"));
    var status = document.getElementById(el.getAttribute("data-tail-status"));
    var source = null;
    el.addEventListener("change", function () {
      if (el.checked) {
        source = new EventSource(url);
        if (status) status.textContent = "Live: new requests appear at the top.";
        source.addEventListener("rows", function (event) {
          var holder = document.createElement("tbody");
          holder.innerHTML = event.data; // rows rendered and escaped by the server's templates
          var rows = Array.prototype.slice.call(holder.children).reverse();
          rows.forEach(function (row) { body.insertBefore(row, body.firstChild); });
          var empty = document.getElementById("logs-empty");
          if (empty) empty.remove();
        });
        source.addEventListener("signed-out", function () {
          source.close();
          window.location.reload(); // the session ended (key revoked): the page goes to the sign-in form
        });
        source.onerror = function () { if (status) status.textContent = "Live tail reconnecting..."; };
        source.onopen = function () { if (status) status.textContent = "Live: new requests appear at the top."; };
      } else if (source) {
        source.close();
        source = null;
        if (status) status.textContent = "Live tail off.";
      }
    });
  }

  function init(root) {
    root.querySelectorAll("[data-chart]").forEach(drawChart);
    root.querySelectorAll("button[data-copy]").forEach(wireCopy);
    root.querySelectorAll("input[data-tail-url]").forEach(wireTail);
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:afterSettle", function (event) { init(event.target); });
})();
