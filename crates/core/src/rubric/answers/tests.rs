//! Tests of `answers`.

use serde_json::json;

use super::*;
use crate::rubric::ShownAnswers;

fn orient(rubric: &Rubric, answers: Answers, swapped: bool) -> Answers {
    ShownAnswers::new(answers)
        .into_task(rubric, swapped)
        .into_map()
}
use crate::rubric::by_name;

fn blackhat() -> &'static Rubric {
    by_name("blackhat").unwrap()
}

const WHY: &str = "the loop stops one element early";

fn complete() -> Value {
    json!({
        "a": {"executability": "yes_fully", "instruction_following": "no_issues",
              "correctness": "minor_issues", "correctness_explanation": WHY},
        "b": {"executability": "no_code", "instruction_following": "not_applicable",
              "correctness": "not_applicable"},
        "sxs": 2, "sxs_explanation": "A runs and is nearly right; B has no code."
    })
}

fn submit(input: Value) -> Result<Answers, Problems> {
    validate(blackhat(), &[], &input, Mode::Submit, 20)
}

#[test]
fn a_complete_answer_set_passes_and_comes_back_clean() {
    let out = submit(complete()).unwrap();
    assert_eq!(out["a"]["correctness_explanation"], WHY);
    assert_eq!(out["sxs"], 2);
}

#[test]
fn every_option_field_is_required_on_submit() {
    let errors = submit(json!({})).unwrap_err();
    for path in [
        "a.executability",
        "a.instruction_following",
        "a.correctness",
        "b.executability",
        "b.instruction_following",
        "b.correctness",
        "sxs",
    ] {
        assert_eq!(errors[path], "is required", "{path}");
    }
    assert_eq!(errors.len(), 7, "{errors:?}");
}

#[test]
fn unknown_values_name_the_field_and_the_allowed_ones() {
    let mut input = complete();
    input["b"]["executability"] = json!("maybe");
    input["sxs"] = json!(8);
    input["a"]["correctness"] = json!(3);
    let errors = submit(input).unwrap_err();
    assert_eq!(
        errors["b.executability"],
        "unknown value \"maybe\": use yes_fully, yes_partially, no, no_code"
    );
    assert_eq!(errors["sxs"], "must be a whole number from 1 to 7");
    assert_eq!(
        errors["a.correctness"],
        "must be one of the options, as a string"
    );
}

#[test]
fn explanations_are_required_exactly_when_the_rubric_says() {
    let cases = [
        ("executability", "yes_partially", true),
        ("executability", "no", true),
        ("executability", "yes_fully", false),
        ("executability", "no_code", false),
        ("instruction_following", "minor_issues", true),
        ("instruction_following", "major_issues", true),
        ("instruction_following", "no_issues", false),
        ("instruction_following", "not_applicable", false),
        ("correctness", "minor_issues", true),
        ("correctness", "major_issues", true),
        ("correctness", "no_issues", false),
        ("correctness", "cannot_assess", false),
        ("correctness", "not_applicable", false),
    ];
    for (field, value, required) in cases {
        for side in ["a", "b"] {
            let mut input = complete();
            input[side] = json!({"executability": "yes_fully", "instruction_following": "no_issues", "correctness": "no_issues"});
            input[side][field] = json!(value);
            let errors = submit(input).err().unwrap_or_default();
            let path = format!("{side}.{field}_explanation");
            match required {
                true => assert_eq!(
                    errors.get(&path).map(String::as_str),
                    Some(format!("required when {field} is {value}").as_str()),
                    "{path}={value}"
                ),
                false => assert!(errors.is_empty(), "{path}={value}: {errors:?}"),
            }
        }
    }
}

#[test]
fn the_sxs_explanation_is_always_required() {
    for score in 1..=7 {
        let mut input = complete();
        input["sxs"] = json!(score);
        input["sxs_explanation"] = json!("   ");
        assert_eq!(
            submit(input).unwrap_err()["sxs_explanation"],
            "is always required"
        );
    }
}

