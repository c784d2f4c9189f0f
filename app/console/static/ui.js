// The page's shared parts: the alert region (problems shown as title + detail) and where a
// 401 from any call leads (the sign-in form).

import { ApiError } from "./api.js";
import { fill, h } from "./dom.js";

const alerts = () => document.getElementById("alerts");

/** Shows an API problem (or any error) in the alert region; never swallowed. */
export function showError(error) {
  if (error && error.name === "AbortError") return; // the view was left: nothing went wrong
  const problem =
    error instanceof ApiError
      ? error.problem
      : error && error.title
        ? error
        : { title: "Something went wrong in the console.", detail: String(error && error.message ? error.message : error) };
  const item = h(
    "div",
    { class: "problem" },
    h("strong", { class: "problem-title" }, problem.title || "Error"),
    problem.status ? h("span", { class: "problem-status" }, ` (${problem.status})`) : null,
    problem.detail ? h("p", { class: "problem-detail" }, problem.detail) : null,
    problem.type ? h("p", { class: "problem-type" }, "type: ", h("code", {}, problem.type)) : null,
    h("button", { type: "button", class: "link", onclick: () => item.remove() }, "Dismiss"),
  );
  alerts().append(item);
}

export function clearAlerts() {
  fill(alerts());
}

let unauthenticated = () => {};

/** What to do when the API asks for credentials (the shell shows its sign-in form). */
export function onUnauthenticated(handler) {
  unauthenticated = handler;
}

/** Reports a failed call: a 401 leads to the sign-in, any other error to the alert region. */
export function report(error) {
  if (error instanceof ApiError && error.status === 401) unauthenticated(error.problem);
  else showError(error);
}
