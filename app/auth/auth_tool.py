"""What a tool asks the client for (`google.adk.auth.auth_tool`).

`AuthConfig` travels in the event's `requestedAuthConfigs` and as the `authConfig` argument of
the `adk_request_credential` call, and comes back, filled, as that call's function response.
Its `credential_key` names where the credential is kept; when not given it is derived from the
scheme and the raw credential the way ADK derives it (a stable digest, so the same request made
again finds the same key).
"""

import hashlib
import json
from typing import Any

from pydantic import BaseModel, model_validator

from app.auth.auth_credential import AuthCredential, BaseModelWithConfig
from app.auth.auth_schemes import AuthScheme

#: The OAuth2 fields that change while a flow runs: left out of the derived key.
_VOLATILE_OAUTH2 = (
    "auth_uri",
    "state",
    "auth_response_uri",
    "auth_code",
    "access_token",
    "refresh_token",
    "expires_at",
    "expires_in",
)


def _digest(model: BaseModel) -> str:
    """16 hex digits of SHA-256 over the model's canonical JSON (by alias, extras left out)."""
    if model.model_extra:
        model = model.model_copy(deep=True)
        assert model.model_extra is not None
        model.model_extra.clear()
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    canonical = json.dumps(dumped, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class AuthConfig(BaseModelWithConfig):
    """The scheme a tool needs, the raw credential it has and the one the client fills in."""

    auth_scheme: AuthScheme
    raw_auth_credential: AuthCredential | None = None
    exchanged_auth_credential: AuthCredential | None = None
    credential_key: str | None = None

    @model_validator(mode="after")
    def _derive_credential_key(self) -> "AuthConfig":
        if self.credential_key:
            return self
        for source in (self.raw_auth_credential, self.auth_scheme):
            extra: dict[str, Any] = (source.model_extra or {}) if source is not None else {}
            for name in ("credential_key", "credentialKey"):
                if isinstance(extra.get(name), str) and extra[name]:
                    self.credential_key = extra[name]
                    return self
        self.credential_key = self.get_credential_key()
        return self

    def get_credential_key(self) -> str:
        """`adk_<scheme type>_<digest>_<credential type>_<digest>`, as ADK builds it."""
        scheme = self.auth_scheme
        scheme_name = f"{scheme.type_.name}_{_digest(scheme)}"
        credential = self.raw_auth_credential
        credential_name = ""
        if credential is not None:
            if credential.oauth2 is not None:
                credential = credential.model_copy(deep=True)
                assert credential.oauth2 is not None
                for name in _VOLATILE_OAUTH2:
                    setattr(credential.oauth2, name, None)
            credential_name = f"{credential.auth_type.value}_{_digest(credential)}"
        return f"adk_{scheme_name}_{credential_name}"


class AuthToolArguments(BaseModelWithConfig):
    """The arguments of the `adk_request_credential` call."""

    function_call_id: str
    auth_config: AuthConfig