#[test]
fn explanations_have_a_minimum_length_after_trimming() {
    let mut input = complete();
    input["a"]["correctness_explanation"] = json!("   too short    ");
    let errors = submit(input.clone()).unwrap_err();
    assert_eq!(
        errors["a.correctness_explanation"],
        "must be at least 20 characters (has 9)"
    );
    let relaxed = validate(blackhat(), &[], &input, Mode::Submit, 5).unwrap();
    assert_eq!(relaxed["a"]["correctness_explanation"], "too short");
}

#[test]
fn unknown_fields_are_refused_not_dropped() {
    let mut input = complete();
    input["status"] = json!("accepted");
    input["a"]["rater"] = json!("someone");
    let errors = submit(input).unwrap_err();
    assert_eq!(errors["status"], "is not a question of this rubric");
    assert_eq!(errors["a.rater"], "is not a question of this rubric");
}

#[test]
fn drafts_check_types_but_not_completeness() {
    let draft = validate(
        blackhat(),
        &[],
        &json!({"a": {"executability": "no"}}),
        Mode::Draft,
        20,
    )
    .unwrap();
    assert_eq!(draft["a"]["executability"], "no");
    let bad = validate(blackhat(), &[], &json!({"sxs": "seven"}), Mode::Draft, 20).unwrap_err();
    assert_eq!(bad["sxs"], "must be a whole number from 1 to 7");
    assert!(validate(blackhat(), &[], &json!([1]), Mode::Draft, 20).is_err());
}

#[test]
fn out_of_scope_sets_correctness_to_cannot_assess_on_both_sides() {
    let input =
        json!({"a": {"correctness": "major_issues", "correctness_explanation": "x"}, "sxs": 5});
    let out = validate(blackhat(), &[], &input, Mode::OutOfScope, 20).unwrap();
    assert_eq!(out["a"]["correctness"], "cannot_assess");
    assert_eq!(out["b"]["correctness"], "cannot_assess");
    assert!(out["a"].get("correctness_explanation").is_none());
    assert_eq!(out["sxs"], 5, "other fields stay as they are");
}

#[test]
fn classifications_follow_the_batch_questions() {
    let questions = vec![
        Classification {
            key: "language".into(),
            label: "Language".into(),
            multiple: false,
            required: true,
            options: vec!["python".into(), "rust".into()],
        },
        Classification {
            key: "kind".into(),
            label: "Kind".into(),
            multiple: true,
            required: false,
            options: vec!["bug".into(), "feature".into()],
        },
    ];
    let mut input = complete();
    let missing = validate(blackhat(), &questions, &input, Mode::Submit, 20).unwrap_err();
    assert_eq!(missing["classifications.language"], "is required");
    input["classifications"] = json!({"language": "cobol", "kind": "bug", "mood": "x"});
    let bad = validate(blackhat(), &questions, &input, Mode::Submit, 20).unwrap_err();
    assert_eq!(
        bad["classifications.language"],
        "unknown option \"cobol\": use python, rust"
    );
    assert_eq!(bad["classifications.kind"], "must be a list of options");
    assert_eq!(
        bad["classifications.mood"],
        "is not a question of this batch"
    );
    input["classifications"] = json!({"language": "rust", "kind": ["bug", "bug", "feature"]});
    let ok = validate(blackhat(), &questions, &input, Mode::Submit, 20).unwrap();
    assert_eq!(
        ok["classifications"],
        json!({"language": "rust", "kind": ["bug", "feature"]})
    );
}

#[test]
fn orientation_swaps_sides_and_mirrors_the_score() {
    let shown = submit(complete()).unwrap();
    let canonical = orient(blackhat(), shown.clone(), true);
    assert_eq!(canonical["sxs"], 6, "8 - 2");
    assert_eq!(canonical["a"], shown["b"]);
    assert_eq!(canonical["b"], shown["a"]);
    assert_eq!(canonical["sxs_explanation"], shown["sxs_explanation"]);
    assert_eq!(orient(blackhat(), canonical, true), shown, "an involution");
    assert_eq!(orient(blackhat(), shown.clone(), false), shown);
    for s in 1..=7 {
        let mut one = Answers::new();
        one.insert("sxs".into(), json!(s));
        assert_eq!(orient(blackhat(), one, true)["sxs"], 8 - s);
    }
}

