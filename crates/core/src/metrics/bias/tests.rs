//! Tests of `bias`.

use super::*;

/// `n` answers at `x`, `b` of them preferring B.
fn group(x: f64, n: usize, b: usize) -> Vec<(f64, bool)> {
    (0..n).map(|i| (x, i < b)).collect()
}

fn close(x: f64, y: f64) -> bool {
    (x - y).abs() < 1e-9
}

fn logistic(points: &[(f64, bool)]) -> Option<Fit> {
    super::logistic(&Points::of(points))
}

fn length_controlled(points: &[(f64, bool)]) -> LengthControlled {
    super::length_controlled(&Points::of(points))
}

/// With x only -1 or +1 the model fits each group's share exactly, so the
/// maximum-likelihood coefficients come from the two logits: at x = -1, 2 of 8
/// prefer B (logit ln(2/6) = -ln 3); at x = +1, 9 of 12 do (logit ln(9/3) = ln 3).
/// b0 = (ln 3 - ln 3) / 2 = 0, b1 = (ln 3 + ln 3) / 2 = ln 3. Each logit's variance
/// is 1 / (n p (1 - p)): 1 / (8 · 1/4 · 3/4) = 2/3 and 1 / (12 · 3/4 · 1/4) = 4/9;
/// both coefficients' variance is their sum over 4 = (2/3 + 4/9) / 4 = 5/18.
#[test]
fn a_binary_feature_gives_the_two_groups_logits() {
    let mut points = group(-1.0, 8, 2);
    points.extend(group(1.0, 12, 9));
    let fit = logistic(&points).expect("a fit");
    assert!(close(fit.b0, 0.0), "{fit:?}");
    assert!(close(fit.b1, 3f64.ln()), "{fit:?}");
    let se = (5.0f64 / 18.0).sqrt();
    assert!(close(fit.se0, se) && close(fit.se1, se), "{fit:?}");

    // Off centre: at x = -1, 1 of 5; at x = +1, 4 of 5 and 3 of 5 pooled to 7 of 10.
    // logit(1/5) = -ln 4, logit(7/10) = ln(7/3).
    let mut points = group(-1.0, 5, 1);
    points.extend(group(1.0, 10, 7));
    let fit = logistic(&points).unwrap();
    let (low, high) = (-(4f64.ln()), (7.0f64 / 3.0).ln());
    assert!(close(fit.b0, (high + low) / 2.0), "{fit:?}");
    assert!(close(fit.b1, (high - low) / 2.0), "{fit:?}");
    let var: f64 = (1.0 / (5.0 * 0.2 * 0.8) + 1.0 / (10.0 * 0.7 * 0.3)) / 4.0;
    assert!(close(fit.se0, var.sqrt()) && close(fit.se1, var.sqrt()));

    let lc = length_controlled(&points);
    assert_eq!(lc.n, 15);
    assert!(close(lc.prefers_b.unwrap().value, 8.0 / 15.0));
    let share = lc.share.unwrap();
    assert!(close(share.value, sigmoid((high + low) / 2.0)));
    assert!(close(
        share.low,
        sigmoid((high + low) / 2.0 - Z95 * var.sqrt())
    ));
    let coefficient = lc.length_coefficient.unwrap();
    assert!(close(
        coefficient.high,
        (high - low) / 2.0 + Z95 * var.sqrt()
    ));
}

#[test]
fn separated_answers_have_no_estimate() {
    // Every longer B preferred, every shorter one not: b1 would run to infinity.
    let mut points = group(-0.5, 6, 0);
    points.extend(group(0.5, 6, 6));
    assert_eq!(logistic(&points), None);
    let lc = length_controlled(&points);
    assert_eq!((lc.share, lc.length_coefficient), (None, None));
    assert!(
        close(lc.prefers_b.unwrap().value, 0.5),
        "the raw share stays"
    );
    let json = serde_json::to_string(&lc).unwrap();
    assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
    // Touching at one length (quasi-separation) is no better.
    let mut touching = group(-0.5, 5, 0);
    touching.extend([(0.0, false), (0.0, true)]);
    touching.extend(group(0.5, 5, 5));
    assert_eq!(logistic(&touching), None);
    // All of one kind, and one length for all.
    assert_eq!(logistic(&group(0.3, 12, 12)), None);
    assert_eq!(logistic(&group(0.0, 12, 6)), None);
}

