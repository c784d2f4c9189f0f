"""Sessions: wire models, state scopes, the SessionService port and its implementations."""