fn additive() -> &'static Rubric {
    by_name("additive-5").unwrap()
}

fn criteria(met: [bool; 5], repetitive: bool) -> Value {
    json!({
        "relevant": met[0], "substantial": met[1], "useful": met[2],
        "comprehensive": met[3], "expert": met[4], "repetitive": repetitive,
        "justification": "Relevant and useful, but it misses the edge cases."
    })
}

const CRITERIA: [&str; 5] = [
    "relevant",
    "substantial",
    "useful",
    "comprehensive",
    "expert",
];

#[test]
fn the_additive_ladder_takes_levels_in_order_and_refuses_every_gap() {
    // Every combination of the five criteria and the zero rule: 64 in all.
    let mut taken = 0;
    for bits in 0u8..64 {
        let met: [bool; 5] = std::array::from_fn(|i| bits & (1 << i) != 0);
        let repetitive = bits & (1 << 5) != 0;
        let level = met.iter().take_while(|m| **m).count();
        let result = validate(
            additive(),
            &[],
            &criteria(met, repetitive),
            Mode::Submit,
            20,
        );
        // The criteria met above the lowest one not met.
        let above_a_gap: Vec<&str> = (level..5)
            .filter(|i| met[*i])
            .map(|i| CRITERIA[i])
            .collect();
        if above_a_gap.is_empty() {
            let out = result.unwrap_or_else(|e| panic!("{met:?} refused: {e:?}"));
            let score = if repetitive { 0 } else { level as i64 };
            assert_eq!(out["score"], score, "{met:?} repetitive {repetitive}");
            taken += 1;
        } else {
            let errors = result.expect_err("a level above one not reached");
            let keys: Vec<&str> = errors.keys().map(String::as_str).collect();
            let mut expected = above_a_gap.clone();
            expected.sort_unstable();
            assert_eq!(keys, expected, "{met:?}");
            let lowest_unmet = additive().question(CRITERIA[level]).unwrap();
            for key in above_a_gap {
                assert!(
                    errors[key].starts_with(&format!(
                        "can be yes only when \"{}\" is yes",
                        lowest_unmet.label
                    )),
                    "{met:?}: {}",
                    errors[key]
                );
            }
        }
    }
    assert_eq!(
        taken, 12,
        "levels 0 to 5, each with and without the zero rule"
    );
}

#[test]
fn a_draft_may_climb_part_of_the_ladder_but_not_skip_a_level() {
    let draft = json!({"expert": true});
    assert!(validate(additive(), &[], &draft, Mode::Draft, 20).is_ok());
    let gap = json!({"relevant": false, "useful": true});
    let errors = validate(additive(), &[], &gap, Mode::Draft, 20).unwrap_err();
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["useful"]);
}

#[test]
fn without_a_ladder_the_criteria_are_independent_as_in_version_1() {
    let mut independent = additive().clone();
    independent.derived[0].ladder = None;
    for bits in 0u8..32 {
        let met = std::array::from_fn(|i| bits & (1 << i) != 0);
        let out = validate(&independent, &[], &criteria(met, false), Mode::Submit, 20).unwrap();
        assert_eq!(out["score"], i64::from(bits.count_ones() as u8), "{met:?}");
    }
}

#[test]
fn a_ladders_errors_are_shown_once_beside_its_question() {
    let errors = validate(additive(), &[], &json!({}), Mode::Submit, 20).unwrap_err();
    assert!(errors.contains_key("relevant") && errors.contains_key("expert"));
    let shown = additive().on_form(errors);
    assert_eq!(
        shown.keys().map(String::as_str).collect::<Vec<_>>(),
        ["justification", "ladder.score", "repetitive"]
    );
    assert_eq!(shown["ladder.score"], "is required");
    let gap = criteria([true, false, false, true, true], false);
    let errors = validate(additive(), &[], &gap, Mode::Submit, 20).unwrap_err();
    let shown = additive().on_form(errors);
    assert!(
        shown["ladder.score"].contains("reaches \"Direct, complete and well organised\""),
        "the lowest level refused: {}",
        shown["ladder.score"]
    );
}

