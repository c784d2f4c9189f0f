// The console's shell: header (breadcrumbs, sign-out), the sign-in form, and which view a URL
// shows. Views get an AbortSignal that fires when the page moves on, so their streams stop.

import { auth } from "./api.js";
import { fill, h } from "./dom.js";
import { appHref, href, parse, sessionHref, sessionsHref, start } from "./router.js";
import { clearAlerts, onUnauthenticated, report, showError } from "./ui.js";
import { appsView, sessionsView } from "./views.js";
import { sessionView } from "./session.js";

const main = document.getElementById("main");
let current = null; // the AbortController of the view on screen

function crumbs(route) {
  const { app, user, sid } = route.params;
  const items = [h("li", {}, h("a", { href: href() }, "Apps"))];
  if (app) items.push(h("li", {}, h("a", { href: appHref(app) }, app)));
  if (user) items.push(h("li", {}, h("a", { href: sessionsHref(app, user) }, `user: ${user}`)));
  if (sid) items.push(h("li", {}, h("a", { href: sessionHref(app, user, sid) }, `session: ${sid}`)));
  const last = items[items.length - 1].querySelector("a");
  last.setAttribute("aria-current", "page");
  fill(document.getElementById("crumbs"), h("ol", {}, items));
}

function account() {
  const box = document.getElementById("account");
  if (!auth.key()) {
    fill(box);
    return;
  }
  fill(
    box,
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        onclick: () => {
          auth.signOut();
          signIn(null);
        },
      },
      "Sign out",
    ),
  );
}

/** The sign-in form, in place of the view; `problem` is the 401 that led here (none on sign-out). */
function signIn(problem) {
  if (current) current.abort();
  const refused = problem !== null && auth.key() !== null;
  auth.signOut();
  account();
  clearAlerts();
  if (refused) showError(problem);
  const input = h("input", {
    id: "api-key",
    name: "api-key",
    type: "password",
    autocomplete: "off",
    required: true,
    "aria-describedby": "api-key-help",
  });
  const form = h(
    "form",
    {
      class: "card narrow",
      onsubmit: (event) => {
        event.preventDefault();
        auth.signIn(input.value.trim());
        render();
      },
    },
    h("label", { for: "api-key" }, "API key or token"),
    input,
    h(
      "p",
      { id: "api-key-help", class: "muted" },
      "Kept in this tab's session storage only, and sent to this server as a Bearer token.",
    ),
    h("button", { type: "submit" }, "Sign in"),
  );
  fill(main, h("h1", { tabindex: "-1" }, "Sign in"), h("p", {}, "This server wants credentials."), form);
  input.focus();
}

function missing(route) {
  fill(
    main,
    h("h1", { tabindex: "-1" }, "No such page"),
    h("p", {}, `The console has no view at ${route.params.path}.`),
    h("p", {}, h("a", { href: href() }, "Back to the apps")),
  );
}

const VIEWS = { apps: appsView, app: sessionsView, sessions: sessionsView, session: sessionView };

async function render() {
  if (current) current.abort();
  current = new AbortController();
  const { signal } = current;
  const route = parse();
  clearAlerts();
  account();
  crumbs(route);
  const view = VIEWS[route.name];
  if (!view) {
    missing(route);
    return;
  }
  try {
    await view({ main, route, signal, rerender: render });
    if (signal.aborted) return;
    const heading = main.querySelector("h1");
    if (heading && document.activeElement === document.body) heading.focus({ preventScroll: true });
  } catch (error) {
    if (!signal.aborted) report(error);
  }
}

onUnauthenticated(signIn);
start(render);
