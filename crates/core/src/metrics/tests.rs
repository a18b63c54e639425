//! The metrics against figures worked out by hand and by reference implementations.

use serde_json::{Value, json};

use super::*;
use crate::rubric::by_name;
use bradley_terry::DEFAULT_PRIOR;

fn row(
    task: u128,
    rater: &str,
    outcome: &str,
    status: &str,
    answers: Value,
    swapped: bool,
) -> RatingFacts {
    RatingFacts {
        id: Uuid::now_v7(),
        task_id: Uuid::from_u128(task),
        rater: rater.into(),
        outcome: outcome.parse().unwrap(),
        status: status.parse().unwrap(),
        answers: answers.to_string(),
        swapped,
        time_spent_s: 60,
        model_a: Some("m1".into()),
        model_b: Some("m2".into()),
        len_a: 100,
        len_b: 200,
        skip_reason: None,
        counted: true,
    }
}

fn scored(s: i64) -> Value {
    json!({"a": {"correctness": "no_issues", "executability": "yes_fully"},
           "b": {"correctness": "major_issues", "executability": "no"}, "sxs": s})
}

#[test]
fn only_submitted_or_accepted_rated_ratings_count() {
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
    acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
    acc.add(&row(1, "r2", "rated", "accepted", scored(2), false));
    for (outcome, status) in [
        ("rated", "draft"),
        ("skipped", "submitted"),
        ("out_of_scope", "submitted"),
        ("rated", "rejected"),
        ("rated", "returned"),
        ("out_of_scope", "accepted"),
    ] {
        acc.add(&row(2, "r3", outcome, status, scored(7), false));
    }
    let m = acc.finish(2, DEFAULT_PRIOR);
    let c = &m.counts;
    assert_eq!((c.ratings, c.included, c.excluded), (8, 2, 6));
    assert_eq!(
        (c.drafts, c.skipped, c.out_of_scope, c.rejected, c.returned),
        (1, 1, 2, 1, 1)
    );
    assert_eq!(
        c.drafts + c.skipped + c.out_of_scope + c.rejected + c.returned,
        c.excluded
    );
    assert_eq!(m.preferences["sxs"].n, 2, "no excluded score leaks in");
    assert_eq!(m.preferences["sxs"].distribution["7"], 0);
    assert_eq!(m.fields["a.correctness"]["no_issues"], 2);
}

#[test]
fn position_bias_compares_canonical_means_and_the_shown_lean() {
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
    // Every rater prefers what is shown first (shown 2): canonical 2 or 6.
    acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
    acc.add(&row(2, "r1", "rated", "submitted", scored(6), true));
    let m = acc.finish(2, DEFAULT_PRIOR);
    let Some(PositionBias::Scale {
        not_swapped,
        swapped,
        shown_mean,
    }) = &m.position_bias
    else {
        panic!("a scale's lean: {:?}", m.position_bias)
    };
    assert_eq!(not_swapped.mean, Some(2.0));
    assert_eq!(swapped.mean, Some(6.0));
    assert_eq!(shown_mean.unwrap().value, 2.0);
    assert_eq!(m.preferences["sxs"].mean.unwrap().value, 4.0);
}

#[test]
fn unscaled_answers_are_missing_for_agreement() {
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
    let na = json!({"a": {"correctness": "cannot_assess"}, "sxs": 4});
    acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
    acc.add(&row(1, "r2", "rated", "submitted", na, false));
    let m = acc.finish(1, DEFAULT_PRIOR);
    assert_eq!(
        m.agreement["a.correctness"].units, 0,
        "cannot_assess is not on the scale"
    );
    assert_eq!(m.agreement["sxs"].units, 1);
    assert_eq!(
        m.fields["a.correctness"]["cannot_assess"], 1,
        "but it is in the distribution"
    );
}