#[test]
fn a_sent_score_must_agree_with_the_criteria() {
    let mut input = criteria([true, true, false, false, false], false);
    input["score"] = json!(2);
    assert_eq!(
        validate(additive(), &[], &input, Mode::Submit, 20).unwrap()["score"],
        2
    );
    input["score"] = json!(4);
    let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
    assert_eq!(
        errors["score"],
        "is worked out from the answers and is 2, not 4; leave it out or send 2"
    );
    assert_eq!(errors.len(), 1);
}

#[test]
fn the_justification_is_required_and_at_most_100_words() {
    let mut input = criteria([true; 5], false);
    input["justification"] = json!(vec!["word"; 100].join(" "));
    assert!(validate(additive(), &[], &input, Mode::Submit, 20).is_ok());
    input["justification"] = json!(vec!["word"; 101].join(" \n "));
    let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
    assert_eq!(
        errors["justification"],
        "must be at most 100 words (has 101)"
    );
    let draft = validate(additive(), &[], &input, Mode::Draft, 20).unwrap_err();
    assert!(
        draft.contains_key("justification"),
        "limits hold for drafts too"
    );
    input["justification"] = json!("  ");
    let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
    assert_eq!(errors["justification"], "is required");
}

#[test]
fn words_are_counted_at_unicode_word_boundaries() {
    let joined = |with: &str| vec!["word"; 101].join(with);
    // Joined by an invisible space, an em dash or a slash: still 101 words.
    for with in ["\u{200B}", "\u{2014}", "/", " \n ", "\u{3000}"] {
        assert_eq!(word_count(&joined(with)), 101, "joined by {with:?}");
    }
    // Punctuation standing alone is no word; a contraction or a number is one.
    assert_eq!(
        word_count(&format!("{} .", vec!["word"; 100].join(" "))),
        100
    );
    assert_eq!(word_count("don't stop at 3.14 -- ok?"), 5);
    assert_eq!(word_count("  \t "), 0);
    let mut input = criteria([true; 5], false);
    input["justification"] = json!(joined("\u{200B}"));
    let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
    assert_eq!(
        errors["justification"],
        "must be at most 100 words (has 101)"
    );
    input["justification"] = json!(format!("{} .", vec!["word"; 100].join(" ")));
    assert!(validate(additive(), &[], &input, Mode::Submit, 20).is_ok());
}

#[test]
fn additive_answers_are_yes_or_no_and_single_sided() {
    let mut input = criteria([true; 5], false);
    input["relevant"] = json!("yes");
    input["a"] = json!({});
    let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
    assert_eq!(errors["relevant"], "must be true or false");
    assert_eq!(errors["a"], "is not a question of this rubric");
    let out = validate(
        additive(),
        &[],
        &criteria([true; 5], false),
        Mode::Submit,
        20,
    )
    .unwrap();
    assert_eq!(
        orient(additive(), out.clone(), true),
        out,
        "one response: no swap"
    );
    let missing = validate(additive(), &[], &json!({}), Mode::Submit, 20).unwrap_err();
    assert_eq!(
        missing.len(),
        7,
        "six criteria and the justification: {missing:?}"
    );
}

fn aspects() -> &'static Rubric {
    by_name("pairwise-aspects").unwrap()
}

