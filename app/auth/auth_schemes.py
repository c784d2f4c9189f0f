"""How an API wants its credential (`google.adk.auth.auth_schemes`).

ADK uses FastAPI's OpenAPI security-scheme models here; agentd keeps the web framework inside
`app.api`, so these are equivalent pydantic models with the same attribute and JSON names
(`type`, `in`, `flows.authorizationCode.tokenUrl`, `openIdConnectUrl`, ...). `AuthScheme` is
the union ADK accepts, told apart by `type` (and, for `http` and `openIdConnect`, by the
fields present), so a scheme read back from JSON gets its own class.
"""

from enum import Enum, StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag


class AuthSchemeType(StrEnum):
    """OpenAPI's security scheme types (FastAPI's `SecuritySchemeType`)."""

    apiKey = "apiKey"
    http = "http"
    oauth2 = "oauth2"
    openIdConnect = "openIdConnect"


class APIKeyIn(StrEnum):
    """Where an API key goes."""

    query = "query"
    header = "header"
    cookie = "cookie"


class _OpenApiModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class SecurityBase(_OpenApiModel):
    """What every security scheme has: its `type` and a description."""

    type_: AuthSchemeType = Field(alias="type")
    description: str | None = None


class APIKey(SecurityBase):
    """An API key sent in a query parameter, header or cookie named `name`."""

    type_: AuthSchemeType = Field(default=AuthSchemeType.apiKey, alias="type")
    in_: APIKeyIn = Field(alias="in")
    name: str


class HTTPBase(SecurityBase):
    """An HTTP Authorization scheme (`basic`, `digest`, ...)."""

    type_: AuthSchemeType = Field(default=AuthSchemeType.http, alias="type")
    scheme: str


class HTTPBearer(HTTPBase):
    """HTTP bearer tokens."""

    scheme: str = "bearer"
    bearerFormat: str | None = None


class OAuthFlow(_OpenApiModel):
    """What every OAuth2 flow has."""

    refreshUrl: str | None = None
    scopes: dict[str, str] = Field(default_factory=dict)


class OAuthFlowImplicit(OAuthFlow):
    authorizationUrl: str


class OAuthFlowPassword(OAuthFlow):
    tokenUrl: str


class OAuthFlowClientCredentials(OAuthFlow):
    tokenUrl: str


class OAuthFlowAuthorizationCode(OAuthFlow):
    authorizationUrl: str
    tokenUrl: str


class OAuthFlows(_OpenApiModel):
    """The OAuth2 flows a scheme supports."""

    implicit: OAuthFlowImplicit | None = None
    password: OAuthFlowPassword | None = None
    clientCredentials: OAuthFlowClientCredentials | None = None
    authorizationCode: OAuthFlowAuthorizationCode | None = None


class OAuth2(SecurityBase):
    """OAuth2 with its flows."""

    type_: AuthSchemeType = Field(default=AuthSchemeType.oauth2, alias="type")
    flows: OAuthFlows


class OpenIdConnect(SecurityBase):
    """OpenID Connect by discovery URL."""

    type_: AuthSchemeType = Field(default=AuthSchemeType.openIdConnect, alias="type")
    openIdConnectUrl: str


class OpenIdConnectWithConfig(SecurityBase):
    """OpenID Connect with its endpoints given (ADK's own scheme; snake_case JSON as ADK's)."""

    type_: AuthSchemeType = Field(default=AuthSchemeType.openIdConnect, alias="type")
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str | None = None
    revocation_endpoint: str | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    scopes: list[str] | None = None


class OAuthGrantType(StrEnum):
    """The OAuth2 grant types."""

    CLIENT_CREDENTIALS = "client_credentials"
    AUTHORIZATION_CODE = "authorization_code"
    IMPLICIT = "implicit"
    PASSWORD = "password"

    @staticmethod
    def from_flow(flow: OAuthFlows) -> "OAuthGrantType | None":
        """The grant type of the flow `flow` sets."""
        if flow.clientCredentials:
            return OAuthGrantType.CLIENT_CREDENTIALS
        if flow.authorizationCode:
            return OAuthGrantType.AUTHORIZATION_CODE
        if flow.implicit:
            return OAuthGrantType.IMPLICIT
        if flow.password:
            return OAuthGrantType.PASSWORD
        return None


def _scheme_tag(value: Any) -> str | None:
    """Which scheme class `value` (a model or its JSON) is."""
    if isinstance(value, BaseModel):
        return _CLASS_TAGS.get(type(value))
    if not isinstance(value, dict):
        return None
    kind = value.get("type", value.get("type_"))
    kind = kind.value if isinstance(kind, Enum) else kind
    if kind == "http":
        bearer = str(value.get("scheme", "")).lower() == "bearer" or "bearerFormat" in value
        return "httpBearer" if bearer else "http"
    if kind == "openIdConnect":
        return "openIdConnect" if "openIdConnectUrl" in value else "openIdConnectWithConfig"
    return kind if kind in ("apiKey", "oauth2") else None


_CLASS_TAGS: dict[type, str] = {
    APIKey: "apiKey",
    HTTPBase: "http",
    HTTPBearer: "httpBearer",
    OAuth2: "oauth2",
    OpenIdConnect: "openIdConnect",
    OpenIdConnectWithConfig: "openIdConnectWithConfig",
}

SecurityScheme = APIKey | HTTPBase | OAuth2 | OpenIdConnect | HTTPBearer

#: Any scheme a tool may ask for, validated from JSON into its own class by `type`.
AuthScheme = Annotated[
    Annotated[APIKey, Tag("apiKey")]
    | Annotated[HTTPBearer, Tag("httpBearer")]
    | Annotated[HTTPBase, Tag("http")]
    | Annotated[OAuth2, Tag("oauth2")]
    | Annotated[OpenIdConnect, Tag("openIdConnect")]
    | Annotated[OpenIdConnectWithConfig, Tag("openIdConnectWithConfig")],
    Discriminator(_scheme_tag),
]
