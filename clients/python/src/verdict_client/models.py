"""Typed shapes of what verdict's API answers, written by hand.

Each model names the schema of the server's OpenAPI document it mirrors in
``__schema__``; the test suite reads the live document and fails when a model and its
schema drift apart (a field the schema lacks, a type it does not allow, or a property the
schema requires that the model leaves out). Fields the server may add later are kept, not
refused (``extra="allow"``), so an older client keeps working against a newer server.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Generic, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AuditEntry",
    "Batch",
    "Counts",
    "ErrorBody",
    "Metrics",
    "Page",
    "Progress",
    "RaterStats",
    "RatingSummary",
    "RecordError",
    "ReviewItem",
    "RubricRef",
    "UploadResult",
    "User",
]

Role = Literal["rater", "lead", "admin"]
BatchState = Literal["open", "closed"]
Routing = Literal["prefer", "strict"]
#: How the final dataset answers a task no lead decided.
FinalMethod = Literal["majority", "dawid_skene"]
Outcome = Literal["rated", "skipped", "out_of_scope"]
Status = Literal["draft", "submitted", "returned", "accepted", "rejected"]


class Model(BaseModel):
    """The base of every model: unknown fields kept, values checked on the way in."""

    model_config = ConfigDict(extra="allow", frozen=True)

    #: The name of the schema under ``components.schemas`` this model mirrors.
    __schema__: ClassVar[str] = ""


class User(Model):
    """An account (``GET /api/v1/me``, ``GET /api/v1/users``)."""

    __schema__ = "UserView"

    id: UUID
    username: str
    role: Role
    active: bool
    created_at: datetime
    #: What the person knows (languages, subjects), lower case and sorted, as a lead
    #: or an admin set it: what a routed batch goes by.
    skills: list[str]
    #: What the person says they know: a batch that prefers skills offers those tasks
    #: first too; a strict one goes by ``skills`` alone.
    declared_skills: list[str]


class Progress(Model):
    """How far a batch's rating has come."""

    __schema__ = "Progress"

    tasks: int
    #: Tasks with as many completed ratings as the overlap asks for.
    tasks_done: int
    #: Ratings submitted with outcome ``rated`` (any review status but draft).
    rated: int
    out_of_scope: int
    skipped: int
    #: Assignments being worked on now.
    in_progress: int

    @property
    def done(self) -> float:
        """The share of tasks done, from 0 to 1 (0 for a batch without tasks)."""
        return self.tasks_done / self.tasks if self.tasks else 0.0

    @property
    def finished(self) -> bool:
        """Whether every task has all the ratings its overlap asks for."""
        return self.tasks > 0 and self.tasks_done >= self.tasks


class Batch(Model):
    """A batch with its settings and progress (``GET /api/v1/batches/{id}``)."""

    __schema__ = "BatchView"

    id: UUID
    name: str
    rubric: str
    rubric_version: int
    state: BatchState
    overlap: int
    max_overlap: int
    escalate: str | None = None
    route_by: str | None = None
    routing: Routing
    randomize: bool
    raters_see_external_ids: bool
    lease_minutes: int
    min_explanation_len: int
    bradley_terry_prior: float
    #: How the final dataset (``export(final=True)``) answers a task no lead decided.
    final_method: FinalMethod
    #: The batch's classification questions, as the server gives them.
    classifications: list[dict[str, Any]]
    #: Usernames the batch is restricted to; ``None`` for everyone (and always ``None``
    #: for a rater, who is not shown the members).
    raters: list[str] | None = None
    leads: list[str] | None = None
    progress: Progress
    #: Tasks the caller has completed or skipped.
    mine: int
    created_at: datetime


class UploadResult(Model):
    """What an upload did (``POST /api/v1/batches``)."""

    __schema__ = "UploadResult"

    id: UUID
    name: str
    #: Tasks added by this upload.
    created: int
    #: Tasks already in the batch with the same content, left as they were.
    unchanged: int


class RecordError(Model):
    """One bad record of an upload: the line it starts on and why it was refused."""

    __schema__ = "RecordError"

    line: int
    message: str


class ErrorBody(Model):
    """The JSON body of every API error."""

    __schema__ = "ErrorBody"

    error: str
    #: Field path to the reason it was refused (validation errors).
    fields: dict[str, str] = {}
    #: Bad records of an upload, by line (the first 100).
    errors: list[RecordError] = []
    #: How many records were bad in all.
    error_count: int | None = None
    #: Consistency warnings the answers meet and the rater has not confirmed.
    warnings: list[dict[str, Any]] = []
    request_id: str | None = None


T = TypeVar("T")