#[test]
fn raters_agreement_with_others_and_model_pairs() {
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
    acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
    acc.add(&row(1, "r2", "rated", "submitted", scored(2), false));
    acc.add(&row(1, "r3", "rated", "submitted", scored(5), false));
    acc.add(&row(2, "r3", "skipped", "submitted", json!({}), false));
    let m = acc.finish(2, DEFAULT_PRIOR);
    let r1 = m.raters.iter().find(|r| r.rater == "r1").unwrap();
    assert_eq!(
        (r1.pairs_with_others, r1.agreement_with_others),
        (2, Some(0.5))
    );
    let r3 = m.raters.iter().find(|r| r.rater == "r3").unwrap();
    assert_eq!(
        (r3.agreement_with_others, r3.skip_rate),
        (Some(0.0), Some(0.5))
    );
    let models = m.models.unwrap();
    assert_eq!((models.pairs[0].a_wins, models.pairs[0].b_wins), (2, 1));
    assert!(models.ranking.is_none(), "two models: no ranking");
}

#[test]
fn a_pair_of_models_is_one_row_whichever_way_round() {
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
    let with = |task: u128, a: &str, b: &str, score: i64| RatingFacts {
        model_a: Some(a.into()),
        model_b: Some(b.into()),
        ..row(task, "r1", "rated", "submitted", scored(score), false)
    };
    // gpt as A, claude as B: gpt better twice; claude as A: claude better once, a tie.
    acc.add(&with(1, "gpt-x", "claude-y", 2));
    acc.add(&with(2, "gpt-x", "claude-y", 1));
    acc.add(&with(3, "claude-y", "gpt-x", 3));
    acc.add(&with(4, "claude-y", "gpt-x", 4));
    let pairs = acc.finish(4, DEFAULT_PRIOR).models.unwrap().pairs;
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    let p = &pairs[0];
    assert_eq!(
        (p.model_a.as_str(), p.model_b.as_str()),
        ("claude-y", "gpt-x")
    );
    assert_eq!((p.n, p.a_wins, p.ties, p.b_wins), (4, 1, 1, 2));
    // Read with claude as A: 8-2, 8-1, 3 and 4.
    let mean = p.mean.as_ref().unwrap();
    assert!((mean.value - 5.0).abs() < 1e-9);
    assert!(mean.low < mean.value && mean.value < mean.high);
    let wins = p.b_win_share.as_ref().unwrap();
    assert!((wins.value - 0.5).abs() < 1e-9 && wins.low < 0.5 && wins.high > 0.5);
}

#[test]
fn classifications_have_their_distribution() {
    let questions = vec![
        crate::rubric::Classification {
            key: "language".into(),
            label: "Language".into(),
            multiple: false,
            required: true,
            options: vec!["python".into(), "rust".into()],
        },
        crate::rubric::Classification {
            key: "kind".into(),
            label: "Kind".into(),
            multiple: true,
            required: false,
            options: vec!["bug".into(), "feature".into(), "docs".into()],
        },
    ];
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &questions);
    let classified = |language: &str, kinds: Value| {
        let mut answers = scored(3);
        answers["classifications"] = json!({"language": language, "kind": kinds});
        answers
    };
    acc.add(&row(
        1,
        "r1",
        "rated",
        "submitted",
        classified("rust", json!(["bug", "docs"])),
        false,
    ));
    acc.add(&row(
        2,
        "r1",
        "rated",
        "submitted",
        classified("rust", json!(["bug"])),
        false,
    ));
    acc.add(&row(
        3,
        "r1",
        "rated",
        "submitted",
        classified("python", json!([])),
        false,
    ));
    // Left out of metrics, so out of the distribution too.
    acc.add(&row(
        4,
        "r1",
        "rated",
        "draft",
        classified("python", json!(["feature"])),
        false,
    ));
    let fields = acc.finish(4, DEFAULT_PRIOR).fields;
    assert_eq!(
        fields["classifications.language"],
        BTreeMap::from([("python".into(), 1), ("rust".into(), 2)])
    );
    assert_eq!(
        fields["classifications.kind"],
        BTreeMap::from([("bug".into(), 2), ("docs".into(), 1)])
    );
}

