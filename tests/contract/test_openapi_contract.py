"""The OpenAPI validator itself: nullable translation, references, and clear refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.contract.openapi_contract import (
    ContractError,
    assert_matches_openapi,
    load_contract,
    to_json_schema,
)

MERGE = "/repos/{owner}/{repo}/pulls/{pull_number}/merge"


@pytest.mark.parametrize(
    ("openapi", "json_schema"),
    [
        ({"type": "string", "nullable": True}, {"type": ["string", "null"]}),
        (
            {"type": "string", "enum": ["a", "b"], "nullable": True},
            {"type": ["string", "null"], "enum": ["a", "b", None]},
        ),
        (
            {"allOf": [{"$ref": "#/x"}], "nullable": True},
            {"anyOf": [{"allOf": [{"$ref": "#/x"}]}, {"type": "null"}]},
        ),
        ({"$ref": "#/x", "nullable": True}, {"anyOf": [{"$ref": "#/x"}, {"type": "null"}]}),
        ({"description": "anything", "nullable": True}, {"description": "anything"}),
        ({"type": "integer", "nullable": False}, {"type": "integer"}),
        (
            {"type": "object", "properties": {"nullable": {"type": "boolean"}}},
            {"type": "object", "properties": {"nullable": {"type": "boolean"}}},
        ),
        (
            {"type": "array", "items": {"type": "object", "nullable": True}},
            {"type": "array", "items": {"type": ["object", "null"]}},
        ),
    ],
    ids=[
        "typed",
        "enum_gains_null",
        "composition_wrapped",
        "ref_wrapped",
        "untyped_left_open",
        "not_nullable_dropped",
        "property_named_nullable_kept",
        "nested",
    ],
)
def test_nullable_translation(openapi: dict[str, Any], json_schema: dict[str, Any]) -> None:
    assert to_json_schema(openapi) == json_schema


def test_translated_nullable_accepts_null_and_the_type_only() -> None:
    validator = Draft202012Validator(to_json_schema({"type": "string", "nullable": True}))
    assert validator.is_valid(None)
    assert validator.is_valid("x")
    assert not validator.is_valid(3)


def test_documented_body_is_accepted() -> None:
    body = {"sha": "a" * 40, "merged": True, "message": "Pull Request successfully merged"}
    assert_matches_openapi("PUT", MERGE, 200, body)


def test_mismatch_names_the_path_and_the_problem() -> None:
    with pytest.raises(ContractError) as caught:
        assert_matches_openapi("PUT", MERGE, 200, {"sha": 7, "merged": True})
    text = str(caught.value)
    assert "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge -> 200" in text
    assert "$.sha: 7 is not of type 'string'" in text
    assert "'message' is a required property" in text


def test_shared_response_component_is_followed() -> None:
    # 404 on merge is a $ref to components/responses/not_found (basic-error).
    assert_matches_openapi("PUT", MERGE, 404, {"message": "Not Found", "documentation_url": "u"})
    with pytest.raises(ContractError, match=r"\$\.message: 5 is not of type 'string'"):
        assert_matches_openapi("PUT", MERGE, 404, {"message": 5})


def test_nullable_reference_inside_a_real_schema() -> None:
    # An issue's `assignee` is a nullable-simple-user: null passes, a number does not.
    contract = load_contract()
    pointer = contract.response_pointer("GET", "/repos/{owner}/{repo}/issues/{issue_number}", 200)
    assert pointer is not None
    errors = contract.errors(
        "GET", "/repos/{owner}/{repo}/issues/{issue_number}", 200, {"assignee": None}
    )
    assert not any(e.startswith("$.assignee") for e in errors)
    errors = contract.errors(
        "GET", "/repos/{owner}/{repo}/issues/{issue_number}", 200, {"assignee": 5}
    )
    assert any(e.startswith("$.assignee") for e in errors)


def test_no_content_answer_must_have_no_body() -> None:
    path = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
    assert_matches_openapi("DELETE", path, 204, None)
    with pytest.raises(ContractError, match="no body for 204"):
        assert_matches_openapi("DELETE", path, 204, {"unexpected": True})


def test_error_described_without_content_may_carry_githubs_error_object() -> None:
    # "Check if a pull request has been merged" documents a bare 404.
    path = "/repos/{owner}/{repo}/pulls/{pull_number}/merge"
    assert_matches_openapi("GET", path, 404, None)
    assert_matches_openapi("GET", path, 404, {"message": "Not Found", "documentation_url": "u"})
    with pytest.raises(ContractError, match=r"\$\.message: \[\] is not of type 'string'"):
        assert_matches_openapi("GET", path, 404, {"message": []})


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        ("GET", "/repos/{owner}/{repo}/nothing", 200, "no path '/repos/{owner}/{repo}/nothing'"),
        ("PATCH", MERGE, 200, "documents no PATCH on"),
        ("PUT", MERGE, 418, "documents no 418 answer"),
    ],
    ids=["unknown_path", "unknown_method", "undocumented_status"],
)
def test_unknown_operation_is_a_clear_failure(
    method: str, path: str, status: int, message: str
) -> None:
    with pytest.raises(ContractError, match=message.replace("{", r"\{").replace("}", r"\}")):
        assert_matches_openapi(method, path, status, {})


def test_missing_description_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="run `make contracts`"):
        load_contract(tmp_path / "absent.json")
