"""Accounts, batches, settings and progress through the blocking client."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from helpers import rate, tasks

from verdict_client import Batch, Client, User


def test_me_is_the_tokens_account(server, admin, rater):
    me = admin.me()
    assert isinstance(me, User)
    assert (me.username, me.role, me.active) == ("admin", "admin", True)
    assert rater.me().role == "rater"
    assert rater.me().id != me.id


def test_users_lists_every_seeded_account_with_its_role(admin):
    roles = {user.username: user.role for user in admin.users()}
    assert {k: roles[k] for k in ("admin", "lead", "rater", "rater2")} == {
        "admin": "admin",
        "lead": "lead",
        "rater": "rater",
        "rater2": "rater",
    }


def test_batches_lists_what_each_caller_may_see(admin, rater, rater2, name):
    batch = admin.upload_batch(name, tasks(2))
    assert batch.id in {b.id for b in admin.batches()}
    assert batch.id in {b.id for b in rater.batches()}

    restricted = admin.update_batch(batch.id, raters=["rater2"])
    assert restricted.raters == ["rater2"]
    assert batch.id not in {b.id for b in rater.batches()}
    assert batch.id in {b.id for b in rater2.batches()}
    # A rater is not shown who else may rate.
    assert rater2.batch(batch.id).raters is None

    closed = admin.update_batch(batch.id, state="closed", raters=None)
    assert (closed.state, closed.raters) == ("closed", None)
    assert batch.id not in {b.id for b in rater2.batches()}


def test_update_batch_changes_settings_and_returns_the_batch(admin, name):
    batch = admin.upload_batch(name, tasks(2))
    changed = admin.update_batch(
        batch.id,
        overlap=2,
        max_overlap=4,
        lease_minutes=90,
        min_explanation_len=5,
        bradley_terry_prior=1.5,
    )
    assert isinstance(changed, Batch)
    assert (changed.overlap, changed.max_overlap, changed.lease_minutes) == (2, 4, 90)
    assert (changed.min_explanation_len, changed.bradley_terry_prior) == (5, 1.5)
    assert admin.batch(batch.id).lease_minutes == 90


def test_progress_follows_the_ratings_and_watch_stops_when_the_batch_is_done(admin, rater, name):
    batch = admin.upload_batch(name, tasks(2), randomize=False)
    rate(rater, batch.id)
    halfway = admin.batch(batch.id).progress
    assert (halfway.tasks, halfway.tasks_done, halfway.rated) == (2, 1, 1)
    assert halfway.done == 0.5 and not halfway.finished
    assert rater.batch(batch.id).mine == 1

    with pytest.raises(TimeoutError):
        for _ in admin.watch(batch.id, every=0.05, timeout=0.2):
            pass

    rate(rater, batch.id)
    seen = list(admin.watch(batch.id, every=0.05, timeout=5))
    assert len(seen) == 1
    assert seen[0].progress.finished and seen[0].progress.done == 1.0


def test_the_client_closes_with_its_block(server):
    with Client(server.base_url + "/api/v1/", server.tokens["lead"]) as lead:
        assert lead.me().username == "lead"
    with pytest.raises(RuntimeError):
        lead.me()


def test_the_timeout_given_bounds_the_wait_for_an_answer(server):
    # A listener that takes connections and never answers: the wait is the timeout's.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        with Client(f"http://127.0.0.1:{port}", server.tokens["lead"], timeout=0.3) as hasty:
            started = time.monotonic()
            with pytest.raises(httpx.ReadTimeout):
                hasty.me()
            assert 0.25 <= time.monotonic() - started < 3


def test_a_client_needs_a_token():
    with pytest.raises(ValueError, match="token"):
        Client("http://127.0.0.1:9", "")