/// A batch of blackhat ratings as varied as a real one: three raters, overlap on most
/// tasks, swaps, four models, every option, classifications, drafts and skips.
fn varied_blackhat_batch() -> Vec<RatingFacts> {
    let mut seed: u64 = 20261125;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let executability = ["yes_fully", "yes_partially", "no", "no_code"];
    let following = [
        "no_issues",
        "minor_issues",
        "major_issues",
        "not_applicable",
    ];
    let correctness = [
        "no_issues",
        "minor_issues",
        "major_issues",
        "cannot_assess",
        "not_applicable",
    ];
    let models = ["alpha", "beta", "gamma", "delta"];
    let mut rows = Vec::new();
    for task in 0..60u128 {
        let (ma, mb) = (
            models[(task % 4) as usize],
            models[((task / 4 + 1 + task) % 4) as usize],
        );
        let mb = if ma == mb {
            models[((task + 1) % 4) as usize]
        } else {
            mb
        };
        for rater in ["r1", "r2", "r3"] {
            if next(5) == 0 {
                continue;
            }
            let side = |next: &mut dyn FnMut(u64) -> u64| {
                json!({"executability": executability[next(4) as usize],
                       "instruction_following": following[next(4) as usize],
                       "correctness": correctness[next(5) as usize]})
            };
            let a = side(&mut next);
            let b = side(&mut next);
            let language = ["python", "rust"][next(2) as usize];
            let answers = json!({"a": a, "b": b, "sxs": 1 + next(7),
                "classifications": {"language": language}});
            let (outcome, status) = match next(12) {
                0 => ("skipped", "submitted"),
                1 => ("out_of_scope", "submitted"),
                2 => ("rated", "draft"),
                3 => ("rated", "returned"),
                4 => ("rated", "rejected"),
                5 | 6 => ("rated", "accepted"),
                _ => ("rated", "submitted"),
            };
            let outcome: Outcome = outcome.parse().unwrap();
            rows.push(RatingFacts {
                id: Uuid::now_v7(),
                task_id: Uuid::from_u128(task + 1),
                rater: rater.into(),
                outcome,
                status: status.parse().unwrap(),
                answers: answers.to_string(),
                swapped: next(2) == 1,
                time_spent_s: 30 + next(900) as i32,
                model_a: Some(ma.into()),
                model_b: Some(mb.into()),
                // From the task alone: the seeded answers above stay as they were.
                len_a: 200 + (task * 37 % 300) as i64,
                len_b: 200 + (task * 53 % 300) as i64,
                // From the row's place, so the seeded answers stay as they were.
                skip_reason: (outcome == Outcome::Skipped).then(|| {
                    ["unfamiliar", "cannot_assess", "too_long", "other"][rows.len() % 4]
                        .parse()
                        .unwrap()
                }),
                counted: true,
            });
        }
    }
    rows
}

fn language() -> Vec<crate::rubric::Classification> {
    vec![crate::rubric::Classification {
        key: "language".into(),
        label: "Language".into(),
        multiple: false,
        required: true,
        options: vec!["python".into(), "rust".into()],
    }]
}

/// Folds `rows` in the way a batch's ratings reach an instance that keeps them over
/// time: in a shuffled order, most of them first in an earlier state (a draft with
/// other answers, a submission later returned or rejected, one held out of the
/// figures), then again as they are now in another order, with ratings that come and
/// go again (added, then taken out or leaving the figures). Checking the figures at
/// every step costs nothing to the result.
fn fold_over_time(acc: &mut Accumulator, rows: &[RatingFacts]) {
    let mut seed = 11u64;
    let mut next = move |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % n as u64) as usize
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let shuffle = |order: &mut Vec<usize>, next: &mut dyn FnMut(usize) -> usize| {
        for i in (1..order.len()).rev() {
            order.swap(i, next(i + 1));
        }
    };
    shuffle(&mut order, &mut next);
    let mut passing = Vec::new();
    for (step, &i) in order.iter().enumerate() {
        let now = &rows[i];
        let mut before = now.clone();
        match next(5) {
            0 => before.status = Status::Draft,
            1 => before.status = Status::Returned,
            2 => before.counted = false,
            3 => {
                before.outcome = Outcome::Rated;
                before.status = Status::Submitted;
                before.time_spent_s += 17;
            }
            _ => continue,
        }
        // Other answers: every question and the classification differ.
        before.answers = varied_answers(&mut next).to_string();
        acc.add(&before);
        if step % 7 == 0 {
            // A rating that comes and goes: a second rater's on the same task.
            let extra = RatingFacts {
                id: Uuid::from_u128(1_000_000 + step as u128),
                rater: format!("passing{}", step % 3),
                answers: varied_answers(&mut next).to_string(),
                ..now.clone()
            };
            acc.add(&extra);
            passing.push(extra);
        }
        let _ = acc.finish(60, DEFAULT_PRIOR);
    }
    shuffle(&mut order, &mut next);
    for (step, &i) in order.iter().enumerate() {
        acc.add(&rows[i]);
        if let Some(extra) = passing.pop() {
            if step % 2 == 0 {
                acc.remove(extra.id);
            } else {
                acc.add(&RatingFacts {
                    skip_reason: None,
                    counted: false,
                    ..extra
                });
            }
        }
        let _ = acc.finish(60, DEFAULT_PRIOR);
    }
    for extra in passing {
        acc.remove(extra.id);
    }
    assert_eq!(acc.len(), rows.len());
}

