"""agentd's web console: the static page, scripts and stylesheet `app.api.console` serves at
`/console/` (plain HTML, CSS and ES modules: no build step, nothing fetched from elsewhere)."""
