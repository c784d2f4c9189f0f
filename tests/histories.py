"""Reading a session's history as the wire returns it (event JSON), for tests of durable runs."""

from typing import Any


def parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The event's content parts ([] without content)."""
    found: list[dict[str, Any]] = (event.get("content") or {}).get("parts") or []
    return found


def outline(history: list[dict[str, Any]]) -> list[str]:
    """Each event as `author: what` (text, call:<name>, response:<name>)."""
    lines = []
    for event in history:
        for part in parts(event):
            if "functionCall" in part:
                lines.append(f"{event['author']}: call:{part['functionCall']['name']}")
            elif "functionResponse" in part:
                lines.append(f"{event['author']}: response:{part['functionResponse']['name']}")
            elif "text" in part:
                lines.append(f"{event['author']}: text")
    return lines


def kinds(history: list[dict[str, Any]]) -> list[str]:
    """Each event as `author: <keys of its parts>` (e.g. `agent: functionCall`), or `author:
    error <errorCode>`."""
    lines = []
    for event in history:
        if event.get("errorCode"):
            lines.append(f"{event['author']}: error {event['errorCode']}")
        else:
            keys = [key for part in parts(event) for key in part if part[key] is not None]
            lines.append(f"{event['author']}: {' '.join(keys)}")
    return lines


def assert_whole(history: list[dict[str, Any]]) -> None:
    """In seq order, no seq twice, and every call answered exactly once."""
    seqs = [e["seq"] for e in history]
    assert seqs == sorted(set(seqs)), seqs
    calls = [p["functionCall"]["id"] for e in history for p in parts(e) if "functionCall" in p]
    answers = [
        p["functionResponse"]["id"] for e in history for p in parts(e) if "functionResponse" in p
    ]
    assert len(calls) == len(set(calls)), calls
    assert sorted(answers) == sorted(calls), outline(history)