/// Blackhat answers drawn at random.
fn varied_answers(next: &mut dyn FnMut(usize) -> usize) -> Value {
    let issues = ["no_issues", "minor_issues", "major_issues"];
    let mut side = || {
        let executability = ["yes_fully", "yes_partially", "no", "no_code"][next(4)];
        let (following, correctness) = (issues[next(3)], issues[next(3)]);
        json!({"executability": executability, "instruction_following": following,
               "correctness": correctness})
    };
    let (a, b) = (side(), side());
    let language = ["python", "rust"][next(2)];
    json!({"a": a, "b": b, "sxs": 1 + next(7), "classifications": {"language": language}})
}

/// The figures as JSON without those the fixture predates.
fn fixture_figures(metrics: Metrics) -> Value {
    let mut got = serde_json::to_value(metrics).unwrap();
    // The bias figures came after the fixture (they are tested in `bias` and
    // `tests/api/bias.rs`); every figure that was there must be unchanged.
    assert!(got["bias"]["raters"].is_array());
    got.as_object_mut().unwrap().remove("bias");
    // So did the gold figures (tests in `gold` and `tests/api/gold.rs`); the
    // accumulator leaves them empty for the page to fill in.
    assert_eq!(got["gold"]["raters"], serde_json::json!([]));
    got.as_object_mut().unwrap().remove("gold");
    // And what adaptive overlap asked (tests in `tests/api/overlap.rs`), which the
    // metrics API reads from the tasks.
    assert_eq!(got["overlap"]["tasks"], 0);
    got.as_object_mut().unwrap().remove("overlap");
    // And the issue categories (tests in
    // `issue_categories_are_counted_per_response_per_model_and_pooled` and
    // `tests/api/seed_rules.rs`): the fixture's answers pick none.
    assert_eq!(got["choices"]["issue_categories"]["answered"], 0);
    got.as_object_mut().unwrap().remove("choices");
    got
}

/// Whether two figures are the same: every key, every count and every text equal,
/// and every fraction equal to 12 significant digits. (A mean's interval once summed
/// the squared deviations in the order ratings came in, so its last digit depended on
/// that order; it is now summed in whole numbers.)
fn same_figures(got: &Value, want: &Value, at: &str) {
    match (got, want) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(x), keys(y), "{at}");
            for (k, v) in x {
                same_figures(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                same_figures(u, v, &format!("{at}[{i}]"));
            }
        }
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                "{at}: {x} against {y}"
            );
        }
        _ => assert_eq!(got, want, "{at}"),
    }
}

