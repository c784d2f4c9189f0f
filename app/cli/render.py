"""How `agentd run` and `agentd invocations tail` show an invocation's stream in a terminal.

Both read the same frames, whether from a server (the SSE `event:` name and its JSON `data:`) or
from an in-process run (the same wire JSON): `partial` text is written as it arrives, a final
event's text only if no partial showed it, tool calls and results as one short line each, and
the end says how the invocation ended, what it waits for if it waits for the client.
"""

from typing import Any

import click
import orjson

#: How much of a tool's arguments or result a line shows.
MAX_SHOWN = 200


def _short(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


class StreamPrinter:
    """Writes one invocation's frames to the terminal; `failed` once it ended badly."""

    def __init__(self) -> None:
        self._in_text = False  # partial text written, its line not ended yet
        self._problem_shown = False
        self.failed = False
        self.invocation_id: str | None = None
        self.status: str | None = None  # once the stream said how the invocation ended

    def frame(self, kind: str, data: dict[str, Any]) -> None:
        """Show one frame: `event`, `partial`, `error` or `done`."""
        if kind == "partial":
            self._partial(data)
        elif kind == "event":
            self._event(data)
        elif kind == "error":
            self._end_text()
            self._problem(data)
        elif kind == "done":
            self._end_text()
            self._done(data)

    def _partial(self, event: dict[str, Any]) -> None:
        for part in _parts(event):
            if part.get("text") and not part.get("thought"):
                click.echo(part["text"], nl=False)
                self._in_text = True

    def _event(self, event: dict[str, Any]) -> None:
        self.invocation_id = self.invocation_id or event.get("invocationId")
        if event.get("author") == "user":
            return  # the message this run answers: the user typed it
        for part in _parts(event):
            if part.get("thought"):
                continue
            if part.get("text"):
                if self._in_text:
                    self._end_text()  # the partials showed this text already
                else:
                    click.echo(part["text"])
            elif call := part.get("functionCall"):
                if str(call.get("name", "")).startswith("adk_request_"):
                    continue  # how ADK asks the client: the end's `[waiting]` lines say what
                self._end_text()
                click.secho(f"[call] {call.get('name')} {_short(call.get('args') or {})}", dim=True)
            elif response := part.get("functionResponse"):
                self._end_text()
                shown = _short(response.get("response") or {})
                click.secho(f"[result] {response.get('name')} {shown}", dim=True)
        if error := event.get("errorMessage"):
            self._end_text()
            click.secho(f"[error] {event.get('errorCode') or ''} {error}".strip(), fg="red")

    def _end_text(self) -> None:
        if self._in_text:
            click.echo()
            self._in_text = False

    def _problem(self, problem: dict[str, Any]) -> None:
        detail = problem.get("detail") or problem.get("title") or "the invocation failed"
        click.secho(f"[failed] {detail} ({problem.get('type', 'error')})", fg="red", err=True)
        self._problem_shown = True
        self.failed = True

    def _done(self, invocation: dict[str, Any]) -> None:
        self.invocation_id = invocation.get("id", self.invocation_id)
        status = self.status = invocation.get("status")
        if status == "requires_action":
            calls = (invocation.get("requiredAction") or {}).get("calls") or []
            for call in calls:
                hint = f": {call['hint']}" if call.get("hint") else ""
                click.secho(
                    f"[waiting] {call.get('kind')} of {call.get('tool')} "
                    f"{_short(call.get('args') or {})}{hint} "
                    f"(functionCallId {call.get('functionCallId')})",
                    fg="yellow",
                )
            path = "/apps/{}/users/{}/sessions/{}/invocations/{}/resume".format(
                invocation.get("appName"),
                invocation.get("userId"),
                invocation.get("sessionId"),
                self.invocation_id,
            )
            click.secho(f"invocation {self.invocation_id} waits: answer with POST {path}", err=True)
        elif status == "failed":
            if not self._problem_shown:
                self._problem(invocation.get("error") or {})
            self.failed = True
        elif status == "cancelled":
            click.secho(f"invocation {self.invocation_id} was cancelled.", fg="red", err=True)
            self.failed = True


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = event.get("content") or {}
    parts: list[dict[str, Any]] = content.get("parts") or []
    return parts
