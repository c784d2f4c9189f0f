"""Where this server is mounted, for the links and redirects its pages make."""

from starlette.requests import Request


def mount_root(request: Request) -> str:
    """The prefix a proxy strips before the request reaches us (ASGI `root_path`), without a
    trailing slash: a link or redirect to one of our paths must carry it."""
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")
