"""GitHub's published REST description as a response validator for the contract tests.

The OpenAPI 3.0 document is loaded once per test session, its schemas are
translated to JSON Schema 2020-12 (``nullable: true`` becomes a ``null`` type
or an ``anyOf`` with ``null``), and responses are checked against the schema
GitHub documents for that operation and status, with ``$ref``s resolved by
``referencing`` inside the one document.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

OPENAPI_PATH_ENV = "ORCHESTRATOR_OPENAPI_DESCRIPTION"
DEFAULT_OPENAPI_PATH = (
    Path(__file__).resolve().parents[2] / ".cache" / "contracts" / "openapi" / "api.github.com.json"
)
DOCUMENT_URI = "urn:github:openapi"
MAX_REPORTED_ERRORS = 10
BASIC_ERROR_POINTER = "/components/schemas/basic-error"


class ContractError(AssertionError):
    """A response does not match GitHub's description, or the description lacks the operation."""


def openapi_path() -> Path:
    override = os.environ.get(OPENAPI_PATH_ENV)
    return Path(override) if override else DEFAULT_OPENAPI_PATH


def to_json_schema(node: Any) -> Any:
    """Translate an OpenAPI 3.0 fragment to JSON Schema 2020-12, returning a new value."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: to_json_schema(value) for key, value in node.items()}
    # Only the boolean keyword; a property that happens to be called "nullable" is a schema.
    flag = converted.get("nullable")
    if not isinstance(flag, bool):
        return converted
    del converted["nullable"]
    if not flag:
        return converted
    if "enum" in converted and None not in converted["enum"]:
        converted["enum"] = [*converted["enum"], None]
    kind = converted.get("type")
    if isinstance(kind, str):
        converted["type"] = [kind, "null"]
        return converted
    if isinstance(kind, list):
        if "null" not in kind:
            converted["type"] = [*kind, "null"]
        return converted
    if any(key in converted for key in ("$ref", "allOf", "anyOf", "oneOf")):
        # Composition keywords would refuse null on their own: offer null as an alternative.
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


@dataclass(frozen=True)
class OpenAPIContract:
    """GitHub's REST description, translated, with a registry to resolve its ``$ref``s."""

    document: dict[str, Any]
    registry: Registry[Any]

    def operation(self, method: str, path_template: str) -> dict[str, Any]:
        """The operation object for ``method`` on ``path_template`` (GitHub's own spelling)."""
        paths = self.document["paths"]
        if path_template not in paths:
            near = sorted(p for p in paths if p.split("/")[:3] == path_template.split("/")[:3])
            raise ContractError(
                f"GitHub's description has no path {path_template!r}"
                + (f"; paths under the same prefix include {near[:8]}" if near else "")
            )
        operation = paths[path_template].get(method.lower())
        if operation is None:
            methods = sorted(m.upper() for m in paths[path_template] if m != "parameters")
            raise ContractError(
                f"GitHub documents no {method.upper()} on {path_template} (only {methods})"
            )
        return dict(operation)

    def response_pointer(self, method: str, path_template: str, status: int) -> str | None:
        """JSON pointer of the response body schema, or None when the status has no body."""
        operation = self.operation(method, path_template)
        responses = operation.get("responses", {})
        key = str(status)
        if key not in responses:
            raise ContractError(
                f"GitHub documents no {status} answer for {method.upper()} {path_template} "
                f"(documented: {sorted(responses)})"
            )
        response = responses[key]
        base = "/paths/" + _escape(path_template) + f"/{method.lower()}/responses/{key}"
        if "$ref" in response:
            base = response["$ref"].removeprefix("#")
            response = self.resolve_pointer(base)
        content = response.get("content") or {}
        for media_type in ("application/json", "application/scim+json"):
            if media_type in content and "schema" in content[media_type]:
                return f"{base}/content/{_escape(media_type)}/schema"
        return None

    def resolve_pointer(self, pointer: str) -> Any:
        node: Any = self.document
        for part in pointer.strip("/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def errors(self, method: str, path_template: str, status: int, body: Any) -> list[str]:
        """Every mismatch between ``body`` and the documented schema, as readable lines."""
        pointer = self.response_pointer(method, path_template, status)
        if pointer is None:
            if body in (None, b"", ""):
                return []
            if status < 400:
                return [f"GitHub documents no body for {status}, got {_preview(body)}"]
            # Some error answers are described without content, yet GitHub sends its
            # usual error object with them: accept exactly that shape.
            pointer = BASIC_ERROR_POINTER
        return self.schema_errors(pointer, body)

    def schema_errors(self, pointer: str, body: Any) -> list[str]:
        """Every mismatch between ``body`` and the schema at ``pointer``."""
        validator = Draft202012Validator(
            {"$ref": f"{DOCUMENT_URI}#{pointer}"}, registry=self.registry
        )
        found = sorted(validator.iter_errors(body), key=lambda e: [str(p) for p in e.absolute_path])
        return [_describe(error) for error in found]


@cache
def load_contract(path: Path | None = None) -> OpenAPIContract:
    """Load and translate GitHub's description once per process (about a second)."""
    target = path or openapi_path()
    if not target.is_file():
        raise ContractError(
            f"GitHub's OpenAPI description is missing at {target}: run `make contracts`"
        )
    with target.open(encoding="utf-8") as handle:
        raw = json.load(handle)
    if not str(raw.get("openapi", "")).startswith("3.0"):
        raise ContractError(f"{target} is not an OpenAPI 3.0 description")
    document = to_json_schema(raw)
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(DOCUMENT_URI, resource)
    return OpenAPIContract(document=document, registry=registry)


def assert_matches_openapi(method: str, path_template: str, status: int, body: Any) -> None:
    """Fail with every mismatch when ``body`` is not what GitHub documents for this answer."""
    problems = load_contract().errors(method, path_template, status, body)
    if problems:
        shown = problems[:MAX_REPORTED_ERRORS]
        if len(problems) > MAX_REPORTED_ERRORS:
            shown.append(f"... and {len(problems) - MAX_REPORTED_ERRORS} more")
        listing = "\n  ".join(shown)
        raise ContractError(
            f"{method.upper()} {path_template} -> {status} does not match GitHub's "
            f"description:\n  {listing}"
        )


def assert_is_basic_error(body: Any) -> None:
    """Fail unless ``body`` is GitHub's usual error object (for answers GitHub sends but
    does not describe for that operation)."""
    problems = load_contract().schema_errors(BASIC_ERROR_POINTER, body)
    if problems or not isinstance(body, dict) or "message" not in body:
        raise ContractError(f"not GitHub's error object: {problems or _preview(body)}")


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _describe(error: ValidationError) -> str:
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where}: {error.message[:300]}"


def _preview(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body)
    return text[:120]
