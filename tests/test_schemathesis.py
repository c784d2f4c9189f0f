"""Property-based API testing with schemathesis against a live server, from the committed spec.

Every operation gets a bounded number of generated requests (seed and size from the environment,
see tests/fuzz), aimed at real resources: the path parameters are pinned to an app, a session, an
artifact and an invocation that exist. Every response must be documented, match its schema and
content type, and never be a 5xx; methods a path does not list are 405.
"""

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.hooks import HookContext

from tests.fuzz import EXAMPLES, SPEC, FuzzTarget, start_target, stateless_config

schema = schemathesis.openapi.from_path(SPEC, config=stateless_config())
# The invocation's id is known only once the server made it: pinned by a hook, not the config.
pinned_invocation: dict[str, str] = {}


@schema.hook
def map_path_parameters(
    _context: HookContext, path_parameters: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Aim the invocation routes at the invocation the target has."""
    if path_parameters and "invocation_id" in path_parameters:
        path_parameters["invocation_id"] = pinned_invocation["id"]
    return path_parameters


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    """A live server with the shipped apps and the resources the run is pinned to."""
    fuzz_target = start_target(tmp_path_factory.mktemp("fuzz"))
    pinned_invocation["id"] = fuzz_target.invocation_id
    yield fuzz_target
    fuzz_target.server.stop()
    if "AGENTD_FUZZ_KEEP_LOG" in os.environ:
        sys.stderr.write(fuzz_target.server.log.read_text())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
def test_api_conforms_to_its_schema(case: schemathesis.Case[Any], target: FuzzTarget) -> None:
    case.call_and_validate(base_url=target.url, timeout=30)