class Page(Model, Generic[T]):
    """One page of a paged list: its items, how many the whole list has, and the cursor
    of the next page (``None`` on the last)."""

    items: list[T]
    total: int
    next_cursor: str | None = None


class RatingSummary(Model):
    """One of the caller's own ratings as listed (``GET /api/v1/ratings``)."""

    __schema__ = "HistoryItem"

    id: UUID
    assignment_id: UUID
    batch_id: UUID
    batch: str
    #: The task's external id, or the rater's own neutral name for it (``Task 17``).
    external_id: str
    outcome: Outcome
    status: Status
    review_comment: str | None = None
    version: int
    created_at: datetime
    updated_at: datetime
    submitted_at: datetime | None = None


class ReviewItem(Model):
    """A rating in the review queue (``GET /api/v1/review``)."""

    __schema__ = "QueueItem"

    rating_id: UUID
    batch_id: UUID
    batch_name: str
    external_id: str
    rater: str
    outcome: Outcome
    status: Status
    submitted_at: datetime | None = None
    #: Send it back with a review decision.
    version: int
    #: The rating's main answers (preferences, scores) by their labels.
    preview: list[dict[str, Any]]
    disagrees: bool
    review_first: bool


class AuditEntry(Model):
    """One entry of the audit log (``GET /api/v1/audit``)."""

    __schema__ = "AuditView"

    at: datetime
    actor: str | None = None
    action: str
    target: str | None = None
    detail: Any


class RubricRef(Model):
    """A rubric and the version of it a batch follows."""

    __schema__ = "RubricRef"

    name: str
    version: int


class Counts(Model):
    """How many ratings a batch's metrics count, and what they left out."""

    __schema__ = "Counts"

    tasks: int
    #: Every rating, drafts included.
    ratings: int
    included: int
    excluded: int
    drafts: int
    skipped: int
    #: The skips left out, by reason.
    skip_reasons: dict[str, int]
    out_of_scope: int
    rejected: int
    returned: int


class RaterStats(Model):
    """One rater's figures in a batch's metrics."""

    __schema__ = "RaterStats"

    rater: str
    included: int
    median_time_s: float | None = None
    skip_rate: float | None = None
    out_of_scope_rate: float | None = None
    agreement_with_others: float | None = None
    pairs_with_others: int


class Metrics(Model):
    """A batch's metrics (``GET /api/v1/batches/{id}/metrics``).

    The top-level figures are typed; the rest (agreement, bias, gold, models, ...) are
    kept as the server sends them, as dicts. Each preference question's summary sits at
    the top level under its key (``sxs`` for blackhat): read it with
    :meth:`preference`.
    """

    __schema__ = "Metrics"

    rubric: RubricRef
    counts: Counts
    #: Per question: answers per option.
    fields: dict[str, dict[str, int]]
    agreement: dict[str, Any]
    raters: list[RaterStats]
    position_bias: dict[str, Any] | None = None
    models: dict[str, Any] | None = None
    scores: dict[str, Any] = {}
    yes_shares: dict[str, Any] = {}
    choices: dict[str, Any] = {}
    judges: dict[str, Any] = {}
    bias: dict[str, Any]
    gold: dict[str, Any]
    overlap: dict[str, Any]
    routing: dict[str, Any] | None = None
    aggregation: dict[str, Any] = {}

    def preference(self, key: str) -> dict[str, Any]:
        """The summary of the preference question ``key`` (``n``, ``mean``,
        ``distribution``, ``a_wins``, ``ties``, ``b_wins``); ``KeyError`` if the rubric
        has no such preference (for any question, see :meth:`question`)."""
        extra = self.model_extra or {}
        if key not in extra or not isinstance(extra[key], dict):
            raise KeyError(
                f"no preference {key!r} in these metrics: question({key!r}) has every "
                "figure of a question"
            )
        return extra[key]

    def question(self, path: str) -> dict[str, Any]:
        """Every figure the metrics have of the question ``path`` (``sxs``, ``score``,
        ``a.correctness``), by where it sits: ``answers`` (answers per option),
        ``preference``, ``score``, ``yes_share``, ``choice``, ``agreement`` and
        ``aggregation``, each present where the question has it; ``KeyError`` if the
        metrics have nothing of it."""
        extra = self.model_extra or {}
        found: dict[str, Any] = {}
        for name, figures in (
            ("answers", self.fields),
            ("preference", {k: v for k, v in extra.items() if isinstance(v, dict)}),
            ("score", self.scores),
            ("yes_share", self.yes_shares),
            ("choice", self.choices),
            ("agreement", self.agreement),
            ("aggregation", self.aggregation),
        ):
            if path in figures:
                found[name] = figures[path]
        if not found:
            raise KeyError(f"no question {path!r} in these metrics")
        return found
