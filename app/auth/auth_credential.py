"""Tool credentials as ADK models them (`google.adk.auth.auth_credential`).

Field names are ADK's; the JSON is camelCase (`authType`, `apiKey`, `clientId`, ...) as ADK dumps
it by alias, and both spellings are accepted on input. Unknown fields are kept (ADK allows
extras), so a client's additions survive a round trip.
"""

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class BaseModelWithConfig(BaseModel):
    """camelCase JSON by alias, snake_case attributes, extras kept."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


class HttpCredentials(BaseModelWithConfig):
    """The secret of an HTTP scheme: user name and password, or a token."""

    username: str | None = None
    password: str | None = None
    token: str | None = None


class HttpAuth(BaseModelWithConfig):
    """An HTTP Authorization scheme (`basic`, `bearer`, ...) with its credentials."""

    scheme: str
    credentials: HttpCredentials


class OAuth2Auth(BaseModelWithConfig):
    """An OAuth2 client and what the flow adds to it (auth URI, code, tokens)."""

    client_id: str | None = None
    client_secret: str | None = None
    auth_uri: str | None = None
    state: str | None = None
    redirect_uri: str | None = None
    auth_response_uri: str | None = None
    auth_code: str | None = None
    access_token: str | None = None
    refresh_token: str | None = None
    expires_at: int | None = None
    expires_in: int | None = None
    audience: str | None = None


class ServiceAccountCredential(BaseModelWithConfig):
    """A Google service account key (the JSON key file's fields)."""

    type_: str = Field(default="", alias="type")
    project_id: str
    private_key_id: str
    private_key: str
    client_email: str
    client_id: str
    auth_uri: str
    token_uri: str
    auth_provider_x509_cert_url: str
    client_x509_cert_url: str
    universe_domain: str


class ServiceAccount(BaseModelWithConfig):
    """A service account key (or the default credentials) and the scopes to ask for."""

    service_account_credential: ServiceAccountCredential | None = None
    scopes: list[str]
    use_default_credential: bool | None = False


class AuthCredentialTypes(StrEnum):
    """The kind of credential (OpenAPI's security scheme types, plus service accounts)."""

    API_KEY = "apiKey"
    HTTP = "http"
    OAUTH2 = "oauth2"
    OPEN_ID_CONNECT = "openIdConnect"
    SERVICE_ACCOUNT = "serviceAccount"


class AuthCredential(BaseModelWithConfig):
    """A credential: its type and the matching part (api_key, http, oauth2, service_account)."""

    auth_type: AuthCredentialTypes
    resource_ref: str | None = None
    api_key: str | None = None
    http: HttpAuth | None = None
    service_account: ServiceAccount | None = None
    oauth2: OAuth2Auth | None = None


def wire(model: BaseModel) -> dict[str, Any]:
    """`model` as ADK puts it on the wire: JSON by alias, without unset (None) fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
