"""The client's models and queries against the live server's OpenAPI document, so the
two cannot drift apart unnoticed.

For each operation the client calls, the model it reads the answer into is checked
against the answer's schema in the document: every model field must be a property of
the schema with a type the field takes (and each value an enum lists), every property
the schema requires must be a field, and a field the model requires must be one the
schema requires. Nested models are checked against the schemas they stand for. The
query parameters the client sends must be ones the operation documents.
"""

from __future__ import annotations

import types
import typing
from datetime import datetime
from typing import Any, Literal, Union
from uuid import UUID

import httpx
import pytest
from pydantic import BaseModel

from verdict_client import (
    AuditEntry,
    Batch,
    ErrorBody,
    Metrics,
    Page,
    RatingSummary,
    ReviewItem,
    UploadResult,
    User,
)

#: Each answer the client reads: operation, status, and the model it becomes.
ANSWERS = [
    ("get", "/api/v1/me", "200", User),
    ("get", "/api/v1/users", "200", list[User]),
    ("post", "/api/v1/batches", "201", UploadResult),
    ("post", "/api/v1/batches", "422", ErrorBody),
    ("get", "/api/v1/batches", "200", list[Batch]),
    ("get", "/api/v1/batches/{id}", "200", Batch),
    ("get", "/api/v1/batches/{id}", "404", ErrorBody),
    ("patch", "/api/v1/batches/{id}", "200", Batch),
    ("get", "/api/v1/batches/{id}/metrics", "200", Metrics),
    ("get", "/api/v1/batches/{id}/export", "422", ErrorBody),
    ("get", "/api/v1/ratings", "200", Page[RatingSummary]),
    ("get", "/api/v1/review", "200", Page[ReviewItem]),
    ("get", "/api/v1/audit", "200", Page[AuditEntry]),
]

#: The query parameters the client may send to each operation.
QUERIES = [
    (
        "post",
        "/api/v1/batches",
        {
            "name",
            "rubric",
            "overlap",
            "max_overlap",
            "escalate",
            "route_by",
            "routing",
            "randomize",
            "raters_see_external_ids",
        },
    ),
    (
        "get",
        "/api/v1/batches/{id}/export",
        {
            "format",
            "aggregate",
            "outcome",
            "status",
            "rater",
            "since",
            "until",
        },
    ),
    ("get", "/api/v1/ratings", {"cursor", "limit"}),
    (
        "get",
        "/api/v1/review",
        {
            "batch",
            "rater",
            "outcome",
            "status",
            "question",
            "answer",
            "disagrees",
            "warning",
            "review_first",
            "cursor",
            "limit",
        },
    ),
    ("get", "/api/v1/audit", {"action", "cursor", "limit"}),
]


@pytest.fixture(scope="module")
def document(server) -> dict[str, Any]:
    answer = httpx.get(f"{server.base_url}/api/v1/openapi.json", timeout=30)
    assert answer.status_code == 200
    return answer.json()


