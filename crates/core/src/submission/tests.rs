use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::lifecycle::BatchState;
use crate::rubric::by_name;

fn blackhat() -> &'static Rubric {
    by_name("blackhat").unwrap()
}

fn batch() -> Batch {
    Batch {
        id: Uuid::nil(),
        name: "b".into(),
        rubric: "blackhat".into(),
        rubric_version: 1,
        overlap: 1,
        max_overlap: None,
        escalate: None,
        randomize: true,
        state: BatchState::Open,
        lease_minutes: 30,
        min_explanation_len: 20,
        classifications: vec![],
        raters_restricted: false,
        leads_restricted: false,
        created_at: DateTime::<Utc>::UNIX_EPOCH,
        gold_rate: 0.0,
        review_first_below: None,
        has_gold: false,
        raters_see_external_ids: true,
        bradley_terry_prior: 0.5,
        final_method: crate::batch::FinalMethod::Majority,
        route_by: None,
        routing: crate::routing::Routing::Prefer,
        routed_since: None,
        qualification: None,
    }
}

/// Where blackhat answers are checked in `batch`, as shown (or swapped).
fn form(batch: &Batch, swapped: bool) -> Form<'_> {
    Form {
        rubric: blackhat(),
        batch,
        swapped,
    }
}

const WHY: &str = "the loop stops one element early";

/// A complete blackhat submission as shown: A nearly right, B without code, A
/// preferred (2).
fn complete() -> Value {
    json!({
        "a": {"executability": "yes_fully", "instruction_following": "no_issues",
              "correctness": "minor_issues", "correctness_explanation": WHY},
        "b": {"executability": "no_code", "instruction_following": "not_applicable",
              "correctness": "not_applicable"},
        "sxs": 2, "sxs_explanation": "A runs and is nearly right; B has no code.",
        "time_spent_s": 640
    })
}

fn request(body: Value) -> RatingRequest {
    RatingRequest::try_from(body).unwrap()
}

#[test]
fn a_body_is_split_into_answers_time_evidence_and_confirmations() {
    let mut body = complete();
    body["evidence"] = json!(null);
    body["confirmed_warnings"] = json!([]);
    let request = request(body);
    assert_eq!(request.time_spent, Some(json!(640)));
    assert_eq!(request.evidence, Some(Value::Null));
    assert_eq!(request.confirmed_warnings, Some(json!([])));
    let keys: Vec<&str> = request.answers.keys().map(String::as_str).collect();
    assert_eq!(keys, ["a", "b", "sxs", "sxs_explanation"]);
    let refused = RatingRequest::try_from(json!([1])).unwrap_err();
    assert_eq!(refused["answers"], "must be a JSON object");
}

#[test]
fn a_swapped_submission_is_turned_into_the_task_order() {
    let batch = batch();
    let form = form(&batch, true);
    let checked = form.check(&request(complete()), Mode::Submit).unwrap();
    assert_eq!(checked.time_spent, Some(TimeSpent(640)));
    let task = checked.answers.into_map();
    // Shown A was the task's B: its answers move, and the preference mirrors (8 - 2).
    assert_eq!(task["b"]["correctness_explanation"], WHY);
    assert_eq!(task["a"]["executability"], "no_code");
    assert_eq!(task["sxs"], 6);
    assert!(!task.contains_key("time_spent_s"), "the time has a column");
}

#[test]
fn every_broken_field_is_named_at_once() {
    let batch = batch();
    let form = form(&batch, false);
    let mut body = complete();
    body["sxs"] = json!(9);
    body["time_spent_s"] = json!(-5);
    body["confirmed_warnings"] = json!(["no-such-warning", 3]);
    body["evidence"] = json!("{not json");
    let errors = form.check(&request(body), Mode::Submit).unwrap_err();
    let paths: Vec<&str> = errors.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [
            "confirmed_warnings[0]",
            "confirmed_warnings[1]",
            "evidence",
            "sxs",
            "time_spent_s"
        ]
    );
    assert_eq!(
        errors["time_spent_s"],
        format!("must be a whole number of seconds from 0 to {MAX_TIME_SPENT_S}")
    );
    assert!(errors["confirmed_warnings[0]"].contains("is not a warning of this rubric"));
    assert_eq!(
        errors["confirmed_warnings[1]"],
        "must be a warning id, as a string"
    );
}