/// The blackhat metrics of a varied batch, figure for figure, as they were before
/// rubrics became documents (`tests/fixtures/metrics/blackhat.json`; written anew
/// only with `VERDICT_WRITE_METRICS_FIXTURE=1`, after a change meant to alter them),
/// whether the ratings are folded in once each or changed over time.
#[test]
fn blackhat_metrics_are_unchanged() {
    let rows = varied_blackhat_batch();
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
    for row in &rows {
        acc.add(row);
    }
    let once = acc.finish(60, DEFAULT_PRIOR);
    let got = fixture_figures(once.clone());
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/metrics/blackhat.json"
    );
    if std::env::var_os("VERDICT_WRITE_METRICS_FIXTURE").is_some() {
        std::fs::write(path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let mut expected: Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // Raters were listed in the order their first rating came in; they are listed by
    // name since ratings are folded in any order (and changed in place).
    expected["raters"]
        .as_array_mut()
        .unwrap()
        .sort_by(|x, y| x["rater"].as_str().cmp(&y["rater"].as_str()));
    // Skips are counted by reason since the rubric lists its reasons (issue 28): the
    // fixture predates that, so the count comes from the rows themselves.
    let mut by_reason = std::collections::BTreeMap::<String, u64>::new();
    for row in rows.iter().filter(|r| r.outcome == Outcome::Skipped) {
        *by_reason
            .entry(row.skip_reason.as_ref().unwrap().as_str().to_owned())
            .or_default() += 1;
    }
    assert_eq!(by_reason.len(), 4, "every reason is in the batch");
    expected["counts"]["skip_reasons"] = json!(by_reason);
    // The ranking names its prior since a batch can set it (issue 28): the fixture's
    // ranking was fitted with the default one, before it was named.
    let ranking = expected["models"]["ranking"].take();
    assert!(ranking.as_array().is_some_and(|r| r.len() > 2), "{ranking}");
    expected["models"]["ranking"] = json!({"prior": DEFAULT_PRIOR, "models": ranking});
    same_figures(&got, &expected, "metrics");

    // Changed over time, the same to the last digit, bias figures included.
    let mut over_time = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
    fold_over_time(&mut over_time, &rows);
    let changed = serde_json::to_value(over_time.finish(60, DEFAULT_PRIOR)).unwrap();
    assert_eq!(changed, serde_json::to_value(&once).unwrap());
    same_figures(
        &fixture_figures(over_time.finish(60, DEFAULT_PRIOR)),
        &expected,
        "over time",
    );
}

/// Taking out every rating leaves nothing behind: the figures of no ratings.
#[test]
fn a_rating_taken_out_leaves_nothing_behind() {
    let rows = varied_blackhat_batch();
    let empty = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
    fold_over_time(&mut acc, &rows);
    for row in &rows {
        acc.remove(row.id);
    }
    assert!(acc.is_empty());
    assert_eq!(
        serde_json::to_value(acc.finish(60, DEFAULT_PRIOR)).unwrap(),
        serde_json::to_value(empty.finish(60, DEFAULT_PRIOR)).unwrap()
    );
}

/// The ratings of `tests/fixtures/krippendorff/rubrics.json` for `rubric`, through the
/// metrics, give the alpha the `krippendorff` package gives (1e-9).
fn agreement_matches_the_reference(rubric: &str) {
    let text = include_str!("../../../../tests/fixtures/krippendorff/rubrics.json");
    let cases: Value = serde_json::from_str(text).unwrap();
    let case = &cases[rubric];
    let rows: Vec<RatingFacts> = case["ratings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| RatingFacts {
            id: Uuid::now_v7(),
            task_id: Uuid::from_u128(r["task"].as_u64().unwrap().into()),
            rater: r["rater"].as_str().unwrap().into(),
            outcome: Outcome::Rated,
            status: Status::Submitted,
            answers: r["answers"].to_string(),
            swapped: false,
            time_spent_s: 60,
            model_a: None,
            model_b: None,
            len_a: 0,
            len_b: 0,
            skip_reason: None,
            counted: true,
        })
        .collect();
    let mut once = Accumulator::new(by_name(rubric).unwrap(), 1, &[]);
    for row in &rows {
        once.add(row);
    }
    // The same ratings changed over time: each first given another rater's answers
    // to another task, or held as a draft, then given its own.
    let mut over_time = Accumulator::new(by_name(rubric).unwrap(), 1, &[]);
    for (i, row) in rows.iter().enumerate() {
        let other = &rows[(i * 7 + 3) % rows.len()];
        over_time.add(&RatingFacts {
            answers: other.answers.clone(),
            status: if i % 3 == 0 {
                Status::Draft
            } else {
                Status::Submitted
            },
            ..row.clone()
        });
    }
    for row in rows.iter().rev() {
        over_time.add(row);
    }
    let expected = case["alpha"].as_object().unwrap();
    assert!(expected.len() >= 6, "{rubric}: {expected:?}");
    for m in [
        once.finish(40, DEFAULT_PRIOR),
        over_time.finish(40, DEFAULT_PRIOR),
    ] {
        for (key, alpha) in expected {
            let got = m.agreement[key].krippendorff_alpha.unwrap();
            let want = alpha.as_f64().unwrap();
            assert!((got - want).abs() < 1e-9, "{rubric} {key}: {got} vs {want}");
        }
    }
}

