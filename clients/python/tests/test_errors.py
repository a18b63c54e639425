"""Refusals become exceptions with the server's status, message and fields."""

from __future__ import annotations

import uuid

import pytest
from helpers import PASSWORD, tasks

from verdict_client import (
    Client,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    UnauthorizedError,
    UnprocessableError,
    VerdictError,
)


def test_an_unknown_token_is_unauthorized(server):
    with Client(server.base_url, "not-a-token") as stranger:
        with pytest.raises(UnauthorizedError) as raised:
            stranger.me()
    assert raised.value.status == 401
    assert raised.value.message == "sign in first"
    assert raised.value.fields == {}


def test_a_role_that_does_not_allow_it_is_forbidden(rater, lead, name):
    with pytest.raises(ForbiddenError) as raised:
        rater.upload_batch(name, tasks(1))
    assert raised.value.status == 403
    assert "role" in raised.value.message
    with pytest.raises(ForbiddenError):
        lead.update_batch(uuid.uuid4(), overlap=2)


def test_a_batch_that_is_not_there_is_not_found(lead):
    missing = uuid.uuid4()
    for call in (lead.batch, lead.metrics, lead.export):
        with pytest.raises(NotFoundError) as raised:
            call(missing)
        assert raised.value.status == 404
        assert raised.value.message == "not found"


def test_bad_settings_are_unprocessable_with_a_reason_per_field(admin, name):
    batch = admin.upload_batch(name, tasks(1))
    with pytest.raises(UnprocessableError) as raised:
        admin.update_batch(batch.id, overlap=0, lease_minutes=0)
    error = raised.value
    assert error.status == 422
    assert set(error.fields) == {"overlap", "lease_minutes"}
    assert "overlap" in str(error) and "lease_minutes" in str(error)
    assert admin.batch(batch.id).overlap == 1, "nothing changed"


def test_a_taken_username_is_a_conflict(admin):
    with pytest.raises(ConflictError) as raised:
        admin.request(
            "POST",
            "/users",
            json={"username": "rater", "role": "rater", "password": PASSWORD},
        )
    assert raised.value.status == 409
    assert isinstance(raised.value, VerdictError)
    assert "rater" in raised.value.message or "taken" in raised.value.message


def test_a_path_may_be_written_with_the_api_prefix(admin):
    """Paths are under ``/api/v1``; one written with the prefix reaches the same place
    rather than a bare 404."""
    assert admin.request("GET", "/api/v1/me") == admin.request("GET", "/me")

