"""Tool credentials, at ADK's module paths (`google.adk.auth` -> `app.auth`).

A tool asks the client for a credential with `ToolContext.request_credential(auth_config)`; the
agent then emits an `adk_request_credential` function call, the client answers it with the
filled AuthConfig, and the tool runs again and reads the credential with
`ToolContext.get_auth_response(auth_config)`. The engine side is `app/agents/auth_flow.py`.
This package is models only: agentd's own HTTP authentication is `app.security`.
"""

from app.auth.auth_credential import (
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HttpCredentials,
    OAuth2Auth,
    ServiceAccount,
    ServiceAccountCredential,
)
from app.auth.auth_handler import AuthHandler
from app.auth.auth_schemes import (
    APIKey,
    APIKeyIn,
    AuthScheme,
    AuthSchemeType,
    HTTPBase,
    HTTPBearer,
    OAuth2,
    OAuthFlowAuthorizationCode,
    OAuthFlowClientCredentials,
    OAuthFlowImplicit,
    OAuthFlowPassword,
    OAuthFlows,
    OAuthGrantType,
    OpenIdConnect,
    OpenIdConnectWithConfig,
)
from app.auth.auth_tool import AuthConfig, AuthToolArguments

__all__ = [
    "APIKey",
    "APIKeyIn",
    "AuthConfig",
    "AuthCredential",
    "AuthCredentialTypes",
    "AuthHandler",
    "AuthScheme",
    "AuthSchemeType",
    "AuthToolArguments",
    "HTTPBase",
    "HTTPBearer",
    "HttpAuth",
    "HttpCredentials",
    "OAuth2",
    "OAuth2Auth",
    "OAuthFlowAuthorizationCode",
    "OAuthFlowClientCredentials",
    "OAuthFlowImplicit",
    "OAuthFlowPassword",
    "OAuthFlows",
    "OAuthGrantType",
    "OpenIdConnect",
    "OpenIdConnectWithConfig",
    "ServiceAccount",
    "ServiceAccountCredential",
]
