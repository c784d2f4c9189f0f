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
from schemathesis.core.parameters import ParameterLocation

from tests.fuzz import EXAMPLES, SPEC, FuzzTarget, start_target, stateless_config

schema = schemathesis.openapi.from_path(SPEC, config=stateless_config())


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    """A live server with the shipped apps and the resources the run is pinned to."""
    fuzz_target = start_target(tmp_path_factory.mktemp("fuzz"))
    yield fuzz_target
    fuzz_target.server.stop()
    if "AGENTD_FUZZ_KEEP_LOG" in os.environ:
        sys.stderr.write(fuzz_target.server.log.read_text())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
def test_api_conforms_to_its_schema(case: schemathesis.Case[Any], target: FuzzTarget) -> None:
    # The invocation's id exists only once the server made it, after the config was read (and
    # the coverage phase's cases built): it is pinned here, except where the path is the test.
    params = case.path_parameters
    bad_path = case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)
    if params and "invocation_id" in params and not bad_path:
        params["invocation_id"] = target.invocation_id
    case.call_and_validate(base_url=target.url, timeout=30)