#[test]
fn additive_agreement_matches_the_krippendorff_package() {
    agreement_matches_the_reference("additive-5");
}

#[test]
fn aspect_agreement_matches_the_krippendorff_package() {
    agreement_matches_the_reference("pairwise-aspects");
}

fn aspects(choices: [&str; 6]) -> Value {
    json!({"helpfulness": choices[0], "clarity": choices[1], "factuality": choices[2],
           "depth": choices[3], "engagement": choices[4], "safety": choices[5],
           "rationale": "why"})
}

#[test]
fn each_aspect_has_shares_a_lean_and_models_and_all_are_pooled() {
    let mut acc = Accumulator::new(by_name("pairwise-aspects").unwrap(), 2, &[]);
    let with = |task: u128, a: &str, b: &str, answers: Value, swapped: bool| RatingFacts {
        model_a: Some(a.into()),
        model_b: Some(b.into()),
        ..row(task, "r1", "rated", "submitted", answers, swapped)
    };
    // Helpfulness always goes to whatever was shown first; safety is always a tie.
    let shown_first = |swapped: bool| if swapped { "b" } else { "a" };
    for (task, (ma, mb, swapped)) in [
        ("x", "y", false),
        ("x", "y", true),
        ("y", "z", false),
        ("z", "x", true),
        ("x", "z", false),
    ]
    .into_iter()
    .enumerate()
    {
        let first = shown_first(swapped);
        let answers = aspects([first, "a", "b", "tie", "a", "tie"]);
        acc.add(&with(task as u128 + 1, ma, mb, answers, swapped));
    }
    let m = acc.finish(5, DEFAULT_PRIOR);
    assert_eq!(m.rubric.version, 2);
    let help = &m.preferences["helpfulness"];
    assert_eq!((help.n, help.mean), (5, None));
    assert_eq!(
        help.distribution,
        BTreeMap::from([("a".into(), 3), ("b".into(), 2)])
    );
    assert!((help.a_wins.unwrap().value - 0.6).abs() < 1e-12);
    let Some(PositionBias::Shares {
        decisive,
        shown_first,
    }) = &help.position_bias
    else {
        panic!("{:?}", help.position_bias)
    };
    assert_eq!(
        (*decisive, shown_first.unwrap().value),
        (5, 1.0),
        "always the first shown"
    );
    let Some(PositionBias::Shares { decisive, .. }) = &m.preferences["safety"].position_bias else {
        panic!()
    };
    assert_eq!(*decisive, 0, "ties are not decisive");
    let clarity = m.preferences["clarity"].models.as_ref().unwrap();
    assert!(
        clarity.ranking.is_some(),
        "three models: a ranking per aspect"
    );
    // Clarity always favours the task's A: read with the first model by name as A,
    // z-x (z was A) counts as a win for z over x, i.e. a B win in the x-z row.
    let xz = clarity
        .pairs
        .iter()
        .find(|p| p.model_a == "x" && p.model_b == "z")
        .unwrap();
    assert_eq!((xz.a_wins, xz.ties, xz.b_wins), (1, 0, 1));
    let pooled = m.models.as_ref().unwrap();
    let xy = pooled
        .pairs
        .iter()
        .find(|p| p.model_a == "x" && p.model_b == "y")
        .unwrap();
    assert_eq!(xy.n, 12, "two tasks, six aspects");
    assert!(xy.mean.is_none());
    assert!(pooled.ranking.is_some(), "and an overall ranking");
    let Some(PositionBias::Shares { decisive, .. }) = &m.position_bias else {
        panic!()
    };
    // Per task: helpfulness, clarity, factuality and engagement choose a side.
    assert_eq!(*decisive, 20);
    assert!(m.scores.is_empty() && m.yes_shares.is_empty());
    let json = serde_json::to_value(&m).unwrap();
    assert!(
        json["helpfulness"]["models"]["pairs"].is_array(),
        "each aspect under its key"
    );
    assert!(json.get("sxs").is_none());
}

