"""One repository per domain; each owns every SQL statement of its domain.

A repository is built from the `Db` of the caller's unit of work (`app.db.uow`), runs statements
built once at import, and never commits: the unit of work does, once.
"""
