// The session view: chat, event timeline (live while streaming), invocations with cancel and
// human-in-the-loop answers, merged state, artifacts, and an invocation's trace
// (`?invocation=<id>`). A running invocation found on load is followed again from the last seq
// shown (`Last-Event-ID`), so a reload loses nothing.

import { json, sessionPath, stream } from "./api.js";
import { showArtifacts } from "./artifacts.js";
import { badge, fill, h, pretty, when } from "./dom.js";
import { sessionHref } from "./router.js";
import { eventItem, partialItem } from "./timeline.js";
import { traceTree } from "./trace.js";
import { report, showError } from "./ui.js";

const RECENT_EVENTS = 200;
const RUNNING = new Set(["queued", "running"]);
const CANCELLABLE = new Set(["queued", "running", "requires_action"]);

class SessionPage {
  constructor({ app, user, sid }, signal, traced) {
    this.scope = { app, user, sid, signal };
    this.signal = signal;
    this.traced = traced;
    this.base = sessionPath(app, user, sid);
    this.lastSeq = 0;
    this.partial = null;
    this.listing = null; // the invocations request in flight, and whether another is due
    this.timeline = h("ol", { class: "timeline", "aria-label": "Events" });
    this.state = h("pre", { class: "state", tabindex: "0" });
    this.invocations = h("ul", { class: "invocations" });
    this.artifacts = h("div", { class: "artifacts" });
    this.answerBox = h("div", { id: "answer", class: "answer", "aria-live": "polite" });
    this.status = h("p", { id: "stream-status", class: "muted", "aria-live": "polite" });
  }

  // --- data -------------------------------------------------------------------------------

  async load() {
    const session = await json(`${this.base}?numRecentEvents=${RECENT_EVENTS}`, { signal: this.signal });
    this.session = session;
    fill(this.timeline);
    if (session.events.length && session.events[0].seq > 1) {
      this.timeline.append(h("li", { class: "muted" }, `Showing the last ${RECENT_EVENTS} events.`));
    }
    session.events.forEach((event) => this.addEvent(event));
    this.showState(session.state);
  }

  addEvent(event) {
    if (event.seq === undefined || event.seq === null) return;
    if (this.timeline.querySelector(`li[data-seq="${event.seq}"]`)) return;
    if (this.partial && event.author === this.partial.author) this.dropPartial();
    this.timeline.append(eventItem(event));
    this.lastSeq = Math.max(this.lastSeq, event.seq);
    if (event.author !== "user") this.showAnswer(event);
  }

  showAnswer(event) {
    const text = ((event.content && event.content.parts) || [])
      .filter((p) => typeof p.text === "string" && !p.thought)
      .map((p) => p.text)
      .join("");
    if (text) fill(this.answerBox, h("span", { class: "author" }, `${event.author}: `), text);
  }

  addPartial(event) {
    const text = ((event.content && event.content.parts) || []).map((p) => p.text || "").join("");
    if (!text) return;
    if (!this.partial || this.partial.author !== event.author) {
      this.dropPartial();
      const { item, text: node } = partialItem(event.author);
      this.partial = { author: event.author, item, node, text: "" };
      this.timeline.append(item);
    }
    this.partial.text += text;
    this.partial.node.textContent = this.partial.text;
    fill(this.answerBox, h("span", { class: "author" }, `${event.author}: `), this.partial.text);
  }

  dropPartial() {
    if (this.partial) this.partial.item.remove();
    this.partial = null;
  }

  showState(state) {
    this.state.textContent = pretty(state || {});
  }

  async refresh() {
    const [session] = await Promise.all([
      json(`${this.base}?numRecentEvents=0`, { signal: this.signal }),
      this.catchUp(),
      this.showInvocations(),
      showArtifacts(this.scope, this.artifacts),
    ]);
    this.showState(session.state);
  }

  /** Adds the events stored after the last one shown (what a stream that ended early missed). */
  async catchUp() {
    for (;;) {
      const query = `afterSeq=${this.lastSeq}&pageSize=100`;
      const page = await json(`${this.base}/events?${query}`, { signal: this.signal });
      page.events.forEach((event) => this.addEvent(event));
      if (!page.nextPageToken || !page.events.length) return;
    }
  }

  // --- streams ----------------------------------------------------------------------------

  /** Reads one invocation stream to its end, then refreshes everything it changed. */
  async follow(path, options, label) {
    this.sending(true);
    this.status.textContent = label;
    try {
      await stream(path, {
        ...options,
        signal: this.signal,
        onOpen: () => this.invocationsChanged(),
        onEvent: (frame) => this.frame(frame),
      });
    } catch (error) {
      if (!this.signal.aborted) report(error);
    } finally {
      if (this.streamError && !this.signal.aborted) showError(this.streamError);
      this.streamError = null;
      this.dropPartial();
      this.sending(false);
      if (!this.signal.aborted) await this.refresh().catch(report);
    }
  }

