//! One rating as the people entitled to it see it: its rater (answers as they were
//! shown) or a lead of its batch (answers canonical). Both the rater's pages and the
//! lead's review read ratings through here.

use std::sync::Arc;

use serde::Serialize;
use uuid::Uuid;

use super::{ServiceError, ServiceResult};
use crate::store::Store;
use verdict_core::assignment::Assignment;
use verdict_core::batch::Batch;
use verdict_core::lifecycle::{Outcome, SkipReason, Status};
use verdict_core::rating::Rating;
use verdict_core::rubric::{Answers, Rubric, ShownAnswers};
use verdict_core::user::User;

/// Who is looking at a rating, which decides the orientation they get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    /// The rater who made it: answers as they were shown.
    Owner,
    /// A lead of its batch or an admin: answers in the task's canonical orientation.
    Lead,
}

/// A rating with what is needed to show or change it.
pub struct Access {
    pub rating: Rating,
    pub assignment: Assignment,
    pub batch: Batch,
    pub rubric: Arc<Rubric>,
    pub viewer: Viewer,
    /// Whether the viewer is shown the task's external id
    /// ([`crate::access::sees_external_ids`]).
    pub sees_external_ids: bool,
}

/// The rating, if `user` may see it: its rater, or a lead of its batch, or an admin.
/// Not found otherwise, so another rater's work is not even confirmed to exist.
pub async fn access(store: &Store, id: Uuid, user: &User) -> ServiceResult<Access> {
    let rating = store.rating(id).await?.ok_or(ServiceError::NotFound)?;
    let viewer = if rating.rater_id == user.id {
        Viewer::Owner
    } else if crate::access::can_review(store, rating.batch_id, user).await? {
        Viewer::Lead
    } else {
        return Err(ServiceError::NotFound);
    };
    let assignment = store
        .assignment(rating.assignment_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let batch = store
        .batch(rating.batch_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let rubric = store.batch_rubric(&batch).await?;
    let sees_external_ids = crate::access::sees_external_ids(user, batch.raters_see_external_ids);
    Ok(Access {
        rating,
        assignment,
        batch,
        rubric,
        viewer,
        sees_external_ids,
    })
}

impl Access {
    /// Whether the viewer's answers are turned (an owner of a swapped assignment).
    pub fn turn(&self) -> bool {
        self.viewer == Viewer::Owner && self.assignment.swapped
    }

    /// The answers as the viewer reads them: its rater in the order the pair was shown
    /// to them (a swap is never revealed), anyone else in the task's own order.
    pub fn answers(&self) -> Answers {
        let task = self.rating.answers.clone();
        let mut answers = if self.turn() {
            task.into_shown(&self.rubric, true).into_map()
        } else {
            task.into_map()
        };
        // Only the parts its rubric has (older ratings may carry empty sides).
        self.rubric.keep_parts(&mut answers);
        answers
    }

    /// The answers as its rater was shown them: what a revision starts from.
    pub fn shown_answers(&self) -> ShownAnswers {
        let task = self.rating.answers.clone();
        task.into_shown(&self.rubric, self.assignment.swapped)
    }

    /// The last review's comments on single answers, by path in the viewer's orientation.
    pub fn review_fields(&self) -> std::collections::BTreeMap<String, String> {
        turn_paths(&self.rating.review_fields, self.turn())
    }

    /// The code the rater ran, in the viewer's orientation.
    pub fn evidence(&self) -> Option<verdict_core::evidence::Evidence> {
        let evidence = self.rating.evidence.clone()?;
        Some(evidence.oriented(self.turn()))
    }

    /// The name of the rating's task (whose external id is `external_id`) as the viewer
    /// may see it ([`crate::access::task_name`]).
    pub async fn task_name(&self, store: &Store, external_id: &str) -> ServiceResult<String> {
        if self.sees_external_ids {
            return Ok(external_id.to_owned());
        }
        let number = store.task_number(self.assignment.id).await?;
        Ok(crate::access::task_name(false, external_id, number))
    }

    /// Whether the rater may still change it.
    pub fn revisable(&self) -> bool {
        self.rating.can_revise()
    }
}

/// Answer paths with `a.` and `b.` traded when `turn` (between the orientation a rater
/// was shown and the canonical one).
pub fn turn_paths<T: Clone>(
    by_path: &std::collections::BTreeMap<String, T>,
    turn: bool,
) -> std::collections::BTreeMap<String, T> {
    by_path
        .iter()
        .map(|(path, v)| {
            let path = match (turn, path.split_once('.')) {
                (true, Some(("a", rest))) => format!("b.{rest}"),
                (true, Some(("b", rest))) => format!("a.{rest}"),
                _ => path.clone(),
            };
            (path, v.clone())
        })
        .collect()
}

/// A rating as the API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RatingView {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub batch_id: Uuid,
    /// The task's external id; for a rater of a batch that does not show them, a
    /// neutral name of the rater's own instead (`Task 17`).
    pub external_id: String,
    pub outcome: Outcome,
    pub status: Status,
    /// In the orientation the caller is entitled to: as shown, for its rater;
    /// canonical, for leads.
    #[schema(value_type = Object)]
    pub answers: Answers,
    pub skip_reason: Option<SkipReason>,
    pub note: Option<String>,
    pub time_spent_s: i32,
    pub version: i32,
    pub submitted_at: Option<chrono::DateTime<chrono::Utc>>,
    pub reviewed_at: Option<chrono::DateTime<chrono::Utc>>,
    pub review_comment: Option<String>,
    /// The last review's comments on single answers, by answer path (oriented as the
    /// answers are).
    pub review_fields: std::collections::BTreeMap<String, String>,
    /// The ids of the rubric's warnings the answers met, which the rater confirmed.
    pub confirmed_warnings: Vec<String>,
    /// Code the rater ran in the browser (oriented as the answers are).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<verdict_core::evidence::Evidence>,
    /// Leads only: whether the rater saw B first, and who the rater is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swapped: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rater: Option<String>,
    /// Leads only (a rater is never told a task is gold): how a rating of a gold task did
    /// against its expected answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold_grade: Option<verdict_core::gold::Grade>,
    /// Leads only: the rating waits for review first, and counts in no metric until it
    /// is accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_first: Option<bool>,
}

/// The rating as `access`'s viewer may see it.
pub async fn view(store: &Store, access: &Access) -> ServiceResult<RatingView> {
    let task = store
        .task(access.rating.task_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let lead = access.viewer == Viewer::Lead;
    let rater = if lead {
        store
            .user_by_id(access.rating.rater_id)
            .await?
            .map(|u| u.username)
    } else {
        None
    };
    let external_id = access.task_name(store, &task.external_id).await?;
    let r = &access.rating;
    Ok(RatingView {
        id: r.id,
        assignment_id: r.assignment_id,
        batch_id: r.batch_id,
        external_id,
        outcome: r.outcome,
        status: r.status,
        answers: access.answers(),
        skip_reason: r.skip_reason.clone(),
        note: r.note.clone(),
        time_spent_s: r.time_spent_s,
        version: r.version,
        submitted_at: r.submitted_at,
        reviewed_at: r.reviewed_at,
        review_comment: r.review_comment.clone(),
        review_fields: access.review_fields(),
        confirmed_warnings: r.confirmed_warnings.clone(),
        evidence: access.evidence(),
        swapped: lead.then_some(access.assignment.swapped),
        rater,
        gold_grade: r.gold_grade.clone().filter(|_| lead),
        review_first: lead.then_some(r.review_first),
    })
}
