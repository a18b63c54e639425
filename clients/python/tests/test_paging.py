"""Paged lists: every page read through ``next_cursor``, none repeated, none lost."""

from __future__ import annotations

from helpers import rate, tasks

from verdict_client import AuditEntry, RatingSummary, ReviewItem


def test_ratings_are_read_across_pages(admin, rater, name):
    batch = admin.upload_batch(name, tasks(5), randomize=False)
    rated = {rate(rater, batch.id) for _ in range(5)}
    everything = list(rater.ratings(limit=2))
    assert all(isinstance(r, RatingSummary) for r in everything)
    ids = [str(r.id) for r in everything]
    assert len(ids) == len(set(ids)), "no rating comes twice across pages"
    assert rated <= set(ids)
    # Newest first, and the ones of this batch are the newest five.
    assert {str(r.id) for r in everything[:5]} == rated
    assert {r.batch for r in everything[:5]} == {name}
    assert all(r.status == "submitted" and r.outcome == "rated" for r in everything[:5])
    assert len(everything) == len(list(rater.ratings(limit=200)))


def test_the_review_queue_is_read_across_pages_under_its_filters(admin, lead, rater, name):
    batch = admin.upload_batch(name, tasks(3), randomize=False)
    rated = [rate(rater, batch.id) for _ in range(3)]
    queue = list(lead.review_queue(batch=batch.id, limit=1))
    assert all(isinstance(item, ReviewItem) for item in queue)
    assert [str(item.rating_id) for item in queue] == rated, "oldest first, every page"
    assert {item.rater for item in queue} == {"rater"}
    assert all(item.version == 1 and not item.disagrees for item in queue)
    assert list(lead.review_queue(batch=batch.id, status="accepted")) == []


def test_the_audit_log_is_read_across_pages_by_action(admin, name):
    for i in range(3):
        admin.upload_batch(f"{name}-{i}", tasks(1))
    uploads = list(admin.audit(action="batch.upload", limit=2))
    assert all(isinstance(e, AuditEntry) and e.action == "batch.upload" for e in uploads)
    assert [e.target for e in uploads[:3]] == [f"{name}-2", f"{name}-1", f"{name}-0"]
    assert all(e.actor == "admin" for e in uploads[:3])
