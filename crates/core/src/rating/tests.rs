use serde_json::json;

use super::*;
use crate::evidence::Evidence;

fn answers(sxs: i64) -> TaskAnswers {
    serde_json::from_value(json!({ "sxs": sxs })).unwrap()
}

pub(crate) fn rating(outcome: Outcome, status: Status) -> Rating {
    let at = DateTime::<Utc>::UNIX_EPOCH;
    Rating {
        id: Uuid::nil(),
        assignment_id: Uuid::nil(),
        task_id: Uuid::nil(),
        batch_id: Uuid::nil(),
        rater_id: Uuid::nil(),
        outcome,
        status,
        answers: answers(3),
        skip_reason: None,
        note: None,
        time_spent_s: 60,
        version: 2,
        created_at: at,
        updated_at: at,
        submitted_at: Some(at),
        reviewed_at: None,
        review_comment: None,
        confirmed_warnings: vec![],
        evidence: None,
        review_fields: BTreeMap::new(),
        gold_grade: None,
        review_first: false,
        set_aside: false,
    }
}

#[test]
fn the_same_finish_again_is_recognised_and_a_different_one_is_not() {
    let stored = rating(Outcome::Rated, Status::Submitted);
    assert!(stored.is_finished_with(&Finish::Rated {
        answers: answers(3)
    }));
    assert!(!stored.is_finished_with(&Finish::Rated {
        answers: answers(4)
    }));
    assert!(!stored.is_finished_with(&Finish::OutOfScope {
        answers: answers(3),
        explanation: "not a coding prompt at all".into(),
    }));
    // A draft is not a finish: the same answers saved as a draft are no repeat.
    let draft = rating(Outcome::Rated, Status::Draft);
    assert!(!draft.is_finished_with(&Finish::Rated {
        answers: answers(3)
    }));
    // A skip is the same skip only with the same note.
    let mut skip = rating(Outcome::Skipped, Status::Submitted);
    skip.answers = TaskAnswers::default();
    skip.note = Some("too long".into());
    let again = Finish::Skipped {
        reason: "too_long".parse::<SkipReason>().unwrap(),
        note: Some("too long".into()),
    };
    assert!(skip.is_finished_with(&again));
    assert!(!skip.is_finished_with(&Finish::Skipped {
        reason: "too_long".parse::<SkipReason>().unwrap(),
        note: None,
    }));
}

#[test]
fn a_review_needs_the_version_read_and_a_reviewable_rating() {
    let submitted = rating(Outcome::Rated, Status::Submitted);
    assert_eq!(submitted.check_review(2), Ok(()));
    assert_eq!(
        submitted.check_review(1),
        Err(Refusal::Stale { current: 2 })
    );
    assert!(submitted.can_review());
    let rejected = rating(Outcome::Rated, Status::Rejected);
    assert!(!rejected.can_review());
    assert!(matches!(rejected.check_review(2), Err(Refusal::Closed(_))));
    let skipped = rating(Outcome::Skipped, Status::Submitted);
    assert!(matches!(skipped.check_review(2), Err(Refusal::Closed(_))));
    let draft = rating(Outcome::Rated, Status::Draft);
    assert!(matches!(draft.check_review(2), Err(Refusal::Closed(_))));
}

#[test]
fn revising_follows_the_status_and_a_skip_frees_the_task_once() {
    assert_eq!(
        rating(Outcome::Rated, Status::Returned).check_revise(),
        Ok(())
    );
    assert!(
        rating(Outcome::Rated, Status::Accepted)
            .check_revise()
            .is_err()
    );
    assert!(
        rating(Outcome::Skipped, Status::Submitted)
            .check_revise()
            .is_err()
    );
    assert!(
        rating(Outcome::Rated, Status::Draft)
            .check_revise_locked()
            .is_err()
    );
    // Locked, only the status is asked: the revision may change the outcome.
    assert_eq!(
        rating(Outcome::Skipped, Status::Submitted).check_revise_locked(),
        Ok(())
    );

    let skip = Finish::Skipped {
        reason: "other".parse::<SkipReason>().unwrap(),
        note: Some("duplicate of another task".into()),
    };
    assert!(rating(Outcome::Rated, Status::Submitted).revision_frees_the_task(&skip));
    assert!(!rating(Outcome::Skipped, Status::Submitted).revision_frees_the_task(&skip));
    let rated = Finish::Rated {
        answers: answers(5),
    };
    assert!(!rating(Outcome::Rated, Status::Submitted).revision_frees_the_task(&rated));
}

#[test]
fn evidence_sent_replaces_an_empty_one_clears_and_none_keeps() {
    let mut extras = Extras::default();
    assert_eq!(extras.evidence_change(), EvidenceChange::Keep);
    extras.evidence = Some(Evidence::default());
    assert_eq!(extras.evidence_change(), EvidenceChange::Set(None));
    let ran: Evidence = serde_json::from_value(json!({
        "runs": [{ "side": "a", "block": 1, "language": "python", "status": "passed" }]
    }))
    .unwrap();
    extras.evidence = Some(ran.clone());
    assert_eq!(extras.evidence_change(), EvidenceChange::Set(Some(&ran)));
}

#[test]
fn the_history_snapshot_names_every_changeable_part() {
    let mut r = rating(Outcome::OutOfScope, Status::Returned);
    r.note = Some("asks for malware".into());
    r.confirmed_warnings = vec!["sxs_vs_correctness".into()];
    let snapshot = r.snapshot();
    assert_eq!(snapshot["outcome"], "out_of_scope");
    assert_eq!(snapshot["status"], "returned");
    assert_eq!(snapshot["answers"], json!({ "sxs": 3 }));
    assert_eq!(snapshot["note"], "asks for malware");
    assert_eq!(snapshot["version"], 2);
    assert_eq!(snapshot["time_spent_s"], 60);
    assert_eq!(
        snapshot["confirmed_warnings"],
        json!(["sxs_vs_correctness"])
    );
    assert_eq!(snapshot["evidence"], Value::Null);
    assert_eq!(snapshot["review_fields"], json!({}));
}