  frame({ type, data }) {
    if (type === "event") {
      this.addEvent(data);
      this.invocationsChanged(); // its status moves (queued, running) as events land
    } else if (type === "partial") {
      this.addPartial(data);
    } else if (type === "error") {
      // The invocation's own error comes again in `done` and is shown with the invocation; an
      // error with no `done` after it means the stream broke, and is shown when it ends.
      this.streamError = data;
    } else if (type === "done") {
      this.streamError = null;
      const why = data.error ? ` (${data.error.title})` : "";
      this.status.textContent = `Invocation ${data.id} ended: ${data.status}${why}.`;
    }
  }

  send(text) {
    const body = {
      newMessage: { role: "user", parts: [{ text }] },
      mode: "stream",
      runConfig: { streamingMode: "sse" },
    };
    return this.follow(`${this.base}/invocations`, { method: "POST", body }, "Running...");
  }

  reconnect(iid) {
    const headers = { "Last-Event-ID": String(this.lastSeq) };
    return this.follow(
      `${this.base}/invocations/${encodeURIComponent(iid)}/events`,
      { headers },
      `Following invocation ${iid} from event ${this.lastSeq}...`,
    );
  }

  sending(busy) {
    if (this.sendButton) this.sendButton.disabled = busy;
  }

  // --- invocations ------------------------------------------------------------------------

  async showInvocations() {
    const page = await json(`${this.base}/invocations?pageSize=20`, { signal: this.signal });
    // Redrawn only when something changed, and with the focus kept on the same control, so a
    // refresh never pulls a button from under the pointer or the keyboard.
    const shown = JSON.stringify(page.invocations.map(({ heartbeatTime, ...shownPart }) => shownPart));
    if (shown === this.shownInvocations) return page.invocations;
    this.shownInvocations = shown;
    const focused = this.invocations.contains(document.activeElement) ? document.activeElement : null;
    const where = focused && focused.closest("[data-invocation-id]");
    fill(this.invocations, page.invocations.map((inv) => this.invocationItem(inv)));
    if (!page.invocations.length) fill(this.invocations, h("li", { class: "muted" }, "No invocations yet."));
    if (where) {
      const item = this.invocations.querySelector(`[data-invocation-id="${CSS.escape(where.dataset.invocationId)}"]`);
      const controls = item ? [...item.querySelectorAll("button, a")] : [];
      const again = controls.find((el) => el.textContent === focused.textContent);
      if (again) again.focus();
    }
    return page.invocations;
  }

  /** Lists the invocations again: at once, or once more after the listing in flight. */
  invocationsChanged() {
    if (this.listing) {
      this.listing.again = true;
      return;
    }
    this.listing = { again: false };
    this.showInvocations()
      .catch(report)
      .finally(() => {
        const { again } = this.listing;
        this.listing = null;
        if (again && !this.signal.aborted) this.invocationsChanged();
      });
  }

  async act(action) {
    try {
      await action();
    } catch (error) {
      report(error);
    }
    await this.showInvocations().catch(report);
  }

  cancel(inv) {
    return this.act(() => json(`${this.base}/invocations/${encodeURIComponent(inv.id)}/cancel`, { method: "POST", signal: this.signal }));
  }

  answer(inv, body) {
    return this.act(async () => {
      const path = `${this.base}/invocations/${encodeURIComponent(inv.id)}`;
      await json(`${path}/resume`, { method: "POST", body: { ...body, mode: "background" }, signal: this.signal });
      // The run goes on in the background: follow it from what is shown.
      this.reconnect(inv.id);
    });
  }

  callItem(inv, call) {
    const id = call.functionCallId;
    const controls = [];
    if (call.kind === "confirmation") {
      controls.push(
        h("button", { type: "button", onclick: () => this.answer(inv, { confirmations: [{ functionCallId: id, confirmed: true }] }) }, "Approve"),
        h("button", { type: "button", class: "danger", onclick: () => this.answer(inv, { confirmations: [{ functionCallId: id, confirmed: false }] }) }, "Deny"),
      );
    } else if (call.kind === "result") {
      const field = `result-${id}`;
      const input = h("textarea", { id: field, rows: "3", required: true }, "{}");
      controls.push(
        h(
          "form",
          {
            class: "answer-form",
            onsubmit: (event) => {
              event.preventDefault();
              let response;
              try {
                response = JSON.parse(input.value);
              } catch (error) {
                showError({ title: "The result is not JSON.", detail: String(error.message) });
                return;
              }
              this.answer(inv, { results: [{ functionCallId: id, response }] });
            },
          },
          h("label", { for: field }, `Result of ${call.tool} (a JSON object)`),
          input,
          h("button", { type: "submit" }, "Answer"),
        ),
      );
    } else {
      controls.push(h("p", { class: "muted" }, "A credential request: answer it through /run with the invocation id."));
    }
    return h(
      "li",
      { class: "pending-call", dataset: { callId: id } },
      h("p", {}, h("strong", {}, `${call.kind} needed: `), h("code", {}, call.tool)),
      h("pre", {}, pretty(call.args || {})),
      call.hint ? h("p", { class: "muted" }, call.hint) : null,
      h("div", { class: "buttons" }, controls),
    );
  }

