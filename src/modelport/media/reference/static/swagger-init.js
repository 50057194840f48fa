// Starts Swagger UI on the element that names its OpenAPI document (no inline script needed).
(function () {
  var el = document.getElementById("swagger-ui");
  if (!el || !window.SwaggerUIBundle) { return; }
  window.ui = window.SwaggerUIBundle({
    url: el.getAttribute("data-openapi-url"),
    domNode: el,
    deepLinking: true,
    // The default validator is a remote service: these pages make no request outside this host.
    validatorUrl: null,
    tryItOutEnabled: false,
    persistAuthorization: false,
  });
})();