#[test]
fn time_spent_is_whole_seconds_within_a_week() {
    assert_eq!(TimeSpent::try_from(&json!(0)).unwrap().seconds(), 0);
    let week = TimeSpent::try_from(&json!(MAX_TIME_SPENT_S)).unwrap();
    assert_eq!(i64::from(week.seconds()), MAX_TIME_SPENT_S);
    for bad in [
        json!(-1),
        json!(MAX_TIME_SPENT_S + 1),
        json!(1.5),
        json!("60"),
        json!(null),
    ] {
        assert!(TimeSpent::try_from(&bad).is_err(), "{bad} was taken");
    }
    // Absent or null: no time given, not a refusal.
    let mut none = request(json!({}));
    assert_eq!(none.time().unwrap(), None);
    none.time_spent = Some(Value::Null);
    assert_eq!(none.time().unwrap(), None);
}

#[test]
fn a_submission_meeting_a_warning_waits_for_its_confirmation() {
    let batch = batch();
    let form = form(&batch, false);
    // A preferred while A has major issues and B none.
    let mut body = complete();
    body["a"]["correctness"] = json!("major_issues");
    body["b"] = json!({"executability": "yes_fully", "instruction_following": "no_issues",
                       "correctness": "no_issues"});
    let mut checked = form.check(&request(body.clone()), Mode::Submit).unwrap();
    let unconfirmed = checked.confirm().unwrap_err();
    assert_eq!(unconfirmed[0].id, "prefers-a-despite-major-issues");
    // The same, confirming it: taken, and the rating records it.
    body["confirmed_warnings"] = json!(["prefers-a-despite-major-issues"]);
    let mut checked = form.check(&request(body.clone()), Mode::Submit).unwrap();
    checked.confirm().unwrap();
    let (finish, extras, _) = checked.rated();
    assert!(matches!(finish, Finish::Rated { .. }));
    assert_eq!(
        extras.confirmed_warnings,
        ["prefers-a-despite-major-issues"]
    );
    // A draft is never held to warnings.
    let draft = form.check(&request(body), Mode::Draft).unwrap();
    assert!(draft.warnings.is_empty());
}

#[test]
fn out_of_scope_sets_the_rubrics_answers_and_records_no_warning() {
    let batch = batch();
    let form = form(&batch, false);
    let mut body = json!({"confirmed_warnings": ["prefers-a-despite-major-issues"]});
    body["time_spent_s"] = json!(30);
    let checked = form.check(&request(body), Mode::OutOfScope).unwrap();
    let explanation = scope_explanation("  not a coding prompt at all  ", &batch).unwrap();
    assert_eq!(explanation, "not a coding prompt at all");
    let (finish, extras, time) = checked.out_of_scope(explanation);
    let Finish::OutOfScope { answers, .. } = finish else {
        panic!("not out of scope: {finish:?}");
    };
    assert_eq!(answers.into_map()["a"]["correctness"], "cannot_assess");
    assert!(extras.confirmed_warnings.is_empty());
    assert_eq!(time, Some(TimeSpent(30)));
}

#[test]
fn an_explanation_of_scope_must_be_long_enough_and_not_too_long() {
    let batch = batch();
    let errors = scope_explanation("   ", &batch).unwrap_err();
    assert_eq!(
        errors["explanation"],
        "is required: say why the prompt is out of scope"
    );
    let errors = scope_explanation("too short", &batch).unwrap_err();
    assert_eq!(
        errors["explanation"],
        "must be at least 20 characters (has 9)"
    );
    let long = "x".repeat(MAX_NOTE_CHARS + 1);
    assert!(scope_explanation(&long, &batch).is_err());
}

#[test]
fn a_skip_names_its_reason_note_and_time_together() {
    let (finish, time) = skip(
        blackhat(),
        "too_long",
        Some("  far too long  "),
        Some(&json!(12)),
    )
    .unwrap();
    assert_eq!(
        finish,
        Finish::Skipped {
            reason: "too_long".parse::<SkipReason>().unwrap(),
            note: Some("far too long".into())
        }
    );
    assert_eq!(time, Some(TimeSpent(12)));
    let long = "n".repeat(MAX_NOTE_CHARS + 1);
    let errors = skip(blackhat(), "bored", Some(&long), Some(&json!(-1))).unwrap_err();
    let paths: Vec<&str> = errors.keys().map(String::as_str).collect();
    assert_eq!(paths, ["note", "reason", "time_spent_s"]);
    assert_eq!(
        errors["reason"],
        "unknown reason \"bored\": use unfamiliar, cannot_assess, too_long or other"
    );
    assert!(
        skip(blackhat(), "", None, None).unwrap_err()["reason"].starts_with("is required: use ")
    );
}

