use chrono::DateTime;
use uuid::Uuid;

use super::*;
use crate::lifecycle::{Outcome, SkipReason, Status};
use crate::rating::tests::rating;

fn assignment(state: AssignmentState) -> Assignment {
    Assignment {
        id: Uuid::nil(),
        task_id: Uuid::nil(),
        batch_id: Uuid::nil(),
        rater_id: Uuid::nil(),
        swapped: false,
        state,
        lease_expires_at: DateTime::UNIX_EPOCH,
        created_at: DateTime::UNIX_EPOCH,
    }
}

fn rated(sxs: i64) -> Finish {
    Finish::Rated {
        answers: serde_json::from_value(serde_json::json!({ "sxs": sxs })).unwrap(),
    }
}

#[test]
fn an_open_assignment_takes_drafts_and_finishes() {
    let open = assignment(AssignmentState::Open);
    assert_eq!(open.draft_step(), DraftStep::Save);
    assert_eq!(open.finish_step(None, &rated(3)), FinishStep::Store);
    // A draft stored before is overwritten by the finish.
    let draft = rating(Outcome::Rated, Status::Draft);
    assert_eq!(open.finish_step(Some(&draft), &rated(3)), FinishStep::Store);
}

#[test]
fn an_expired_assignment_keeps_what_was_written_and_refuses() {
    let expired = assignment(AssignmentState::Expired);
    assert_eq!(expired.draft_step(), DraftStep::SaveAndRefuse);
    assert_eq!(
        expired.finish_step(None, &rated(3)),
        FinishStep::Expired { keep_draft: true }
    );
    let skip = Finish::Skipped {
        reason: "unfamiliar".parse::<SkipReason>().unwrap(),
        note: None,
    };
    // A skip has no answers to keep.
    assert_eq!(
        expired.finish_step(None, &skip),
        FinishStep::Expired { keep_draft: false }
    );
}

#[test]
fn a_finished_assignment_answers_a_repeat_and_refuses_anything_else() {
    let done = assignment(AssignmentState::Done);
    assert!(matches!(
        done.draft_step(),
        DraftStep::Refuse(Refusal::Closed(_))
    ));
    let stored = rating(Outcome::Rated, Status::Submitted);
    assert_eq!(
        done.finish_step(Some(&stored), &rated(3)),
        FinishStep::AlreadyStored
    );
    assert!(matches!(
        done.finish_step(Some(&stored), &rated(6)),
        FinishStep::Refuse(Refusal::Closed(_))
    ));
    assert!(matches!(
        done.finish_step(None, &rated(3)),
        FinishStep::Refuse(Refusal::Closed(_))
    ));
    let skipped = assignment(AssignmentState::Skipped);
    assert!(matches!(
        skipped.finish_step(Some(&stored), &rated(6)),
        FinishStep::Refuse(_)
    ));
}
