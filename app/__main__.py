"""`python -m app` is the `agentd` command."""

from app.cli import main

main()