#[test]
fn the_additive_score_has_its_mean_per_model_and_yes_shares() {
    let mut acc = Accumulator::new(by_name("additive-5").unwrap(), 1, &[]);
    let scored = |task: u128, rater: &str, model: &str, met: usize, repetitive: bool| {
        let mut answers = json!({"justification": "why", "repetitive": repetitive});
        for (i, key) in [
            "relevant",
            "substantial",
            "useful",
            "comprehensive",
            "expert",
        ]
        .iter()
        .enumerate()
        {
            answers[*key] = json!(i < met);
        }
        answers["score"] = json!(if repetitive { 0 } else { met });
        RatingFacts {
            model_a: Some(model.into()),
            model_b: None,
            ..row(task, rater, "rated", "submitted", answers, false)
        }
    };
    acc.add(&scored(1, "r1", "small", 2, false));
    acc.add(&scored(1, "r2", "small", 2, false));
    acc.add(&scored(2, "r1", "large", 5, false));
    acc.add(&scored(2, "r2", "large", 4, false));
    acc.add(&scored(3, "r1", "small", 3, true));
    let m = acc.finish(3, DEFAULT_PRIOR);
    assert!(m.preferences.is_empty() && m.position_bias.is_none() && m.models.is_none());
    let score = &m.scores["score"];
    assert_eq!(score.n, 5);
    assert!((score.mean.unwrap().value - 13.0 / 5.0).abs() < 1e-12);
    assert_eq!(score.distribution.len(), 6, "every value from 0 to 5");
    assert_eq!((score.distribution["0"], score.distribution["2"]), (1, 2));
    let ranks: Vec<(usize, &str, u64)> = score
        .models
        .iter()
        .map(|m| (m.rank, m.model.as_str(), m.n))
        .collect();
    assert_eq!(ranks, [(1, "large", 2), (2, "small", 3)]);
    assert!((score.models[0].mean.unwrap().value - 4.5).abs() < 1e-12);
    assert!((m.yes_shares["relevant"].value - 1.0).abs() < 1e-12);
    assert!((m.yes_shares["repetitive"].value - 0.2).abs() < 1e-12);
    assert_eq!(m.agreement["score"].level, agreement::Level::Interval);
    assert_eq!(
        m.agreement["score:ordinal"].level,
        agreement::Level::Ordinal
    );
    assert_eq!(m.agreement["relevant"].level, agreement::Level::Nominal);
    let r1 = m.raters.iter().find(|r| r.rater == "r1").unwrap();
    assert_eq!(
        (r1.pairs_with_others, r1.agreement_with_others),
        (2, Some(0.5)),
        "compared on the score"
    );
}

/// Blackhat answers with each response's correctness and issue categories.
fn kinds(a: (&str, Value), b: (&str, Value)) -> Value {
    json!({"a": {"correctness": a.0, "issue_categories": a.1},
           "b": {"correctness": b.0, "issue_categories": b.1}, "sxs": 4})
}

