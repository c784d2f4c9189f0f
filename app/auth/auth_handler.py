"""Keeping and finding a client's credential (`google.adk.auth.auth_handler`).

The credential the client sent back is kept in the invocation's `temp:` state under
`"temp:" + credential_key`, where `ToolContext.get_auth_response` finds it; it is never stored.

Unlike ADK, agentd does not run the OAuth2 code exchange or build authorization URIs itself:
the client sends the credential it obtained (for OAuth2 with the access token filled in), and
the tool gets exactly that.
"""

from collections.abc import MutableMapping
from typing import Any

from app.auth.auth_credential import AuthCredential
from app.auth.auth_tool import AuthConfig

TEMP_PREFIX = "temp:"


class AuthHandler:
    """One AuthConfig's request to the client and the client's answer."""

    def __init__(self, auth_config: AuthConfig) -> None:
        self.auth_config = auth_config

    @property
    def state_key(self) -> str:
        """Where the answer is kept in state."""
        return TEMP_PREFIX + (self.auth_config.credential_key or "")

    def generate_auth_request(self) -> AuthConfig:
        """The config the client is sent: a copy, the raw credential's auth URI (if it has
        one and nothing was exchanged yet) copied into `exchanged_auth_credential`."""
        config = self.auth_config.model_copy(deep=True)
        raw = config.raw_auth_credential
        exchanged = config.exchanged_auth_credential
        has_uri = (
            exchanged is not None and exchanged.oauth2 is not None and exchanged.oauth2.auth_uri
        )
        if not has_uri and raw is not None and raw.oauth2 is not None and raw.oauth2.auth_uri:
            config.exchanged_auth_credential = raw.model_copy(deep=True)
        return config

    def parse_and_store_auth_response(self, state: MutableMapping[str, Any]) -> None:
        """Keep the client's credential (`exchanged_auth_credential`) for this invocation."""
        state[self.state_key] = self.auth_config.exchanged_auth_credential

    def get_auth_response(self, state: MutableMapping[str, Any]) -> AuthCredential | None:
        """The credential kept for this config, or None."""
        value = state.get(self.state_key)
        if value is None or isinstance(value, AuthCredential):
            return value
        return AuthCredential.model_validate(value)
