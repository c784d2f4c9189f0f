"""Stateful schemathesis run: chains of real calls that follow the spec's OpenAPI links.

A scenario starts from an operation that makes something (a session, an artifact version, an
invocation) and goes on with the operations its response links to: create session -> get /
patch / list / delete, upload artifact -> versions -> delete, run -> invocation -> cancel. Every
response must be documented, match its schema, never be a 5xx, and agree with what came before
(schemathesis' stateful checks: a deleted session is gone, a created one can be read).

Seed and size come from the environment (tests/fuzz); the run reports how many calls it made.

The server is real and keeps its state, and schemathesis decides with true randomness whether a
step uses a link's value, so the same choices can meet different answers: Hypothesis then stops
with `Flaky` (inconsistent data generation). As schemathesis' own runner does, the run starts
again (next seed) until the scenarios are done; a failed check is recorded when it happens, so
no restart can hide it. Each scenario acts as a user of its own, so earlier scenarios' sessions
(a session id taken, a session deleted) do not change its answers.
"""

import itertools
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky
from schemathesis import Case, Response
from schemathesis.checks import CheckFunction
from schemathesis.core.parameters import ParameterLocation
from schemathesis.engine.errors import is_inconsistent_replay
from schemathesis.generation.stateful.state_machine import APIStateMachine

from tests.fuzz import APP, SCENARIOS, SEED, SPEC, STEPS, FuzzTarget, start_target, stateful_config

# Restarts after `Flaky` allowed in one run before the test gives up (none is a failure).
MAX_RESTARTS = 50

schema = schemathesis.openapi.from_path(SPEC, config=stateful_config())


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    """A live server with the shipped apps."""
    fuzz_target = start_target(tmp_path_factory.mktemp("fuzz-stateful"))
    yield fuzz_target
    fuzz_target.server.stop()
    if "AGENTD_FUZZ_KEEP_LOG" in os.environ:
        sys.stderr.write(fuzz_target.server.log.read_text())


@dataclass
class Tally:
    """What one stateful run did."""

    base_url: str
    scenarios: int = 0
    restarts: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    failures: list[Exception] = field(default_factory=list)
    users: Iterator[int] = field(default_factory=itertools.count)

    def summary(self) -> str:
        """One line for the log: seed, size and the calls per operation and status class."""
        return (
            f"stateful fuzz: seed {SEED}, {self.scenarios} scenarios of up to {STEPS} steps "
            f"({self.restarts} restarts), {self.calls.total()} calls: "
            + ", ".join(f"{key} {count}" for key, count in sorted(self.answers.items()))
        )


class LiveCalls(APIStateMachine):
    """Steps go to the live server, as a user of their own, and are counted in `tally`."""

    tally: ClassVar[Tally]
    user_id: str

    def setup(self) -> None:
        """A new scenario: a new user."""
        super().setup()
        self.tally.scenarios += 1
        self.user_id = f"fuzz-{next(self.tally.users)}"

    def before_call(self, case: Case[Any]) -> None:
        """Aim at the app that exists (a random name only meets 404) and the scenario's user."""
        params = case.path_parameters
        negative = case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)
        if params and not negative:
            for name, value in (("app_name", APP), ("user_id", self.user_id)):
                if name in params:
                    params[name] = value
        super().before_call(case)

    def get_call_kwargs(self, _case: Case[Any]) -> dict[str, Any]:
        """Send to the live server."""
        return {"base_url": self.tally.base_url, "timeout": 30}

    def after_call(self, response: Response, case: Case[Any]) -> None:
        """Count the call and its status class per operation."""
        operation = str(case.operation.definition.raw.get("operationId", case.operation.label))
        self.tally.calls[operation] += 1
        self.tally.answers[f"{operation} {response.status_code // 100}xx"] += 1
        super().after_call(response, case)

    def validate_response(
        self,
        response: Response,
        case: Case[Any],
        additional_checks: list[CheckFunction] | None = None,
        **kwargs: Any,
    ) -> None:
        """Run the checks; a failure is kept, whatever Hypothesis makes of it afterwards."""
        try:
            super().validate_response(response, case, additional_checks, **kwargs)
        except Exception as exc:
            self.tally.failures.append(exc)
            raise


def run_workflow(base_url: str) -> Tally:
    """Run `SCENARIOS` scenarios of the spec's links against the server at `base_url`."""
    tally = Tally(base_url)
    workflow = schema.as_state_machine()
    while tally.scenarios < SCENARIOS and not tally.failures:
        machine = cast(
            type[APIStateMachine],
            type(
                "AgentdWorkflow",
                (LiveCalls, workflow),
                {"tally": tally, "rule_order_seed": SEED + tally.restarts},
            ),
        )
        try:
            hypothesis_seed(SEED + tally.restarts)(machine).run(
                settings=settings(
                    max_examples=SCENARIOS - tally.scenarios,
                    stateful_step_count=STEPS,
                    phases=[Phase.generate],
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                )
            )
        except Exception as exc:
            if tally.failures or not (isinstance(exc, Flaky) or is_inconsistent_replay(exc)):
                raise
            tally.restarts += 1
            if tally.restarts > MAX_RESTARTS:
                raise
            continue
        break
    if tally.failures:
        raise tally.failures[0]
    return tally


def test_linked_operations_chain_and_stay_consistent(
    target: FuzzTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    tally = run_workflow(target.url)
    with capsys.disabled():
        sys.stderr.write(f"\n{tally.summary()}\n")
    # The links were followed: sessions were made, then read back and changed through them.
    assert tally.answers["create_session 2xx"] + tally.answers["create_session_with_id 2xx"] > 0
    assert tally.answers["get_session 2xx"] + tally.answers["update_session 2xx"] > 0
