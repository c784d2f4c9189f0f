// Server-sent events read from a fetch() body (EventSource cannot send an Authorization header).
// Follows the WHATWG event-stream rules: lines end with CRLF, LF or CR (a CR at the end of one
// chunk may pair with an LF at the start of the next); a blank line dispatches the event; lines
// starting with ":" are comments (heartbeats); `data:` lines join with "\n"; `id:` persists to
// later events until changed; a last event without its blank line is dropped.

/** Splits decoded text into lines, whatever the line ending and however the chunks fall. */
export class LineSplitter {
  constructor() {
    this.buffer = "";
    this.pendingCR = false;
  }

  /** The complete lines in `text` (after what came before); keeps the unfinished rest. */
  push(text) {
    const lines = [];
    let start = 0;
    let i = 0;
    if (this.pendingCR) {
      this.pendingCR = false;
      if (text.startsWith("\n")) {
        start = 1;
        i = 1;
      }
    }
    for (; i < text.length; i += 1) {
      const ch = text[i];
      if (ch !== "\n" && ch !== "\r") continue;
      lines.push(this.buffer + text.slice(start, i));
      this.buffer = "";
      if (ch === "\r") {
        if (i + 1 === text.length) this.pendingCR = true;
        else if (text[i + 1] === "\n") i += 1;
      }
      start = i + 1;
    }
    this.buffer += text.slice(start);
    return lines;
  }
}

/** Turns event-stream lines into events: {type, data, id, retry}. */
export class EventParser {
  constructor() {
    this.lastEventId = "";
    this.reset();
  }

  reset() {
    this.type = "";
    this.data = [];
    this.retry = null;
  }

  /** The event a line completes, or null. */
  line(line) {
    if (line === "") {
      if (this.data.length === 0) {
        this.reset();
        return null;
      }
      const event = {
        type: this.type || "message",
        data: this.data.join("\n"),
        id: this.lastEventId,
        retry: this.retry,
      };
      this.reset();
      return event;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.lastEventId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return null;
  }
}

/** Every event of a response body (a ReadableStream of bytes), in order. */
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const lines = new LineSplitter();
  const parser = new EventParser();
  let first = true;
  let ended = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        return;
      }
      let text = value;
      if (first && text.length > 0) {
        if (text.startsWith("\uFEFF")) text = text.slice(1);
        first = false;
      }
      for (const line of lines.push(text)) {
        const event = parser.line(line);
        if (event !== null) yield event;
      }
    }
  } finally {
    // Only a reader that stops early lets go of the response; cancelling one that ended would
    // mark a complete request as aborted.
    if (!ended) reader.cancel().catch(() => {});
  }
}
