// One event of a session as a timeline entry: seq, author, text, function calls and responses
// folded, and the state and artifact deltas it carries.

import { h, pretty, when } from "./dom.js";

function folded(summary, value, className) {
  return h("details", { class: className }, h("summary", {}, summary), h("pre", {}, pretty(value)));
}

function partView(part) {
  if (typeof part.text === "string") {
    return h("p", { class: part.thought ? "text thought" : "text" }, part.text);
  }
  if (part.functionCall) {
    const call = part.functionCall;
    return folded(["Function call ", h("code", {}, call.name)], call.args || {}, "call");
  }
  if (part.functionResponse) {
    const answer = part.functionResponse;
    return folded(["Function response ", h("code", {}, answer.name)], answer.response || {}, "response");
  }
  if (part.inlineData) {
    return h("p", { class: "muted" }, `Inline data (${part.inlineData.mimeType || "unknown type"})`);
  }
  return folded("Other part", part, "other");
}

function deltas(actions) {
  const out = [];
  const state = actions.stateDelta || {};
  if (Object.keys(state).length) {
    out.push(h("div", { class: "delta state-delta" }, h("span", { class: "delta-label" }, "State delta"), h("pre", {}, pretty(state))));
  }
  const artifacts = actions.artifactDelta || {};
  const names = Object.keys(artifacts);
  if (names.length) {
    out.push(
      h(
        "div",
        { class: "delta artifact-delta" },
        h("span", { class: "delta-label" }, "Artifact delta"),
        h("ul", {}, names.map((name) => h("li", {}, h("code", {}, name), ` version ${artifacts[name]}`))),
      ),
    );
  }
  return out;
}

/** A stored event (it has a seq) as a list item. */
export function eventItem(event) {
  const parts = (event.content && event.content.parts) || [];
  return h(
    "li",
    { class: `event author-${event.author === "user" ? "user" : "agent"}`, dataset: { seq: String(event.seq) } },
    h(
      "div",
      { class: "event-head" },
      h("span", { class: "seq" }, `#${event.seq}`),
      h("span", { class: "author" }, event.author),
      h("time", { class: "muted" }, when(event.timestamp)),
    ),
    parts.map(partView),
    event.errorMessage || event.errorCode
      ? h("p", { class: "event-error" }, `Error ${event.errorCode || ""}: ${event.errorMessage || ""}`)
      : null,
    deltas(event.actions || {}),
  );
}

/** The entry that shows a streamed answer while it arrives (replaced by the stored event). */
export function partialItem(author) {
  const text = h("p", { class: "text" });
  const item = h(
    "li",
    { class: "event partial", "aria-busy": "true" },
    h("div", { class: "event-head" }, h("span", { class: "seq" }, "streaming"), h("span", { class: "author" }, author)),
    text,
  );
  return { item, text };
}