class Drift:
    """Where a model and its schema disagree, one line each."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.found: list[str] = []

    def resolve(self, schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """The schema a ``$ref`` points at (following chains), with its name."""
        name = None
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = self.document["components"]["schemas"][name]
        return name, schema

    def types_of(self, schema: dict[str, Any]) -> set[str] | None:
        """The JSON types a schema allows; ``None`` for any."""
        _, schema = self.resolve(schema)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                found: set[str] = set()
                for member in schema[key]:
                    member_types = self.types_of(member)
                    if member_types is None:
                        return None
                    found |= member_types
                return found
        if "allOf" in schema:
            return {"object"}
        kind = schema.get("type")
        if kind is None:
            return {"object"} if "properties" in schema else None
        found = set(kind) if isinstance(kind, list) else {kind}
        if schema.get("nullable"):
            found.add("null")
        return found

    def object_schema(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """The object schema of ``schema`` (the non-null member of a nullable one)."""
        _, schema = self.resolve(schema)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                objects = [s for s in schema[key] if self.types_of(s) != {"null"}]
                return self.object_schema(objects[0]) if len(objects) == 1 else None
        if "allOf" in schema:
            # Every member holds: their properties and requirements add up (a flattened
            # map, such as the metrics' preferences by key, is a member without any).
            merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for member in schema["allOf"]:
                part = self.object_schema(member) or {}
                merged["properties"].update(part.get("properties", {}))
                merged["required"] += part.get("required", [])
            return merged
        return schema

    def enum_of(self, schema: dict[str, Any]) -> set[Any] | None:
        _, schema = self.resolve(schema)
        values = set(schema.get("enum", [])) - {None}
        for key in ("oneOf", "anyOf"):
            for member in schema.get(key, []):
                values |= self.enum_of(member) or set()
        return values or None

    def check(self, where: str, annotation: Any, schema: dict[str, Any]) -> None:
        """Checks that a value of ``annotation`` reads every value ``schema`` allows."""
        allowed = self.types_of(schema)
        takes = model_types(annotation)
        if allowed is not None and takes is not None:
            for kind in allowed:
                if kind not in takes and not (kind == "integer" and "number" in takes):
                    self.found.append(
                        f"{where}: the schema allows {kind}, the model takes {sorted(takes)}"
                    )
        elif takes is not None and allowed is None:
            self.found.append(
                f"{where}: the schema allows any value, the model takes {sorted(takes)}"
            )
        inner = strip_optional(annotation)
        literals = literal_values(inner)
        enum = self.enum_of(schema)
        if literals is not None and enum is not None and not enum <= literals:
            self.found.append(
                f"{where}: the schema's values {sorted(enum - literals)} are not in the "
                "model's Literal"
            )
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            self.model(where, inner, schema)
        elif typing.get_origin(inner) is list:
            item = typing.get_args(inner)[0]
            _, resolved = self.resolve(schema)
            objects = self.object_schema(resolved) or {}
            if "items" in objects:
                self.check(f"{where}[]", item, objects["items"])

    def model(self, where: str, model: type[BaseModel], schema: dict[str, Any]) -> None:
        """Checks a model's fields against the object schema it is read from."""
        name, _ = self.resolve(schema)
        expected = getattr(model, "__schema__", "")
        if name and expected and name != expected:
            self.found.append(
                f"{where}: {model.__name__} says it mirrors {expected}, the document gives {name}"
            )
        objects = self.object_schema(schema)
        if objects is None or "properties" not in objects:
            self.found.append(f"{where}: {model.__name__} is read from a schema without properties")
            return
        properties = objects["properties"]
        required = set(objects.get("required", []))
        for field_name, info in model.model_fields.items():
            path = f"{where}.{field_name}"
            if field_name not in properties:
                self.found.append(f"{path}: not a property of the schema")
                continue
            self.check(path, info.annotation, properties[field_name])
            if info.is_required() and field_name not in required:
                self.found.append(f"{path}: required by the model, optional in the schema")
        for missing in sorted(required - set(model.model_fields)):
            self.found.append(f"{where}.{missing}: required by the schema, not in the model")


def strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def literal_values(annotation: Any) -> set[Any] | None:
    return set(typing.get_args(annotation)) if typing.get_origin(annotation) is Literal else None


def model_types(annotation: Any) -> set[str] | None:
    """The JSON types a field of ``annotation`` reads; ``None`` for any."""
    if annotation is Any:
        return None
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        found: set[str] = set()
        for member in typing.get_args(annotation):
            member_types = model_types(member)
            if member_types is None:
                return None
            found |= member_types
        return found
    if annotation is type(None):
        return {"null"}
    if origin is Literal:
        return {
            {str: "string", int: "integer", bool: "boolean"}[type(v)]
            for v in typing.get_args(annotation)
        }
    if origin is list:
        return {"array"}
    if origin is dict:
        return {"object"}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return {"object"}
        if issubclass(annotation, bool):
            return {"boolean"}
        if issubclass(annotation, int):
            return {"integer"}
        if issubclass(annotation, float):
            return {"number", "integer"}
        if issubclass(annotation, (str, UUID, datetime)):
            return {"string"}
    raise AssertionError(f"the drift check does not know {annotation!r}")


def answer_schema(document: dict[str, Any], method: str, path: str, status: str) -> dict[str, Any]:
    operation = document["paths"][path][method]
    content = operation["responses"][status]["content"]
    return content["application/json"]["schema"]


@pytest.mark.parametrize(
    "method, path, status, model", ANSWERS, ids=[f"{m} {p} {s}" for m, p, s, _ in ANSWERS]
)
def test_each_answer_the_client_reads_matches_its_model(document, method, path, status, model):
    drift = Drift(document)
    drift.check(
        f"{method.upper()} {path} {status}", model, answer_schema(document, method, path, status)
    )
    assert drift.found == []


@pytest.mark.parametrize("method, path, sent", QUERIES, ids=[f"{m} {p}" for m, p, _ in QUERIES])
def test_each_query_parameter_the_client_sends_is_documented(document, method, path, sent):
    documented = {
        p["name"]
        for p in document["paths"][path][method].get("parameters", [])
        if p["in"] == "query"
    }
    assert sent - documented == set()


def test_the_check_finds_a_drifted_model(document):
    """A model that lost a required field, gained one the server does not send, and
    reads a field as the wrong type is caught on each count."""

    class Drifted(BaseModel):
        __schema__ = "UserView"
        id: UUID
        role: Literal["rater", "lead"]
        active: int
        nickname: str
        created_at: datetime
        skills: list[int]

    drift = Drift(document)
    drift.check("me", Drifted, answer_schema(document, "get", "/api/v1/me", "200"))
    found = "\n".join(drift.found)
    assert "me.username: required by the schema, not in the model" in found
    assert "me.nickname: not a property of the schema" in found
    assert "me.active: the schema allows boolean" in found
    assert "me.role: the schema's values ['admin']" in found
    assert "me.skills[]: the schema allows string" in found
