"""Principal: who a request acts for, and what it may reach.

A principal is bound to a set of apps (or all) and to one user id (an end-user token: it sees
only that user's sessions, invocations, artifacts and memory) or to all users (a service key).
Anything outside its reach is answered exactly like something that does not exist (404), so a
caller cannot probe for other users' data. Only admin principals may write `app:` state.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.errors import AppNotFound, Forbidden, NotFoundError
from app.sessions.state import State


@dataclass(frozen=True)
class Principal:
    """An authenticated caller."""

    id: str
    kind: str  # "anonymous" | "api_key" | "jwt"
    apps: frozenset[str] | None = None  # None: every app
    user_id: str | None = None  # None: every user (service principal)
    admin: bool = False

    def check_app(self, app_name: str) -> None:
        """404 app-not-found unless the principal may use `app_name`."""
        if self.apps is not None and app_name not in self.apps:
            raise AppNotFound(f"No app named {app_name!r}.")

    def check_user(self, user_id: str) -> None:
        """404 unless the principal may act for `user_id` (same answer as a missing resource)."""
        if self.user_id is not None and self.user_id != user_id:
            raise NotFoundError("No such resource.")

    def check_state_delta(self, delta: Mapping[str, Any] | None) -> None:
        """403 if a non-admin tries to write `app:` state."""
        if not delta or self.admin:
            return
        if any(key.startswith(State.APP_PREFIX) for key in delta):
            raise Forbidden("Only admin principals may write `app:` state.")

    def sees_app(self, app_name: str) -> bool:
        """Whether `app_name` is listed for this principal."""
        return self.apps is None or app_name in self.apps


#: The principal of every request when AGENTD_AUTH=none (loopback development only).
ANONYMOUS = Principal(id="anonymous", kind="anonymous", admin=True)
