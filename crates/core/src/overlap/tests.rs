use serde_json::{Value, json};

use super::*;
use crate::rubric::by_name;

fn answers(value: Value) -> Answers {
    value.as_object().expect("an object").clone()
}

fn disagree(rule: &str, rubric: &str, sets: &[Value]) -> bool {
    let rubric = by_name(rubric).expect("a built-in rubric");
    let escalation = Escalation::parse(rule, rubric).expect("a rule");
    let sets: Vec<Answers> = sets.iter().cloned().map(answers).collect();
    escalation.disagree(rubric, &sets)
}

#[test]
fn each_built_in_rubric_has_the_default_the_issue_names() {
    let default = |name| Escalation::default_for(by_name(name).unwrap()).map(|e| e.to_string());
    assert_eq!(default("blackhat").as_deref(), Some("side:sxs"));
    assert_eq!(
        default("pairwise-aspects").as_deref(),
        Some("side:helpfulness")
    );
    // Five yes/no criteria and a score: no preference and no choice, so a batch of it
    // names its rule.
    assert_eq!(default("additive-5"), None);
}

#[test]
fn rules_are_read_with_their_defaults_and_written_back_whole() {
    let blackhat = by_name("blackhat").unwrap();
    let read = |text: &str| Escalation::parse(text, blackhat).map(|e| e.to_string());
    assert_eq!(read("side").unwrap(), "side:sxs");
    assert_eq!(read(" points:2 ").unwrap(), "points:sxs:2");
    assert_eq!(read("points:sxs:3").unwrap(), "points:sxs:3");
    assert_eq!(read("no_majority").unwrap(), "no_majority:a.executability");
    assert_eq!(
        read("no_majority:b.correctness").unwrap(),
        "no_majority:b.correctness"
    );
    assert_eq!(read("spread:sxs:2").unwrap(), "spread:sxs:2");
    let additive = by_name("additive-5").unwrap();
    assert_eq!(
        Escalation::parse("spread:2", additive).unwrap().to_string(),
        "spread:score:2"
    );
}

#[test]
fn a_broken_rule_says_what_is_wrong() {
    let blackhat = by_name("blackhat").unwrap();
    let why = |text: &str| Escalation::parse(text, blackhat).unwrap_err();
    assert!(
        why("most").contains("unknown rule \"most\""),
        "{}",
        why("most")
    );
    assert!(
        why("points").contains("needs a number"),
        "{}",
        why("points")
    );
    assert!(
        why("points:0").contains("from 1 to 1000"),
        "{}",
        why("points:0")
    );
    assert!(why("spread:sxs:x").contains("\"x\" is not a whole number"));
    assert!(
        why("side:nope").contains("no question \"nope\": use one of sxs"),
        "{}",
        why("side:nope")
    );
    assert!(why("side:a.correctness").contains("side reads a preference"));
    assert!(why("points:a.correctness:2").contains("a preference scale"));
    assert!(why("side:sxs:2:3").contains("too many parts"));
    assert!(why(&"x".repeat(300)).contains("at most 200"));
    let additive = by_name("additive-5").unwrap();
    assert_eq!(
        Escalation::parse("side", additive).unwrap_err(),
        "side reads a preference, and the rubric additive-5 has none"
    );
}

#[test]
fn side_fires_when_two_answers_favour_different_sides() {
    let sxs = |v: i64| json!({"sxs": v});
    // 1-3 favour A, 4 neither, 5-7 B.
    assert!(!disagree("side", "blackhat", &[sxs(1), sxs(3)]));
    assert!(disagree("side", "blackhat", &[sxs(3), sxs(4)]));
    assert!(disagree("side", "blackhat", &[sxs(2), sxs(2), sxs(6)]));
    assert!(!disagree("side", "blackhat", &[sxs(6)]));
    assert!(!disagree("side", "blackhat", &[]));
    let pick = |v: &str| json!({"helpfulness": v});
    assert!(disagree(
        "side",
        "pairwise-aspects",
        &[pick("a"), pick("tie")]
    ));
    assert!(!disagree(
        "side",
        "pairwise-aspects",
        &[pick("b"), pick("b")]
    ));
}

#[test]
fn points_and_spread_fire_at_n_apart() {
    let sxs = |v: i64| json!({"sxs": v});
    assert!(!disagree("points:3", "blackhat", &[sxs(5), sxs(7)]));
    assert!(disagree("points:3", "blackhat", &[sxs(4), sxs(7)]));
    assert!(disagree("points:1", "blackhat", &[sxs(5), sxs(6), sxs(5)]));
    let score = |v: i64| json!({"score": v});
    assert!(!disagree("spread:2", "additive-5", &[score(3), score(4)]));
    assert!(disagree("spread:2", "additive-5", &[score(1), score(3)]));
}

#[test]
fn no_majority_fires_when_no_answer_has_more_than_half() {
    let c = |v: &str| json!({"a": {"correctness": v}});
    let rule = "no_majority:a.correctness";
    assert!(disagree(
        rule,
        "blackhat",
        &[c("no_issues"), c("minor_issues")]
    ));
    assert!(!disagree(
        rule,
        "blackhat",
        &[c("no_issues"), c("no_issues")]
    ));
    assert!(!disagree(
        rule,
        "blackhat",
        &[c("no_issues"), c("no_issues"), c("major_issues")]
    ));
    assert!(disagree(
        rule,
        "blackhat",
        &[c("no_issues"), c("minor_issues"), c("major_issues")]
    ));
    // A rating without the answer (out of scope, say) is not counted.
    assert!(!disagree(rule, "blackhat", &[c("no_issues"), json!({})]));
}
