"""Opaque, URL-safe page tokens: every paginated list encodes its cursor with these."""

import base64
import binascii
import json
import math
import re
from typing import Any

from app.errors import InvalidPageToken
from app.wire import ID_PATTERN, MAX_SEQ

_SESSION_ID = re.compile(ID_PATTERN)


def encode_page_token(payload: dict[str, Any]) -> str:
    """An opaque, URL-safe cursor."""
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str, *, kind: str) -> dict[str, Any]:
    """Decode a cursor made by `encode_page_token` for list `kind`, or raise InvalidPageToken."""
    try:
        padded = token + "=" * (-len(token) % 4)
        payload = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: JSON nested past the parser's stack, which no issued token is.
        raise InvalidPageToken("The pageToken is not one this server issued.") from exc
    if not isinstance(payload, dict) or payload.get("k") != kind:
        raise InvalidPageToken("The pageToken belongs to another list.")
    return payload


def session_cursor(token: str) -> tuple[float, str]:
    """The (update time, id) of the last session of the previous page (newest first)."""
    payload = decode_page_token(token, kind="sessions")
    update_time, session_id = payload.get("t"), payload.get("id")
    invalid = InvalidPageToken("The pageToken is not one this server issued.")
    if (
        isinstance(update_time, bool)
        or not isinstance(update_time, int | float)
        or not isinstance(session_id, str)
        or not _SESSION_ID.fullmatch(session_id)
    ):
        raise invalid
    try:
        moment = float(update_time)
    except OverflowError as exc:
        raise invalid from exc
    if not math.isfinite(moment):
        raise invalid
    return moment, session_id


def session_page_token(update_time: float, session_id: str) -> str:
    """The cursor of the sessions page that follows the session (`update_time`, `session_id`)."""
    return encode_page_token({"k": "sessions", "t": update_time, "id": session_id})


def event_cursor(token: str, *, descending: bool) -> int:
    """The seq after (or, descending, before) which an events page starts."""
    kind = "events-desc" if descending else "events-asc"
    seq = decode_page_token(token, kind=kind).get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
        raise InvalidPageToken("The pageToken is not one this server issued.")
    return seq


def event_page_token(seq: int, *, descending: bool) -> str:
    """The cursor of the events page that follows the event `seq`."""
    return encode_page_token({"k": "events-desc" if descending else "events-asc", "seq": seq})