#[test]
fn swapped_aspects_are_stored_for_the_canonical_side() {
    let shown = json!({
        "helpfulness": "a", "clarity": "b", "factuality": "tie", "depth": "a",
        "engagement": "tie", "safety": "b", "rationale": "A solves it; B is clearer."
    });
    let checked = validate(aspects(), &[], &shown, Mode::Submit, 20).unwrap();
    let canonical = orient(aspects(), checked.clone(), true);
    let expect = [
        ("helpfulness", "b"),
        ("clarity", "a"),
        ("factuality", "tie"),
        ("depth", "b"),
        ("engagement", "tie"),
        ("safety", "a"),
    ];
    for (aspect, side) in expect {
        assert_eq!(canonical[aspect], side, "{aspect}");
    }
    assert_eq!(canonical["rationale"], checked["rationale"]);
    assert_eq!(orient(aspects(), canonical.clone(), true), checked);
    // Only the parts the rubric has: no question is asked of each response, so no `a`
    // or `b` (empty ones sent are taken and dropped).
    let keys: Vec<&str> = canonical.keys().map(String::as_str).collect();
    assert!(!keys.contains(&"a") && !keys.contains(&"b"), "{keys:?}");
    let mut with_sides = shown.clone();
    with_sides["a"] = json!({});
    let checked = validate(aspects(), &[], &with_sides, Mode::Submit, 20).unwrap();
    assert!(!checked.contains_key("a"));
    let bad = validate(aspects(), &[], &json!({"depth": "A"}), Mode::Draft, 20).unwrap_err();
    assert_eq!(bad["depth"], "unknown value \"A\": use a, tie, b");
}

/// The ids of the warnings `answers` meet.
fn met(rubric: &Rubric, answers: &Answers) -> Vec<String> {
    warnings(rubric, answers)
        .iter()
        .map(|w| w.id.clone())
        .collect()
}

#[test]
fn warnings_name_unlikely_combinations_without_refusing_them() {
    let mut input = complete();
    input["a"]["correctness"] = json!("major_issues");
    input["a"]["correctness_explanation"] = json!(WHY);
    input["b"]["correctness"] = json!("no_issues");
    let shown = submit(input.clone()).expect("a warning refuses nothing");
    assert_eq!(met(blackhat(), &shown), ["prefers-a-despite-major-issues"]);
    assert!(
        warnings(blackhat(), &shown)[0]
            .message
            .starts_with("You prefer A, yet A has major")
    );
    input["sxs"] = json!(4);
    assert!(
        met(blackhat(), &submit(input).unwrap()).is_empty(),
        "a tie is fine"
    );
    let plain = validate(
        additive(),
        &[],
        &criteria([true, true, false, false, false], false),
        Mode::Submit,
        20,
    )
    .unwrap();
    assert!(warnings(additive(), &plain).is_empty());
}

#[test]
fn text_conditions_read_whole_words_of_explanations() {
    let mut input = complete();
    for side in ["a", "b"] {
        input[side]["executability"] = json!("no_code");
        input[side]["correctness"] = json!("not_applicable");
    }
    input["sxs_explanation"] = json!("Neither has code; A explains the idea better.");
    let answers = submit(input.clone()).unwrap();
    assert!(
        met(blackhat(), &answers).is_empty(),
        "{:?}",
        met(blackhat(), &answers)
    );
    // "ran" as a word, whatever its case; not inside another word ("grant").
    input["sxs_explanation"] = json!("I RAN both snippets; A grants more.");
    assert_eq!(
        met(blackhat(), &submit(input.clone()).unwrap()),
        ["no-code-yet-ran"]
    );
    input["sxs_explanation"] = json!("A grants more detail than B does here.");
    assert!(met(blackhat(), &submit(input.clone()).unwrap()).is_empty());
    input["a"]["executability_explanation"] = json!("The output was printed twice.");
    assert_eq!(
        met(blackhat(), &submit(input.clone()).unwrap()),
        ["a-no-code-yet-ran"]
    );
    // N/A correctness beside code that ran, or did not.
    input["b"]["executability"] = json!("no");
    input["b"]["executability_explanation"] = json!("It needs a database I do not have.");
    assert_eq!(
        met(blackhat(), &submit(input).unwrap()),
        ["a-no-code-yet-ran", "b-not-applicable-with-code"]
    );
}

