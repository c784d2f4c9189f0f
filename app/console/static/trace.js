// An invocation's spans (from the trace route ADK's dev UI reads) as an indented timeline:
// the agent, its model calls (`call_llm`) and tool calls (`execute_tool <name>`).

import { json } from "./api.js";
import { h, pretty } from "./dom.js";

const ID_KEYS = new Set(["trace_id", "span_id", "parent_span_id"]);
const INVOCATION = "gcp.vertex.agent.invocation_id";

// Span ids are 64-bit integers: read as numbers they would lose digits, so keep their source text.
function keepIds(key, value, context) {
  return ID_KEYS.has(key) && value !== null && context && context.source ? context.source : value;
}

function ms(nanoseconds) {
  return `${(nanoseconds / 1e6).toFixed(1)} ms`;
}

function summary(span) {
  const a = span.attributes || {};
  if (span.name === "call_llm") {
    const tokens = a["gen_ai.usage.output_tokens"] !== undefined ? `, ${a["gen_ai.usage.output_tokens"]} tokens out` : "";
    return `model ${a["gen_ai.request.model"] || "?"}${tokens}`;
  }
  if (span.name.startsWith("execute_tool")) {
    return a["gcp.vertex.agent.tool_call_args"] ? `args ${a["gcp.vertex.agent.tool_call_args"]}` : "";
  }
  return "";
}

function spanItem(span, children, origin, total) {
  const start = span.start_time - origin;
  const duration = (span.end_time || span.start_time) - span.start_time;
  const bar = h("span", { class: "bar", "aria-hidden": "true" });
  bar.style.setProperty("--offset", `${((start / total) * 100).toFixed(2)}%`);
  bar.style.setProperty("--width", `${Math.max((duration / total) * 100, 0.5).toFixed(2)}%`);
  const kids = children.get(span.span_id) || [];
  const kind = span.name === "call_llm" ? "model" : span.name.startsWith("execute_tool") ? "tool" : "agent";
  return h(
    "li",
    { class: `span span-${kind}` },
    h(
      "div",
      { class: "span-row" },
      h("span", { class: "span-name" }, span.name),
      h("span", { class: "span-kind" }, kind),
      h("span", { class: "muted" }, `+${ms(start)} · ${ms(duration)}`),
      h("span", { class: "span-track" }, bar),
    ),
    summary(span) ? h("p", { class: "span-summary" }, summary(span)) : null,
    h("details", {}, h("summary", {}, "Attributes"), h("pre", {}, pretty(span.attributes || {}))),
    kids.length ? h("ol", {}, kids.map((kid) => spanItem(kid, children, origin, total))) : null,
  );
}

/** The trace of invocation `iid` of a session, as a list (or a note when none is kept). */
export async function traceTree(app, sid, iid, signal) {
  const path = `/dev/apps/${encodeURIComponent(app)}/debug/trace/session/${encodeURIComponent(sid)}`;
  const all = await json(path, { signal, reviver: keepIds });
  const spans = all.filter((s) => (s.attributes || {})[INVOCATION] === iid);
  if (!spans.length) {
    return h("p", {}, "No spans are kept for this invocation (this server keeps the recent spans of the runs it served).");
  }
  spans.sort((a, b) => a.start_time - b.start_time);
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    if (span.parent_span_id !== null && ids.has(span.parent_span_id)) {
      if (!children.has(span.parent_span_id)) children.set(span.parent_span_id, []);
      children.get(span.parent_span_id).push(span);
    } else {
      roots.push(span);
    }
  }
  const origin = spans[0].start_time;
  const end = Math.max(...spans.map((s) => s.end_time || s.start_time));
  const total = Math.max(end - origin, 1);
  return h("ol", { class: "trace", "aria-label": `Spans of invocation ${iid}` }, roots.map((r) => spanItem(r, children, origin, total)));
}