#[test]
fn issue_categories_are_counted_per_response_per_model_and_pooled() {
    let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
    let none = Value::Null;
    acc.add(&row(
        1,
        "r1",
        "rated",
        "submitted",
        kinds(
            ("minor_issues", json!(["functionality", "safety"])),
            ("no_issues", none.clone()),
        ),
        false,
    ));
    acc.add(&row(
        2,
        "r1",
        "rated",
        "submitted",
        kinds(
            ("major_issues", json!(["functionality"])),
            ("minor_issues", none.clone()),
        ),
        true,
    ));
    // Not counted: a draft, and a skip.
    acc.add(&row(
        3,
        "r1",
        "rated",
        "draft",
        kinds(
            ("major_issues", json!(["safety"])),
            ("no_issues", none.clone()),
        ),
        false,
    ));
    let late = row(
        4,
        "r2",
        "rated",
        "submitted",
        kinds(
            ("no_issues", none.clone()),
            ("major_issues", json!(["performance", "documentation"])),
        ),
        false,
    );
    acc.add(&late);
    let m = acc.finish(4, DEFAULT_PRIOR);
    let of = |path: &str| {
        let c = &m.choices[path].counts;
        let order = ["functionality", "safety", "performance", "documentation"];
        (c.asked, c.answered, order.map(|o| c.options[o]))
    };
    assert_eq!(of("a.issue_categories"), (2, 2, [2, 1, 0, 0]));
    assert_eq!(of("b.issue_categories"), (2, 1, [0, 0, 1, 1]));
    assert_eq!(of("issue_categories"), (4, 3, [2, 1, 1, 1]));
    let pooled = &m.choices["issue_categories"];
    assert_eq!(pooled.models["m1"].asked, 2);
    assert_eq!(pooled.models["m1"].options["functionality"], 2);
    assert_eq!(pooled.models["m2"].asked, 2);
    assert_eq!(pooled.models["m2"].options["performance"], 1);
    let safety = &m.choices["a.issue_categories"].counts.shares["safety"];
    assert!((safety.value - 0.5).abs() < 1e-12);
    assert_eq!(
        m.fields["a.issue_categories"],
        BTreeMap::from([("functionality".into(), 2), ("safety".into(), 1)])
    );

    // Taken out again, exactly.
    acc.remove(late.id);
    let m = acc.finish(4, DEFAULT_PRIOR);
    let b = &m.choices["b.issue_categories"];
    assert_eq!((b.counts.asked, b.counts.answered), (1, 0));
    assert_eq!((b.models["m2"].asked, b.models["m2"].answered), (1, 0));
    assert_eq!(b.counts.options["performance"], 0);
}

/// The aggregation read off the folded ratings' codes gives the figures the votes
/// gathered from the same ratings' answers give (the aggregated export's path), however
/// the ratings were folded in.
#[test]
fn the_aggregation_from_codes_matches_the_one_from_answers() {
    let rubric = by_name("blackhat").unwrap();
    let rows = varied_blackhat_batch();
    let mut acc = Accumulator::new(rubric, 1, &language());
    fold_over_time(&mut acc, &rows);
    let mut gathered = aggregate::Gathered::new(rubric);
    for row in rows
        .iter()
        .filter(|r| crate::lifecycle::counts_in_metrics(r.outcome, r.status))
    {
        let answers: crate::rubric::Answers = serde_json::from_str(&row.answers).unwrap();
        gathered.add(&row.task_id.to_string(), &row.rater, &answers);
    }
    let want = aggregate::summarise(&gathered);
    let got = acc.aggregation(rubric);
    // Folded in file order rather than over time: the same to the last bit.
    let mut plain = Accumulator::new(rubric, 1, &language());
    for row in &rows {
        plain.add(row);
    }
    assert_eq!(
        serde_json::to_string(&plain.aggregation(rubric)).unwrap(),
        serde_json::to_string(&got).unwrap(),
        "the order ratings were folded in changes nothing"
    );
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert_eq!(want.len(), 7, "six questions of each response and sxs");
    for (path, want) in &want {
        let got = &got[path];
        assert!(want.tasks > 40, "{path}: {} tasks", want.tasks);
        assert_eq!(got.tasks, want.tasks, "{path}");
        let close = |a: Option<f64>, b: Option<f64>, what: &str| {
            let (a, b) = (a.unwrap(), b.unwrap());
            assert!((a - b).abs() < 1e-9, "{path} {what}: {a} against {b}");
        };
        close(got.differ, want.differ, "differ");
        close(
            got.majority_confidence,
            want.majority_confidence,
            "majority",
        );
        close(
            got.dawid_skene_confidence,
            want.dawid_skene_confidence,
            "dawid_skene",
        );
        assert_eq!(
            got.raters.keys().collect::<Vec<_>>(),
            want.raters.keys().collect::<Vec<_>>(),
            "{path}"
        );
        for (rater, accuracy) in &want.raters {
            close(Some(got.raters[rater]), Some(*accuracy), rater);
        }
    }
}