#[test]
fn a_derived_total_and_a_phrase_in_the_justification_meet_a_warning() {
    let mut five = criteria([true, true, true, true, true], false);
    five["justification"] = json!("Clear and complete, though the example is wordy.");
    let out = validate(additive(), &[], &five, Mode::Submit, 20).unwrap();
    assert_eq!(met(additive(), &out), ["full-score-yet-faults"]);
    five["justification"] = json!("Clear, complete and exactly what was asked.");
    let out = validate(additive(), &[], &five, Mode::Submit, 20).unwrap();
    assert!(met(additive(), &out).is_empty());
    let mut repeats = criteria([true, true, false, false, false], false);
    repeats["justification"] = json!("Useful, but it is not concise at all.");
    let out = validate(additive(), &[], &repeats, Mode::Submit, 20).unwrap();
    assert_eq!(met(additive(), &out), ["repeats-not-marked"]);
}

/// `complete()` with `kinds` given as B's issue categories, and A's correctness set to
/// `a_correctness`.
fn with_kinds(a_correctness: &str, kinds: Value) -> Value {
    let mut input = complete();
    input["a"]["correctness"] = json!(a_correctness);
    input["a"]["issue_categories"] = kinds;
    input
}

#[test]
fn issue_categories_are_taken_only_when_correctness_has_issues() {
    for correctness in ["minor_issues", "major_issues"] {
        let out = submit(with_kinds(
            correctness,
            json!(["performance", "functionality"]),
        ))
        .unwrap();
        // Stored in the options' order, whatever order they were ticked in.
        assert_eq!(
            out["a"]["issue_categories"],
            json!(["functionality", "performance"])
        );
    }
    for correctness in ["no_issues", "cannot_assess", "not_applicable"] {
        let mut input = with_kinds(correctness, json!(["safety"]));
        input["a"]
            .as_object_mut()
            .unwrap()
            .remove("correctness_explanation");
        let errors = submit(input.clone()).unwrap_err();
        assert_eq!(
            errors["a.issue_categories"],
            "applies only when correctness is minor_issues or major_issues: leave it out \
             otherwise",
            "{correctness}"
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        // A draft keeps them: the rater may be about to change correctness back.
        let draft = validate(blackhat(), &[], &input, Mode::Draft, 20).unwrap();
        assert_eq!(draft["a"]["issue_categories"], json!(["safety"]));
    }
    // Optional even when asked; an empty list is no answer.
    let out = submit(complete()).unwrap();
    assert!(out["a"].get("issue_categories").is_none());
    let out = submit(with_kinds("minor_issues", json!([]))).unwrap();
    assert!(out["a"].get("issue_categories").is_none());
}

#[test]
fn issue_categories_refuse_what_is_not_a_list_of_different_options() {
    let why = "must be a list of different options from functionality, safety, performance, \
               documentation";
    for bad in [
        json!("safety"),
        json!(["safety", "safety"]),
        json!(["style"]),
        json!([1]),
        json!({"safety": true}),
    ] {
        let errors = submit(with_kinds("minor_issues", bad.clone())).unwrap_err();
        assert_eq!(errors["a.issue_categories"], why, "{bad}");
    }
}

#[test]
fn out_of_scope_drops_issue_categories_it_no_longer_asks_for() {
    let input = with_kinds("major_issues", json!(["safety"]));
    let out = validate(blackhat(), &[], &input, Mode::OutOfScope, 20).unwrap();
    assert_eq!(out["a"]["correctness"], "cannot_assess");
    assert!(out["a"].get("issue_categories").is_none(), "{out:?}");
}

#[test]
fn issue_categories_change_sides_with_their_response() {
    let shown = submit(with_kinds("minor_issues", json!(["safety"]))).unwrap();
    let task = orient(blackhat(), shown, true);
    assert_eq!(task["b"]["issue_categories"], json!(["safety"]));
    assert!(task["a"].get("issue_categories").is_none());
}
