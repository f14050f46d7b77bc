"""Schemathesis drives every operation of the OpenAPI with generated input: no answer is a 5xx."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

CASES_PER_OPERATION = 30
CONTRACT_CASES = 15


def test_no_operation_answers_5xx(live_server):
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/api/v1/match", "/api/v1/search", "/api/v1/errors/{code}"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=CASES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        def call(case):
            case.call_and_validate(checks=[not_a_server_error])

        call()


def test_every_json_answer_matches_its_documented_schema(live_server):
    """The contract: what each operation sends (200s and documented errors) is what the OpenAPI says."""
    from schemathesis.checks import response_schema_conformance

    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json")
    for operation in [result.ok() for result in schema.get_all_operations()]:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=CONTRACT_CASES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        def call(case):
            case.call_and_validate(checks=[response_schema_conformance])

        call()
