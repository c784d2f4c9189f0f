"""Database plumbing: declarative base, engine factory and the `Storage*` tables."""
