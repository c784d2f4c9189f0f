// Deep links: every view has a URL under /console/ mirroring the API's paths (History API).

import { ROOT } from "./api.js";

export const BASE = `${ROOT}/console`;

const seg = "([^/]+)";
const ROUTES = [
  { name: "apps", pattern: /^\/?$/ },
  { name: "app", pattern: new RegExp(`^/apps/${seg}/?$`), keys: ["app"] },
  { name: "sessions", pattern: new RegExp(`^/apps/${seg}/users/${seg}/sessions/?$`), keys: ["app", "user"] },
  {
    name: "session",
    pattern: new RegExp(`^/apps/${seg}/users/${seg}/sessions/${seg}/?$`),
    keys: ["app", "user", "sid"],
  },
];

/** The view a URL shows: {name, params, query}; name "missing" when no view matches. */
export function parse(url = window.location) {
  const path = url.pathname.startsWith(BASE) ? url.pathname.slice(BASE.length) : url.pathname;
  const query = new URLSearchParams(url.search);
  for (const route of ROUTES) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    const params = {};
    (route.keys || []).forEach((key, i) => {
      params[key] = decodeURIComponent(match[i + 1]);
    });
    return { name: route.name, params, query };
  }
  return { name: "missing", params: { path }, query };
}

/** The console URL of a view, from unescaped segments and an optional query object. */
export function href(segments = [], query = {}) {
  const path = segments.map((s) => `/${encodeURIComponent(s)}`).join("");
  const search = new URLSearchParams(
    Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  ).toString();
  return `${BASE}${path || "/"}${search ? `?${search}` : ""}`;
}

export function appHref(app) {
  return href(["apps", app]);
}

export function sessionsHref(app, user, query) {
  return href(["apps", app, "users", user, "sessions"], query);
}

export function sessionHref(app, user, sid, query) {
  return href(["apps", app, "users", user, "sessions", sid], query);
}

let onChange = () => {};

/** Shows the view of `url`, adding a history entry (or replacing the current one). */
export function navigate(url, { replace = false } = {}) {
  if (replace) window.history.replaceState(null, "", url);
  else window.history.pushState(null, "", url);
  onChange();
}

/** Calls `render` now and on every navigation (links, back and forward). */
export function start(render) {
  onChange = render;
  window.addEventListener("popstate", () => render());
  // Links to console views change the view in place; other links, new tabs and modified
  // clicks keep the browser's behaviour.
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a[href]") : null;
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (link.target || link.hasAttribute("download")) return;
    const url = new URL(link.href);
    if (url.origin !== window.location.origin || !url.pathname.startsWith(BASE)) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
  render();
}
