"""Authentication and tenancy: principals, API keys, JWT verification, per-principal rate limits."""

from app.security.principal import ANONYMOUS, Principal

__all__ = ["ANONYMOUS", "Principal"]
