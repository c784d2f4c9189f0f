// The API client: same origin, the key (if any) from session storage only, problems as errors.

import { readEvents } from "./sse.js";

const KEY = "agentd.apiKey";

/** Where the server is mounted: this module's URL without `/console/assets/api.js`. */
export const ROOT = new URL(import.meta.url).pathname.replace(/\/console\/assets\/[^/]*$/, "");

/** An answer the API refused, with its RFC 9457 problem (or one made from the status). */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export const auth = {
  /** The stored key, or null. Session storage: gone when the tab closes, never sent as a cookie. */
  key() {
    return sessionStorage.getItem(KEY);
  },
  signIn(key) {
    sessionStorage.setItem(KEY, key);
  },
  signOut() {
    sessionStorage.removeItem(KEY);
  },
};

/** `/apps/{app}/users/{user}/sessions[/{sid}]` with every segment escaped. */
export function sessionPath(app, user, sid) {
  const base = `/apps/${encodeURIComponent(app)}/users/${encodeURIComponent(user)}/sessions`;
  return sid === undefined ? base : `${base}/${encodeURIComponent(sid)}`;
}

function headersFor(extra) {
  const headers = new Headers(extra || {});
  const key = auth.key();
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return headers;
}

async function problemOf(response) {
  const fallback = { type: "about:blank", title: response.statusText || "Request failed", status: response.status };
  const text = await response.text().catch(() => "");
  try {
    const body = JSON.parse(text);
    if (body && typeof body === "object" && !Array.isArray(body)) return { ...fallback, ...body };
  } catch {
    // not JSON: keep the status line
  }
  return text ? { ...fallback, detail: text.slice(0, 500) } : fallback;
}

/** The raw response of `path` (relative to the server root); throws ApiError unless 2xx. */
export async function send(path, { method = "GET", body, headers, signal } = {}) {
  const init = { method, headers: headersFor(headers), signal, credentials: "omit" };
  if (body !== undefined) {
    init.headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(body);
  }
  const response = await fetch(ROOT + path, init);
  if (!response.ok) throw new ApiError(response.status, await problemOf(response));
  return response;
}

/** The JSON answer of `path`; `reviver` as JSON.parse's. */
export async function json(path, options = {}) {
  const response = await send(path, options);
  const text = await response.text();
  return text ? JSON.parse(text, options.reviver) : null;
}

/** The JSON answer with the response headers (for X-Next-Page-Token). */
export async function jsonWithHeaders(path, options = {}) {
  const response = await send(path, options);
  return { body: await response.json(), headers: response.headers };
}

/**
 * Follows an SSE response: calls `onOpen(response)` once the status line is in, then
 * `onEvent({type, data, id})` per event (data parsed as JSON when it is JSON).
 */
export async function stream(path, { onOpen, onEvent, ...options }) {
  const response = await send(path, {
    ...options,
    headers: { Accept: "text/event-stream", ...(options.headers || {}) },
  });
  if (onOpen) onOpen(response);
  for await (const event of readEvents(response.body)) {
    let data = event.data;
    try {
      data = JSON.parse(event.data);
    } catch {
      // keep the text
    }
    onEvent({ ...event, data });
  }
}
