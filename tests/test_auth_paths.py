"""`google.adk.auth` under `app` (issue 16, item 5): every name at ADK's package and module path,
with ADK's wire shapes, and without the web framework."""

import importlib
import subprocess
import sys

import pytest

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
    AuthScheme,
    AuthSchemeType,
    HTTPBase,
    HTTPBearer,
    OAuth2,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
    OAuthGrantType,
    OpenIdConnect,
    OpenIdConnectWithConfig,
)
from app.auth.auth_tool import AuthConfig, AuthToolArguments

PATHS: list[tuple[str, str, object]] = [
    ("app.auth.auth_credential", "AuthCredentialTypes", AuthCredentialTypes),
    ("app.auth.auth_credential", "AuthCredential", AuthCredential),
    ("app.auth.auth_credential", "OAuth2Auth", OAuth2Auth),
    ("app.auth.auth_credential", "HttpAuth", HttpAuth),
    ("app.auth.auth_credential", "HttpCredentials", HttpCredentials),
    ("app.auth.auth_credential", "ServiceAccount", ServiceAccount),
    ("app.auth.auth_credential", "ServiceAccountCredential", ServiceAccountCredential),
    ("app.auth.auth_tool", "AuthConfig", AuthConfig),
    ("app.auth.auth_tool", "AuthToolArguments", AuthToolArguments),
    ("app.auth.auth_schemes", "AuthScheme", AuthScheme),
    ("app.auth.auth_schemes", "AuthSchemeType", AuthSchemeType),
    ("app.auth.auth_schemes", "OAuth2", OAuth2),
    ("app.auth.auth_schemes", "APIKey", APIKey),
    ("app.auth.auth_schemes", "HTTPBase", HTTPBase),
    ("app.auth.auth_schemes", "HTTPBearer", HTTPBearer),
    ("app.auth.auth_schemes", "OpenIdConnect", OpenIdConnect),
    ("app.auth.auth_schemes", "OpenIdConnectWithConfig", OpenIdConnectWithConfig),
    ("app.auth.auth_schemes", "OAuthGrantType", OAuthGrantType),
    ("app.auth.auth_handler", "AuthHandler", AuthHandler),
]


@pytest.mark.parametrize(("module", "name", "expected"), PATHS)
def test_each_name_imports_from_its_module_and_from_app_auth(
    module: str, name: str, expected: object
) -> None:
    assert getattr(importlib.import_module(module), name) is expected
    assert getattr(importlib.import_module("app.auth"), name) is expected


def test_the_credential_types_are_adks() -> None:
    assert {t.name: t.value for t in AuthCredentialTypes} == {
        "API_KEY": "apiKey",
        "HTTP": "http",
        "OAUTH2": "oauth2",
        "OPEN_ID_CONNECT": "openIdConnect",
        "SERVICE_ACCOUNT": "serviceAccount",
    }


def test_models_dump_camel_case_by_alias_and_take_either_spelling() -> None:
    credential = AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2,
        oauth2=OAuth2Auth(client_id="id", client_secret="secret", access_token="t"),
    )
    wire = credential.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire == {
        "authType": "oauth2",
        "oauth2": {"clientId": "id", "clientSecret": "secret", "accessToken": "t"},
    }
    assert AuthCredential.model_validate(wire) == credential
    assert AuthCredential.model_validate({"auth_type": "apiKey", "api_key": "k"}).api_key == "k"
    http = AuthCredential(
        auth_type="http", http=HttpAuth(scheme="bearer", credentials=HttpCredentials(token="x"))
    )
    assert http.model_dump(by_alias=True, exclude_none=True)["http"] == {
        "scheme": "bearer",
        "credentials": {"token": "x"},
    }


def test_schemes_keep_openapi_json_names_and_come_back_as_their_class() -> None:
    oauth = OAuth2(
        flows=OAuthFlows(
            authorizationCode=OAuthFlowAuthorizationCode(
                authorizationUrl="https://idp/auth", tokenUrl="https://idp/token", scopes={"r": "R"}
            )
        )
    )
    config = AuthConfig(auth_scheme=oauth)
    wire = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["authScheme"] == {
        "type": "oauth2",
        "flows": {
            "authorizationCode": {
                "scopes": {"r": "R"},
                "authorizationUrl": "https://idp/auth",
                "tokenUrl": "https://idp/token",
            }
        },
    }
    assert isinstance(AuthConfig.model_validate(wire).auth_scheme, OAuth2)
    key = APIKey.model_validate({"type": "apiKey", "in": "query", "name": "key"})
    assert key.model_dump(mode="json", by_alias=True, exclude_none=True) == {
        "type": "apiKey",
        "in": "query",
        "name": "key",
    }
    cases = [
        ({"type": "http", "scheme": "basic"}, HTTPBase),
        ({"type": "http", "scheme": "bearer"}, HTTPBearer),
        ({"type": "openIdConnect", "openIdConnectUrl": "https://idp"}, OpenIdConnect),
        (
            {"type": "openIdConnect", "authorization_endpoint": "a", "token_endpoint": "t"},
            OpenIdConnectWithConfig,
        ),
    ]
    for scheme, cls in cases:
        assert type(AuthConfig.model_validate({"authScheme": scheme}).auth_scheme) is cls


def test_the_credential_key_is_derived_stably_unless_given() -> None:
    def config(client_secret: str, **oauth: str) -> AuthConfig:
        return AuthConfig(
            auth_scheme=APIKey.model_validate({"in": "header", "name": "X"}),
            raw_auth_credential=AuthCredential(
                auth_type="oauth2",
                oauth2=OAuth2Auth(client_id="c", client_secret=client_secret, **oauth),
            ),
        )

    key = config("s").credential_key
    assert key is not None
    assert key.startswith("adk_apiKey_")
    assert "_oauth2_" in key
    # The flow's volatile fields do not change it; the client's secret does.
    assert config("s", auth_code="code", state="st").credential_key == key
    assert config("other").credential_key != key
    given = AuthConfig(
        auth_scheme=APIKey.model_validate({"in": "header", "name": "X"}), credential_key="mine"
    )
    assert given.credential_key == "mine"
    wire = config("s").model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["credentialKey"] == key
    arguments = AuthToolArguments(function_call_id="fc", auth_config=config("s"))
    assert list(arguments.model_dump(by_alias=True, exclude_none=True)) == [
        "functionCallId",
        "authConfig",
    ]


def test_app_auth_loads_without_the_web_framework() -> None:
    code = (
        "import sys, app.auth; "
        "print(any(m.split('.')[0] in ('fastapi', 'starlette') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