  invocationItem(inv) {
    const { app, user, sid } = this.scope;
    const error = inv.error
      ? h("div", { class: "problem inline-problem" }, h("strong", {}, inv.error.title || "Error"), inv.error.detail ? h("p", {}, inv.error.detail) : null, h("p", { class: "problem-type" }, "type: ", h("code", {}, inv.error.type || "")))
      : null;
    const calls = inv.requiredAction && inv.requiredAction.calls ? inv.requiredAction.calls : [];
    return h(
      "li",
      { class: "invocation", dataset: { invocationId: inv.id, status: inv.status } },
      h(
        "div",
        { class: "invocation-head" },
        badge(inv.status),
        h("code", { class: "invocation-id" }, inv.id),
      ),
      h("p", { class: "muted" }, `attempt ${inv.attempt} · ${inv.mode} · started ${when(inv.startTime || inv.createTime)}`),
      error,
      calls.length ? h("ul", { class: "pending" }, calls.map((call) => this.callItem(inv, call))) : null,
      h(
        "div",
        { class: "buttons" },
        CANCELLABLE.has(inv.status) ? h("button", { type: "button", class: "danger", onclick: () => this.cancel(inv) }, "Cancel") : null,
        h("a", { href: sessionHref(app, user, sid, { invocation: inv.id }), class: "button-link" }, "Trace"),
      ),
    );
  }

  // --- layout -----------------------------------------------------------------------------

  chat() {
    const input = h("textarea", { id: "message", name: "message", rows: "3", required: true });
    this.sendButton = h("button", { type: "submit" }, "Send");
    const form = h(
      "form",
      {
        class: "chat",
        onsubmit: (event) => {
          event.preventDefault();
          const text = input.value.trim();
          if (!text) return;
          input.value = "";
          fill(this.answerBox);
          this.send(text);
        },
      },
      h("label", { for: "message" }, "Message"),
      input,
      this.sendButton,
    );
    // Enter sends, Shift+Enter adds a line.
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    return form;
  }

  async traceSection(iid) {
    const { app, user, sid } = this.scope;
    const section = h(
      "section",
      { class: "card trace-card", "aria-labelledby": "trace-h" },
      h("h2", { id: "trace-h" }, "Trace of ", h("code", {}, iid)),
      h("p", {}, h("a", { href: sessionHref(app, user, sid) }, "Close the trace")),
    );
    section.append(await traceTree(app, sid, iid, this.signal));
    return section;
  }

  section(id, title, ...content) {
    return h("section", { class: "card", "aria-labelledby": `${id}-h` }, h("h2", { id: `${id}-h` }, title), content);
  }

  async render(main) {
    const [, invocations, trace] = await Promise.all([
      this.load(),
      this.showInvocations(),
      this.traced ? this.traceSection(this.traced) : null,
      showArtifacts(this.scope, this.artifacts),
    ]);
    const { app, user, sid } = this.scope;
    fill(
      main,
      h("h1", { tabindex: "-1" }, "Session ", h("code", {}, sid)),
      h("p", { class: "muted" }, `app: ${app} · user: ${user} · updated ${when(this.session.lastUpdateTime)}`),
      h(
        "div",
        { class: "session-grid" },
        h(
          "div",
          { class: "column" },
          trace,
          this.section("chat", "Chat", this.chat(), this.status, this.answerBox),
          this.section("events", "Events", this.timeline),
        ),
        h(
          "div",
          { class: "column" },
          this.section("invocations", "Invocations", this.invocations),
          this.section("state", "State", this.state),
          this.section("artifacts", "Artifacts", this.artifacts),
        ),
      ),
    );
    const running = invocations.find((inv) => RUNNING.has(inv.status));
    if (running) this.reconnect(running.id);
  }
}

export async function sessionView({ main, route, signal }) {
  const page = new SessionPage(route.params, signal, route.query.get("invocation"));
  await page.render(main);
}
