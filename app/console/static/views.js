// The list views: apps, and one user's sessions of an app (paged, newest first, open by id).

import { json, jsonWithHeaders, sessionPath } from "./api.js";
import { fill, h, when } from "./dom.js";
import { appHref, navigate, sessionHref, sessionsHref } from "./router.js";
import { report } from "./ui.js";

const PAGE_SIZE = 20;
export const DEFAULT_USER = "user";

export async function appsView({ main, signal }) {
  const names = await json("/list-apps", { signal });
  const list = h(
    "ul",
    { class: "cards", "aria-label": "Apps" },
    names.map((name) => h("li", {}, h("a", { href: appHref(name), class: "card-link" }, name))),
  );
  fill(
    main,
    h("h1", { tabindex: "-1" }, "Apps"),
    names.length ? list : h("p", {}, "The agents directory holds no app."),
  );
}

function userForm(app, user) {
  const input = h("input", { id: "user-id", name: "user", value: user, required: true, autocomplete: "off" });
  return h(
    "form",
    {
      class: "inline",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(sessionsHref(app, input.value.trim()));
      },
    },
    h("label", { for: "user-id" }, "User id"),
    input,
    h("button", { type: "submit", class: "secondary" }, "Show sessions"),
  );
}

function searchForm(app, user, signal) {
  const input = h("input", { id: "session-search", name: "sid", required: true, autocomplete: "off" });
  return h(
    "form",
    {
      class: "inline",
      role: "search",
      onsubmit: async (event) => {
        event.preventDefault();
        const sid = input.value.trim();
        try {
          // Asked first, so a wrong id is said here instead of on an empty page.
          await json(`${sessionPath(app, user, sid)}?numRecentEvents=0`, { signal });
          navigate(sessionHref(app, user, sid));
        } catch (error) {
          report(error);
        }
      },
    },
    h("label", { for: "session-search" }, "Open session by id"),
    input,
    h("button", { type: "submit", class: "secondary" }, "Open"),
  );
}

function newSessionButton(app, user, signal) {
  return h(
    "button",
    {
      type: "button",
      onclick: async () => {
        try {
          const created = await json(sessionPath(app, user), { method: "POST", body: {}, signal });
          navigate(sessionHref(app, created.userId, created.id));
        } catch (error) {
          report(error);
        }
      },
    },
    "New session",
  );
}

export async function sessionsView({ main, route, signal }) {
  const { app } = route.params;
  const user = route.params.user || DEFAULT_USER;
  const token = route.query.get("pageToken");
  const query = new URLSearchParams({ pageSize: String(PAGE_SIZE) });
  if (token) query.set("pageToken", token);
  const { body: sessions, headers } = await jsonWithHeaders(`${sessionPath(app, user)}?${query}`, { signal });
  const next = headers.get("X-Next-Page-Token");
  const rows = sessions.map((s) =>
    h(
      "tr",
      {},
      h("td", {}, h("a", { href: sessionHref(app, user, s.id) }, s.id)),
      h("td", {}, when(s.lastUpdateTime)),
      h("td", {}, String(Object.keys(s.state || {}).length)),
    ),
  );
  const table = h(
    "table",
    { class: "list" },
    h("caption", {}, `Sessions of ${user}, most recently updated first`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Session"), h("th", { scope: "col" }, "Updated"), h("th", { scope: "col" }, "State keys"))),
    h("tbody", {}, rows),
  );
  const pager = h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    token ? h("a", { href: sessionsHref(app, user) }, "First page") : null,
    next ? h("a", { href: sessionsHref(app, user, { pageToken: next }) }, "Next page") : null,
  );
  fill(
    main,
    h("h1", { tabindex: "-1" }, app),
    h("div", { class: "toolbar" }, userForm(app, user), newSessionButton(app, user, signal)),
    searchForm(app, user, signal),
    sessions.length ? table : h("p", {}, `${user} has no session of ${app} yet.`),
    pager,
  );
}
