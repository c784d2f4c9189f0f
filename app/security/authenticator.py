"""Authenticator: turns a request's credentials into a Principal, and rate-limits principals.

Credentials: `Authorization: Bearer <token>` (a JWT or an API key) or `X-API-Key: <key>`.
Rate limiting uses the `limits` library (sliding window counter, in this process): each replica
limits each principal to AGENTD_RATE_LIMIT_PER_MINUTE requests per minute (not with
AGENTD_AUTH=none). Not its moving window: that strategy keeps one entry per request of the last
minute and its in-memory storage re-slices that list in a worker thread after every hit, work
that grows with the request rate; the counter is O(1) per hit and weighs the previous minute's
count by its overlap with the current one.
"""

import math
import time

from limits import RateLimitItemPerMinute
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from app.errors import RateLimited, Unauthenticated
from app.security.api_keys import ApiKeyService
from app.security.jwt import JwtVerifier
from app.security.principal import ANONYMOUS, Principal
from app.settings import Settings


class Authenticator:
    """Resolves principals according to AGENTD_AUTH."""

    def __init__(self, settings: Settings, api_keys: ApiKeyService | None) -> None:
        self.mode = settings.auth
        self._api_keys = api_keys
        self._jwt = JwtVerifier(settings) if settings.auth == "jwt" else None
        self._limit = (
            RateLimitItemPerMinute(settings.rate_limit_per_minute)
            if settings.rate_limit_per_minute > 0
            else None
        )
        self._limiter = SlidingWindowCounterRateLimiter(MemoryStorage())

    async def authenticate(self, authorization: str | None, api_key: str | None) -> Principal:
        """The caller's principal; Unauthenticated if credentials are missing or invalid."""
        if self.mode == "none":
            return ANONYMOUS
        token = api_key
        if token is None and authorization:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                token = value.strip()
        if not token:
            raise Unauthenticated("Send `Authorization: Bearer <token>` or `X-API-Key`.")
        principal: Principal | None = None
        if self.mode == "jwt" and self._jwt is not None:
            principal = self._jwt.verify(token)
        elif self._api_keys is not None:
            principal = await self._api_keys.verify(token)
        if principal is None:
            raise Unauthenticated("The credentials are invalid, expired or revoked.")
        return principal

    async def check_rate(self, principal: Principal) -> None:
        """RateLimited (429 + Retry-After) once the principal exceeds its per-minute budget.

        Not applied with AGENTD_AUTH=none: every caller is then the same anonymous principal on a
        loopback development server, and one shared budget would only throttle its owner.
        """
        if self._limit is None or self.mode == "none":
            return
        if await self._limiter.hit(self._limit, principal.id):
            return
        stats = await self._limiter.get_window_stats(self._limit, principal.id)
        raise RateLimited(max(1, math.ceil(stats.reset_time - time.time())))