#[test]
fn a_skip_takes_the_reasons_its_rubric_lists_and_the_note_one_requires() {
    // Blackhat lists the seed's three reasons and another, which needs a note.
    let values: Vec<&str> = blackhat()
        .skip_options()
        .iter()
        .map(|o| o.value.as_str())
        .collect();
    assert_eq!(values, ["unfamiliar", "cannot_assess", "too_long", "other"]);
    assert!(skip(blackhat(), "cannot_assess", None, None).is_ok());
    let errors = skip(blackhat(), "other", Some("  "), None).unwrap_err();
    assert_eq!(
        errors["note"],
        "is required for the reason \"other\": say why you skip it"
    );
    assert!(skip(blackhat(), "other", Some("The prompt is in Welsh."), None).is_ok());
    // A rubric that lists none offers the three reasons every rubric had before.
    let mut plain = blackhat().clone();
    plain.skip_reasons.clear();
    assert!(
        skip(&plain, "other", None, None).is_ok(),
        "no note required"
    );
    assert_eq!(
        skip(&plain, "cannot_assess", None, None).unwrap_err()["reason"],
        "unknown reason \"cannot_assess\": use unfamiliar, too_long or other"
    );
}

#[test]
fn answers_given_are_laid_over_answers_kept() {
    let kept = ShownAnswers::new(
        json!({"a": {"correctness": "no_issues", "executability": "yes_fully"}, "sxs": 4})
            .as_object()
            .unwrap()
            .clone(),
    );
    let given = request(json!({"a": {"correctness": "major_issues"}, "time_spent_s": 5}));
    let merged = given.over(&kept);
    assert_eq!(
        Value::Object(merged.answers),
        json!({"a": {"correctness": "major_issues", "executability": "yes_fully"}, "sxs": 4})
    );
    assert_eq!(merged.time_spent, Some(json!(5)));
}

#[test]
fn a_revision_reads_its_texts_and_outcome() {
    let body = json!({"outcome": "skipped", "reason": "other", "note": null, "sxs": 3});
    let revision = RevisionRequest::try_from(body).unwrap();
    assert_eq!(revision.outcome(Outcome::Rated).unwrap(), Outcome::Skipped);
    assert_eq!(revision.reason.as_deref(), Some("other"));
    assert_eq!(revision.note, None);
    assert_eq!(revision.rating.answers["sxs"], 3);
    let kept = RevisionRequest::default();
    assert_eq!(
        kept.outcome(Outcome::OutOfScope).unwrap(),
        Outcome::OutOfScope
    );
    let refused = RevisionRequest::try_from(json!({"note": 5})).unwrap_err();
    assert_eq!(refused["note"], "must be a string");
    let unknown = RevisionRequest::try_from(json!({"outcome": "maybe"})).unwrap();
    assert!(unknown.outcome(Outcome::Rated).unwrap_err()["outcome"].contains("\"maybe\""));
    assert!(RevisionRequest::try_from(json!("x")).is_err());
}

