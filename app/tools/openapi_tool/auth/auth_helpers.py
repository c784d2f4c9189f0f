"""ADK's credential helpers for OpenAPI tools (`openapi_tool.auth.auth_helpers`).

`token_to_scheme_credential` builds the (scheme, credential) pair an `OpenAPIToolset` takes for
an API key or a bearer token; the service-account helpers build ADK's models too, though agentd's
RestApiTool sends only API keys and bearer tokens (`request_auth` says which pairs it can send:
a service account or an OAuth2 client would need a token exchange, which agentd does not run).
"""

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from app.auth.auth_credential import (
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HttpCredentials,
    ServiceAccount,
    ServiceAccountCredential,
)
from app.auth.auth_schemes import APIKey, APIKeyIn, AuthScheme, HTTPBearer

_SCHEMES: TypeAdapter[AuthScheme] = TypeAdapter(AuthScheme)
_BEARER_JWT = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}


def token_to_scheme_credential(
    token_type: Literal["apikey", "oauth2Token"],
    location: Literal["header", "query", "cookie"] | None = None,
    name: str | None = None,
    credential_value: str | None = None,
) -> tuple[AuthScheme, AuthCredential | None]:
    """An API key (sent in the header, query parameter or cookie `name`) or a bearer token
    (always the Authorization header), as ADK's (scheme, credential) pair.

    The credential is None when `credential_value` is empty, as in ADK.
    """
    if token_type == "apikey":
        if location not in ("header", "query", "cookie"):
            raise ValueError(f"Invalid location for apiKey: {location}")
        if not name:
            raise ValueError("An apiKey scheme needs the name of its header, parameter or cookie.")
        api_key = APIKey.model_validate({"type": "apiKey", "in": location, "name": name})
        credential = (
            AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key=credential_value)
            if credential_value
            else None
        )
        return api_key, credential
    if token_type == "oauth2Token":
        bearer = HTTPBearer.model_validate(_BEARER_JWT)
        credential = (
            AuthCredential(
                auth_type=AuthCredentialTypes.HTTP,
                http=HttpAuth(scheme="bearer", credentials=HttpCredentials(token=credential_value)),
            )
            if credential_value
            else None
        )
        return bearer, credential
    raise ValueError(f"Invalid security scheme type: {token_type}")


def service_account_scheme_credential(config: ServiceAccount) -> tuple[AuthScheme, AuthCredential]:
    """A bearer scheme and a service-account credential (ADK's helper)."""
    bearer = HTTPBearer.model_validate(_BEARER_JWT)
    credential = AuthCredential(
        auth_type=AuthCredentialTypes.SERVICE_ACCOUNT, service_account=config
    )
    return bearer, credential


def service_account_dict_to_scheme_credential(
    config: dict[str, Any], scopes: list[str]
) -> tuple[AuthScheme, AuthCredential]:
    """`service_account_scheme_credential` from a key file's JSON and the scopes to ask for."""
    account = ServiceAccount(
        service_account_credential=ServiceAccountCredential.model_validate(config),
        scopes=scopes,
    )
    return service_account_scheme_credential(account)


def dict_to_auth_scheme(data: dict[str, Any]) -> AuthScheme:
    """An OpenAPI security scheme object as its AuthScheme class (ADK's helper)."""
    if "type" not in data:
        raise ValueError("Missing 'type' field in security scheme dictionary.")
    try:
        return _SCHEMES.validate_python(data)
    except ValidationError as error:
        raise ValueError(f"Invalid security scheme data: {error}") from error


@dataclass(frozen=True)
class RequestAuth:
    """Where a credential goes in a request: headers, query parameters, cookies."""

    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)


def request_auth(auth_scheme: AuthScheme | None, auth_credential: AuthCredential) -> RequestAuth:
    """How `auth_credential` is sent: an API key where `auth_scheme` (an APIKey) puts it, or a
    bearer token in the Authorization header.

    Raises ValueError for what agentd cannot send without a token exchange (service accounts,
    OAuth2 clients without a token) or does not send at all (HTTP basic, as ADK).
    """
    if auth_credential.auth_type == AuthCredentialTypes.API_KEY:
        if not auth_credential.api_key:
            raise ValueError("An API-key credential needs its api_key.")
        if not isinstance(auth_scheme, APIKey):
            raise ValueError("An API-key credential needs an APIKey scheme saying where it goes.")
        key = auth_credential.api_key
        if auth_scheme.in_ == APIKeyIn.header:
            return RequestAuth(headers={auth_scheme.name: key})
        if auth_scheme.in_ == APIKeyIn.query:
            return RequestAuth(query={auth_scheme.name: key})
        return RequestAuth(cookies={auth_scheme.name: key})
    http = auth_credential.http
    if auth_credential.auth_type == AuthCredentialTypes.HTTP and http is not None:
        if http.scheme.lower() == "bearer" and http.credentials.token:
            return RequestAuth(headers={"Authorization": f"Bearer {http.credentials.token}"})
        if http.credentials.username or http.credentials.password:
            raise ValueError("HTTP basic authentication is not supported (nor is it in ADK).")
        raise ValueError("An HTTP credential needs a bearer token.")
    raise ValueError(
        f"{auth_credential.auth_type.value} credentials are not supported by agentd's OpenAPI "
        "tools: pass an API key or a bearer token (token_to_scheme_credential)."
    )
