"""The web console, served by the media host under `/console/`.

Server-rendered pages (Jinja2) with htmx for partial updates and uPlot for charts, both vendored under
`static/vendor/`. `app.mount_console` mounts it; `sessions` (signed-cookie sessions, sign-in and out),
`csrf`, `deps` (`require_team`, `require_operator`), `templating` (`render`) and `errors` are what its
pages build on; `team/` holds the team console's pages.
"""