#[test]
fn few_answers_have_no_fit_and_no_share() {
    let mut points = group(-1.0, 4, 1);
    points.extend(group(1.0, 4, 3));
    let lc = length_controlled(&points);
    assert_eq!(lc.n, 8);
    assert!(lc.prefers_b.is_some(), "8 answers are enough for a share");
    assert_eq!(lc.share, None, "but not for a fit");
    let lc = length_controlled(&group(0.5, 4, 2));
    assert_eq!(lc.prefers_b, None);
}

#[test]
fn a_fit_recovers_the_coefficients_it_was_drawn_from() {
    // Deterministic draws from b0 = 0.4, b1 = -1.5 over x in (-1, 1).
    let mut seed: u64 = 7;
    let mut uniform = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let points: Vec<(f64, bool)> = (0..20000)
        .map(|_| {
            let x = 2.0 * uniform() - 1.0;
            (x, uniform() < sigmoid(0.4 - 1.5 * x))
        })
        .collect();
    let fit = logistic(&points).unwrap();
    assert!((fit.b0 - 0.4).abs() < 4.0 * fit.se0, "{fit:?}");
    assert!((fit.b1 + 1.5).abs() < 4.0 * fit.se1, "{fit:?}");
    assert!(fit.se1 < 0.1);
}

fn questions() -> Vec<LineQuestion> {
    vec![
        LineQuestion {
            path: "sxs".into(),
            names: (1..=7).map(|v| v.to_string()).collect(),
        },
        LineQuestion {
            path: "a.executability".into(),
            names: vec!["yes".into(), "no".into()],
        },
    ]
}

fn observe<'a>(
    preference: Favours,
    swapped: bool,
    lengths: (i64, i64),
    time: i32,
    shown: &'a [u8],
) -> Observation<'a> {
    Observation {
        preference: Some(preference),
        swapped,
        lengths,
        time_spent_s: time,
        models: Some(("m1", "m2")),
        shown,
    }
}

/// Rater r1, six ratings (canonical preference, swapped, lengths A/B, time):
/// 1. A, no swap, 100/300, 600 s     -> shown first; shorter
/// 2. A, swap,    300/100, 2000 s    -> shown second; longer; over
/// 3. B, swap,    100/300, 1200 s    -> shown first; longer
/// 4. B, no swap, 200/200, 1900 s    -> shown second; equal lengths; over
/// 5. tie, swap,  100/300, 100 s     -> not decisive
/// 6. B, swap,    300/100, 1801 s    -> shown first; shorter; over
///
/// Decisive 5, shown first 3 (1, 3, 6): 3/5. Unequal lengths 4 (1, 2, 3, 6), longer
/// 2 (2, 3): 2/4 (below 5: no share). Over 1800 s: 3 of 6 (2, 4, 6). Median time of
/// 100, 600, 1200, 1801, 1900, 2000 = (1200 + 1801) / 2 = 1500.5.
#[test]
fn a_raters_leans_time_and_straight_lining() {
    let mut tally = BiasTally::new(true, questions());
    let rows = [
        (Favours::A, false, (100, 300), 600),
        (Favours::A, true, (300, 100), 2000),
        (Favours::B, true, (100, 300), 1200),
        (Favours::B, false, (200, 200), 1900),
        (Favours::Tie, true, (100, 300), 100),
        (Favours::B, true, (300, 100), 1801),
    ];
    for (i, (f, swapped, lengths, time)) in rows.into_iter().enumerate() {
        // sxs shown as 4 every time; executability "yes" but once "no".
        let shown = [4, if i == 2 { 2 } else { 1 }];
        tally.add("r1", &observe(f, swapped, lengths, time, &shown));
    }
    // Another rater: five ratings, all alike.
    for _ in 0..5 {
        tally.add("r0", &observe(Favours::A, false, (10, 20), 60, &[2, 1]));
    }
    let bias = tally.finish();
    let names: Vec<&str> = bias.raters.iter().map(|r| r.rater.as_str()).collect();
    assert_eq!(names, ["r0", "r1"], "by name");
    let r1 = &bias.raters[1];
    assert_eq!(r1.rated, 6);
    let position = r1.position.as_ref().unwrap();
    assert_eq!(position.n, 5);
    assert!(close(position.share.unwrap().value, 0.6));
    let length = r1.length.as_ref().unwrap();
    assert_eq!((length.n, length.share), (4, None));
    assert_eq!(r1.time.median_s, Some(1500.5));
    assert!(close(r1.time.over_guidance.unwrap().value, 0.5));
    let lc = r1.length_controlled.as_ref().unwrap();
    assert_eq!((lc.n, lc.prefers_b.map(|e| e.value)), (5, Some(0.6)));
    assert_eq!(lc.share, None, "five answers are too few to fit");

    let sxs = &r1.straight_lining.questions["sxs"];
    assert_eq!((sxs.n, sxs.answer.as_str(), sxs.straight), (6, "4", true));
    let exe = &r1.straight_lining.questions["a.executability"];
    assert_eq!((exe.answer.as_str(), exe.straight), ("yes", false));
    assert!(close(exe.share.unwrap().value, 5.0 / 6.0));
    assert_eq!(r1.straight_lining.straight_lined, ["sxs"]);
    let r0 = &bias.raters[0];
    assert_eq!(
        r0.straight_lining.straight_lined,
        ["sxs", "a.executability"]
    );
    assert_eq!(r0.position.as_ref().unwrap().share.unwrap().value, 1.0);

    // The batch pools both: 10 decisive, 8 to the first shown (3 + 5).
    let batch = &bias.batch;
    assert_eq!(batch.rated, 11);
    let position = batch.position.as_ref().unwrap();
    assert_eq!(position.n, 10);
    assert!(close(position.share.unwrap().value, 0.8));
    let length = batch.length.as_ref().unwrap();
    // 4 + 5 on unequal tasks; r0 always chose A, the shorter: 2 of 9.
    assert_eq!(length.n, 9);
    assert!(close(length.share.unwrap().value, 2.0 / 9.0));
    assert_eq!(
        (
            batch.straight_lining.raters_checked,
            batch.straight_lining.raters_flagged
        ),
        (2, 2)
    );
    assert_eq!(bias.models.len(), 1);
    assert_eq!(bias.models[0].length_controlled.n, 10);
}