#[test]
fn form_fields_become_answers() {
    let questions = vec![Classification {
        key: "kind".into(),
        label: "Kind".into(),
        multiple: true,
        required: false,
        options: vec!["bug".into(), "feature".into()],
    }];
    let pairs: Vec<(String, String)> = [
        ("a.executability", "no"),
        ("a.executability_explanation", "needs a database"),
        ("b.correctness", "no_issues"),
        ("sxs", "3"),
        ("sxs_explanation", "A is closer"),
        ("classifications.kind", "bug"),
        ("classifications.kind", "feature"),
        ("time_spent_s", "75"),
        ("csrf_token", "ignored"),
        ("a.rater", "dropped: not a rubric field"),
        ("confirmed_warnings", "w1"),
        ("confirmed_warnings", "w2"),
        ("evidence", "{}"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let request = RatingRequest::from_form(blackhat(), &questions, &pairs);
    assert_eq!(
        Value::Object(request.answers),
        json!({
            "a": {"executability": "no", "executability_explanation": "needs a database"},
            "b": {"correctness": "no_issues"},
            "sxs": 3, "sxs_explanation": "A is closer",
            "classifications": {"kind": ["bug", "feature"]}
        })
    );
    assert_eq!(request.time_spent, Some(json!(75)));
    assert_eq!(request.confirmed_warnings, Some(json!(["w1", "w2"])));
    assert_eq!(
        request.evidence,
        Some(json!("{}")),
        "JSON text, read when checked"
    );
    let odd = RatingRequest::from_form(blackhat(), &[], &[("sxs".into(), "seven".into())]);
    assert_eq!(
        odd.answers["sxs"], "seven",
        "kept as text so the check names it"
    );
}

#[test]
fn yes_no_answers_and_text_questions_of_a_single_response_rubric() {
    let rubric = by_name("additive-5").unwrap();
    let pairs: Vec<(String, String)> = [
        ("relevant", "true"),
        ("repetitive", "false"),
        ("useful", "maybe"),
        ("justification", "It answers the question."),
        ("score", "5"),
        ("a.relevant", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(
        Value::Object(RatingRequest::from_form(rubric, &[], &pairs).answers),
        json!({
            "relevant": true, "repetitive": false, "useful": "maybe",
            "justification": "It answers the question.", "classifications": {}
        }),
        "no sides, no derived score from the form"
    );
}

#[test]
fn a_forms_ladder_level_stands_for_its_criteria() {
    let rubric = by_name("additive-5").unwrap();
    let answers = |level: &str| {
        let pairs = [("ladder.score", level), ("repetitive", "false")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()));
        RatingRequest::from_form(rubric, &[], &pairs).answers
    };
    assert_eq!(
        Value::Object(answers("3")),
        json!({
            "relevant": true, "substantial": true, "useful": true, "comprehensive": false,
            "expert": false, "repetitive": false, "classifications": {}
        })
    );
    assert!(answers("0")["relevant"] == false && answers("5")["expert"] == true);
    assert!(
        !answers("").contains_key("relevant"),
        "no level picked: no criterion answered"
    );
    for odd in ["6", "-1", "three"] {
        assert_eq!(
            answers(odd)["relevant"],
            odd,
            "kept as sent so the check names it"
        );
    }
}

#[test]
fn a_judges_score_line_stores_what_a_raters_ladder_level_stores() {
    use crate::judge::{parse::parse, template::Format};
    let rubric = by_name("additive-5").unwrap();
    const WHY: &str = "It answers the core of the question, but not all of it.";
    for level in 0..=5 {
        let judged = parse(
            rubric,
            Format::ScoreLine,
            &format!("score: {level}\n{WHY}"),
            false,
            0,
        );
        let pairs = [
            ("ladder.score", level.to_string()),
            ("repetitive", "false".into()),
            ("justification", WHY.into()),
        ]
        .map(|(k, v)| (k.to_owned(), v));
        let form = RatingRequest::from_form(rubric, &[], &pairs);
        let rated =
            rubric::validate(rubric, &[], &Value::Object(form.answers), Mode::Submit, 20).unwrap();
        for key in [
            "relevant",
            "substantial",
            "useful",
            "comprehensive",
            "expert",
            "repetitive",
            "score",
            "justification",
        ] {
            assert_eq!(
                judged.answers.get(key),
                rated.get(key),
                "level {level}: {key}"
            );
        }
        assert_eq!(rated["score"], level);
    }
}

#[test]
fn a_forms_ticked_boxes_are_one_list() {
    let pairs: Vec<(String, String)> = [
        ("a.correctness", "major_issues"),
        ("a.issue_categories", "safety"),
        ("a.issue_categories", "functionality"),
        ("b.issue_categories", "documentation"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let request = RatingRequest::from_form(blackhat(), &[], &pairs);
    assert_eq!(
        request.answers["a"]["issue_categories"],
        json!(["safety", "functionality"])
    );
    assert_eq!(
        request.answers["b"]["issue_categories"],
        json!(["documentation"])
    );
}
