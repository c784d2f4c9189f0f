"""JWT bearer tokens (PyJWT): HS256 with a shared secret, or RS256 with a public key or a JWKS file.

Claims: `sub` is the user id the token acts for; `exp` is required. Optional claims:
`agentd_apps` (list of app names; default all), `agentd_service: true` (acts for every user, for
back ends), `agentd_admin: true` (may write `app:` state and read metrics). `aud`/`iss` are
checked when AGENTD_JWT_AUDIENCE / AGENTD_JWT_ISSUER are set.
"""

import json
from pathlib import Path
from typing import Any

import jwt

from app.security.principal import Principal
from app.settings import Settings


class JwtVerifier:
    """Verifies tokens with the configured key(s)."""

    def __init__(self, settings: Settings) -> None:
        self._audience = settings.jwt_audience
        self._issuer = settings.jwt_issuer
        self._keys: list[tuple[Any, str]] = []
        if settings.jwt_secret:
            self._keys.append((settings.jwt_secret, "HS256"))
        if settings.jwt_public_key:
            pem = settings.jwt_public_key
            if not pem.lstrip().startswith("-----BEGIN"):
                pem = Path(pem).read_text()
            self._keys.append((pem, "RS256"))
        if settings.jwt_jwks_file is not None:
            jwks = jwt.PyJWKSet.from_dict(json.loads(settings.jwt_jwks_file.read_text()))
            self._keys.extend((key.key, key.algorithm_name or "RS256") for key in jwks.keys)
        if not self._keys:
            raise ValueError(
                "AGENTD_AUTH=jwt needs AGENTD_JWT_SECRET, AGENTD_JWT_PUBLIC_KEY or "
                "AGENTD_JWT_JWKS_FILE."
            )

    def verify(self, token: str) -> Principal | None:
        """The principal of a valid token, or None."""
        for key, algorithm in self._keys:
            try:
                claims = jwt.decode(
                    token,
                    key,
                    algorithms=[algorithm],
                    audience=self._audience,
                    issuer=self._issuer,
                    options={"require": ["exp", "sub"], "verify_aud": self._audience is not None},
                )
            except jwt.PyJWTError:
                continue
            return _principal(claims)
        return None


def _principal(claims: dict[str, Any]) -> Principal | None:
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        return None
    apps = claims.get("agentd_apps")
    service = claims.get("agentd_service") is True
    return Principal(
        id=f"jwt:{subject}",
        kind="jwt",
        apps=frozenset(str(a) for a in apps) if isinstance(apps, list) else None,
        user_id=None if service else subject,
        admin=claims.get("agentd_admin") is True,
    )