#[test]
fn the_most_common_answer_on_a_tie_is_the_first_option() {
    let answers = vec![vec![0, 0, 2, 2, 0, 0, 0, 0], vec![0, 0, 0]];
    let lines = straight_lining(&questions(), &answers);
    assert_eq!(lines.questions["sxs"].answer, "2");
    assert_eq!(lines.questions["sxs"].share, None, "4 answers");
    assert!(
        !lines.questions.contains_key("a.executability"),
        "none given"
    );
}

#[test]
fn a_pair_of_models_is_read_with_the_first_by_name_as_a() {
    let mut tally = BiasTally::new(true, Vec::new());
    let mut add = |models: (&str, &str), lengths, preference| {
        tally.add(
            "r",
            &Observation {
                preference: Some(preference),
                swapped: false,
                lengths,
                time_spent_s: 1,
                models: Some(models),
                shown: &[],
            },
        )
    };
    // y as A, longer, preferred; x as A, shorter, not preferred: both read as the
    // longer y (second by name) preferred.
    add(("y", "x"), (30, 10), Favours::A);
    add(("x", "y"), (10, 30), Favours::B);
    let bias = tally.finish();
    let pair = &bias.models[0];
    assert_eq!((pair.model_a.as_str(), pair.model_b.as_str()), ("x", "y"));
    assert_eq!(pair.length_controlled.n, 2);
}

#[test]
fn without_a_preference_only_time_and_straight_lining() {
    let mut tally = BiasTally::new(false, questions());
    let o = Observation {
        preference: None,
        swapped: false,
        lengths: (5, 0),
        time_spent_s: 2400,
        models: Some(("solo", "")),
        shown: &[0, 1],
    };
    tally.add("r", &o);
    let bias = tally.finish();
    assert!(bias.batch.position.is_none() && bias.raters[0].length.is_none());
    assert!(bias.models.is_empty());
    assert_eq!(bias.batch.time.median_s, Some(2400.0));
    assert_eq!(bias.batch.time.over_guidance, None, "one rating");
    let json = serde_json::to_value(&bias).unwrap();
    assert!(json["batch"].get("position").is_none(), "{json}");
    assert_eq!(
        json["raters"][0]["straight_lining"]["questions"]["a.executability"]["n"],
        1
    );
}

#[test]
fn the_length_feature_is_bounded() {
    assert_eq!(length_feature(100, 300), 0.5);
    assert_eq!(length_feature(0, 7), 1.0);
    assert_eq!(length_feature(0, 0), 0.0);
}
