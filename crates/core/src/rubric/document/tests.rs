//! Tests of `document`.

use std::collections::BTreeSet;

use serde_json::json;

use super::*;

fn blackhat() -> Value {
    serde_json::from_str(include_str!("../../../../../rubrics/blackhat.json")).unwrap()
}

fn errors_of(doc: Value) -> DocumentErrors {
    from_value(&doc).expect_err("the document should be refused")
}

#[test]
fn the_built_in_rubrics_load_and_read_back_the_same() {
    for rubric in super::super::built_in() {
        let again = from_value(&to_value(rubric)).unwrap();
        assert_eq!(&again, rubric, "{}", rubric.name);
    }
    let names: Vec<&str> = super::super::built_in()
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["blackhat", "additive-5", "pairwise-aspects"]);
}

#[test]
fn every_part_of_the_wrong_shape_is_named() {
    let mut doc = blackhat();
    doc["subject"] = json!("trio");
    doc["questions"][1]["answer"]["type"] = json!("slider");
    doc["questions"][4]["explanation"]["required"] = json!("sometimes");
    doc["colour"] = json!("blue");
    doc["questions"][0]["answer"]["options"][1]["value"] = json!("yes_fully");
    let errors = errors_of(doc);
    assert!(
        errors["questions[0].answer.options[1].value"].contains("offered twice"),
        "the parts that read are checked too: {errors:?}"
    );
    assert!(
        errors["subject"].contains("unknown variant `trio`"),
        "{errors:?}"
    );
    assert!(
        errors["questions[1].answer.type"].contains("slider"),
        "{errors:?}"
    );
    assert!(
        errors
            .keys()
            .any(|k| k.starts_with("questions[4].explanation.required")),
        "{errors:?}"
    );
    assert_eq!(errors["colour"], "is not a field of a rubric document");
}

#[test]
fn a_document_without_its_required_parts_names_each() {
    let errors = errors_of(json!({"title": "x"}));
    for key in ["name", "subject", "questions"] {
        assert_eq!(errors[key], "is required", "{errors:?}");
    }
    assert!(parse("{not json").unwrap_err()["document"].starts_with("not valid JSON"));
    assert_eq!(errors_of(json!([1]))["document"], "must be a JSON object");
}

#[test]
fn every_broken_rule_is_reported_with_its_path() {
    let mut doc = blackhat();
    doc["name"] = json!("Black Hat");
    doc["questions"][0]["answer"]["options"][1]["value"] = json!("yes_fully");
    doc["questions"][0]["explanation"]["required"] = json!({"when": ["maybe"]});
    doc["questions"][1]["key"] = json!("executability");
    doc["questions"][2]["out_of_scope"] = json!("unknowable");
    doc["questions"][2]["metrics"]["unscaled"] = json!(["never"]);
    doc["questions"][4]["swap"] = json!("none");
    doc["questions"][4]["metrics"]["midpoint"] = json!(9);
    doc["questions"][4]["answer"]["labels"] = json!(["only one"]);
    let errors = errors_of(doc);
    let expect = [
        ("name", "lower-case letters"),
        ("questions[0].answer.options[1].value", "offered twice"),
        (
            "questions[0].explanation.required.when[0]",
            "\"maybe\" is not an answer",
        ),
        (
            "questions[1].key",
            "executability is also the answer key of questions[0].key",
        ),
        (
            "questions[2].out_of_scope",
            "not an answer this question takes",
        ),
        (
            "questions[2].metrics.unscaled[0]",
            "\"never\" is not an answer",
        ),
        ("questions[4].swap", "must say how it turns"),
        ("questions[4].metrics.midpoint", "strictly between 1 and 7"),
        (
            "questions[4].answer.labels",
            "must label each of the 7 values",
        ),
    ];
    for (path, part) in expect {
        assert!(
            errors.get(path).is_some_and(|e| e.contains(part)),
            "{path}: {:?} (all: {errors:?})",
            errors.get(path)
        );
    }
}

#[test]
fn swaps_must_fit_the_question() {
    let mut doc =
        serde_json::from_str::<Value>(include_str!("../../../../../rubrics/pairwise-aspects.json"))
            .unwrap();
    doc["questions"][0]["swap"] = json!({"swap_values": {"a": "b"}});
    doc["questions"][1]["swap"] = json!("mirror_scale");
    doc["questions"][2]["swap"] = json!({"swap_values": {"a": "c", "c": "a"}});
    let errors = errors_of(doc);
    assert!(errors["questions[0].swap.swap_values.a"].contains("must turn back"));
    assert!(errors["questions[1].swap"].contains("needs a scale"));
    assert!(errors["questions[2].swap.swap_values.a"].contains("must both be options"));
    let mut single =
        serde_json::from_str::<Value>(include_str!("../../../../../rubrics/additive-5.json"))
            .unwrap();
    single["questions"][0]["swap"] = json!({"swap_values": {"a": "b", "b": "a"}});
    single["questions"][1]["each_response"] = json!(true);
    let errors = errors_of(single);
    assert!(errors["questions[0].swap"].contains("never shown swapped"));
    assert!(errors["questions[1].each_response"].contains("no sides"));
}

#[test]
fn derived_answers_sum_yes_no_questions_asked_once() {
    let mut doc =
        serde_json::from_str::<Value>(include_str!("../../../../../rubrics/additive-5.json"))
            .unwrap();
    doc["derived"][0]["sum_of"][0] = json!("justification");
    doc["derived"][0]["zero_when"] = json!(["nothing"]);
    doc["derived"][0]["key"] = json!("relevant");
    let errors = errors_of(doc);
    assert!(errors["derived[0].sum_of[0]"].contains("must be a yes/no or scale"));
    assert!(errors["derived[0].zero_when[0]"].contains("must be a yes/no"));
    assert!(errors["derived[0].key"].contains("also the answer key"));
}

fn additive() -> Value {
    serde_json::from_str(include_str!("../../../../../rubrics/additive-5.json")).unwrap()
}

#[test]
fn a_ladders_levels_are_distinct_required_yes_no_questions_on_one_ladder() {
    let mut doc = additive();
    doc["derived"][0]["ladder"]["none"] = json!(" ");
    doc["derived"][0]["sum_of"][2] = json!("relevant");
    doc["questions"][1]["required"] = json!(false);
    doc["questions"][3]["explanation"] = json!({"required": "optional", "prompt": "Why?"});
    doc["derived"].as_array_mut().unwrap().push(json!({
        "key": "again", "label": "Again", "sum_of": ["expert", "repetitive"],
        "ladder": {"label": "Again", "none": "None"}
    }));
    let errors = errors_of(doc);
    assert_eq!(errors["derived[0].ladder.none"], "must not be empty");
    assert!(errors["derived[0].sum_of[2]"].contains("already a level of this ladder"));
    for (at, key) in [
        ("derived[0].sum_of[1]", "substantial"),
        ("derived[0].sum_of[3]", "comprehensive"),
    ] {
        assert!(
            errors[at].contains(&format!(
                "{key:?} must be a required yes/no question without an explanation"
            )),
            "{at}: {:?}",
            errors.get(at)
        );
    }
    assert!(errors["derived[1].sum_of[0]"].contains("a level of the ladder \"score\" too"));
    let mut short = additive();
    short["derived"][0]["sum_of"] = json!(["relevant"]);
    assert!(errors_of(short)["derived[0].sum_of"].contains("2 to 19 criteria"));
    let mut scale = additive();
    scale["questions"][0]["answer"] =
        json!({"type": "scale", "min": 1, "max": 3, "labels": ["x", "y", "z"]});
    assert!(errors_of(scale)["derived[0].sum_of[0]"].contains("must be a required yes/no"));
}

#[test]
fn the_built_in_rubrics_carry_their_guidelines_and_define_every_answer() {
    for rubric in super::super::built_in() {
        assert!(
            rubric.instructions.split_whitespace().count() > 150,
            "{}: guidelines",
            rubric.name
        );
        for q in rubric.questions.iter().filter(|q| !q.is_text()) {
            let defined = match &q.answer {
                Answer::Choice { options } | Answer::MultiChoice { options } => {
                    options.iter().all(|o| !o.definition.is_empty())
                }
                _ => !q.definition.is_empty(),
            };
            assert!(
                defined,
                "{}: {} has a definition for every answer",
                rubric.name, q.key
            );
        }
    }
}

#[test]
fn guidelines_and_definitions_are_held_to_their_lengths() {
    let mut doc = blackhat();
    doc["instructions"] = json!("x".repeat(MAX_INSTRUCTIONS_CHARS + 1));
    doc["questions"][4]["definition"] = json!("y".repeat(MAX_HELP_CHARS + 1));
    doc["questions"][0]["answer"]["options"][1]["definition"] =
        json!("z".repeat(MAX_HELP_CHARS + 1));
    let errors = errors_of(doc);
    assert_eq!(errors["instructions"], "must be at most 40000 characters");
    assert_eq!(
        errors["questions[4].definition"],
        "must be at most 4000 characters"
    );
    assert_eq!(
        errors["questions[0].answer.options[1].definition"],
        "must be at most 4000 characters"
    );
    let mut wrong = blackhat();
    wrong["instructions"] = json!(["a list"]);
    assert!(errors_of(wrong)["instructions"].contains("expected a string"));
}

#[test]
fn definitions_do_not_change_which_questions_two_versions_share() {
    let old = from_value(&blackhat()).unwrap();
    let mut doc = blackhat();
    doc["questions"][2]["answer"]["options"][0]["definition"] = json!("Reworded.");
    doc["questions"][4]["definition"] = json!("Reworded too.");
    let new = from_value(&doc).unwrap();
    assert_eq!(comparable(&old, &new).len(), old.questions.len());
    doc["questions"][2]["answer"]["options"][0]["label"] = json!("Fine");
    let relabelled = from_value(&doc).unwrap();
    assert!(!comparable(&old, &relabelled).contains(&"correctness".to_owned()));
}

#[test]
fn reserved_keys_and_explanation_clashes_are_refused() {
    let mut doc = blackhat();
    doc["questions"][4]["key"] = json!("time_spent_s");
    doc["questions"].as_array_mut().unwrap().push(json!({
        "key": "executability_explanation", "each_response": true, "label": "x",
        "answer": {"type": "text"}
    }));
    let errors = errors_of(doc);
    assert!(errors["questions[4].key"].contains("reserved"));
    assert!(errors["questions[5].key"].contains("also the answer key"));
}

#[test]
fn comparable_questions_are_those_unchanged() {
    let old = super::super::by_name("blackhat").unwrap().clone();
    let mut new = old.clone();
    new.questions[0].label = "Did it run?".into();
    new.questions[2].help = "New help, same meaning.".into();
    if let Answer::Choice { options } = &mut new.questions[1].answer {
        options.pop();
    }
    assert_eq!(
        comparable(&old, &new),
        ["correctness", "issue_categories", "sxs"]
    );
    assert_eq!(comparable(&old, &old).len(), 5);
    // Several choices compare as a choice does: an option relabelled changes them.
    if let Answer::MultiChoice { options } = &mut new.questions[3].answer {
        options[0].label = "Logic".into();
    }
    assert_eq!(comparable(&old, &new), ["correctness", "sxs"]);
}

#[test]
fn warnings_name_answers_the_rubric_has_with_values_they_take() {
    let mut doc = blackhat();
    doc["warnings"] = json!([
        {"when": {"c.correctness": "no_issues"}, "message": "x"},
        {"when": {"sxs": [0, 4]}, "message": "y"},
        {"when": {"a.correctness": "maybe"}, "message": " "},
        {"when": {}, "message": "z"}
    ]);
    let errors = errors_of(doc);
    assert!(
        errors["warnings[0].id"].contains("lower-case letters"),
        "{errors:?}"
    );
    assert!(errors["warnings[0].when.c.correctness"].contains("not an answer of this rubric"));
    assert!(errors["warnings[1].when.sxs"].contains("0 is not an answer it takes"));
    assert!(errors["warnings[2].when.a.correctness"].contains("\"maybe\""));
    assert_eq!(errors["warnings[2].message"], "must not be empty");
    assert_eq!(errors["warnings[3].when"], "must name at least one answer");
    let mut additive: Value =
        serde_json::from_str(include_str!("../../../../../rubrics/additive-5.json")).unwrap();
    additive["warnings"][0]["when"] = json!({"score": [6], "justification": "x"});
    additive["warnings"][1]["id"] = additive["warnings"][0]["id"].clone();
    let errors = errors_of(additive);
    assert!(errors["warnings[0].when.score"].contains("6 is not an answer"));
    assert!(errors["warnings[0].when.justification"].contains("is written text"));
    assert!(
        errors["warnings[1].id"].contains("names another warning too"),
        "{errors:?}"
    );
}

#[test]
fn text_conditions_test_written_answers_only() {
    let mut doc = blackhat();
    doc["warnings"] = json!([
        {"id": "ok", "message": "m", "when": {
            "a.executability_explanation": {"mentions": ["ran"]},
            "sxs_explanation": {"more_words_than": 50}}},
        {"id": "on-a-choice", "message": "m", "when": {"a.correctness": {"mentions": ["x"]}}},
        {"id": "empty-words", "message": "m", "when": {"sxs_explanation": {"mentions": [" "]}}},
        {"id": "no-such-explanation", "message": "m", "when": {"a.sxs_explanation": {"mentions": ["x"]}}}
    ]);
    let errors = errors_of(doc);
    assert!(
        !errors.keys().any(|k| k.starts_with("warnings[0]")),
        "{errors:?}"
    );
    assert!(errors["warnings[1].when.a.correctness"].contains("takes set values"));
    assert!(errors["warnings[2].when.sxs_explanation"].contains("none empty"));
    assert!(errors["warnings[3].when.a.sxs_explanation"].contains("not an answer of this rubric"));
    assert_eq!(errors.len(), 3, "{errors:?}");
}

#[test]
fn documents_stored_before_warnings_had_ids_get_them_by_place() {
    let mut doc = blackhat();
    for w in doc["warnings"].as_array_mut().unwrap() {
        w.as_object_mut().unwrap().remove("id");
    }
    let stored: Rubric = serde_json::from_value(doc).unwrap();
    let named = stored.name_warnings();
    assert_eq!(named.warnings[0].id, "warning-1");
    assert_eq!(named.warnings[8].id, "warning-9");
    assert!(named.warning("warning-2").is_some());
}

#[test]
fn every_option_has_a_key_so_a_question_offers_at_most_twenty() {
    let mut doc = blackhat();
    let options: Vec<Value> = (0..21)
        .map(|i| json!({"value": format!("v{i}"), "label": format!("V{i}")}))
        .collect();
    doc["questions"][0]["answer"]["options"] = json!(options);
    doc["questions"][0]["explanation"]["required"] = json!("always");
    doc["questions"][4]["answer"] = json!({"type": "scale", "min": 0, "max": 20,
        "labels": (0..21).map(|i| i.to_string()).collect::<Vec<_>>()});
    let errors = errors_of(doc);
    assert!(errors["questions[0].answer.options"].contains("from 2 to 20 options"));
    assert!(errors["questions[4].answer.max"].contains("at most 20 values"));
    let keys: Vec<String> = (1..=20).map(super::super::option_key).collect();
    assert_eq!(keys[..3], ["1", "2", "3"]);
    assert_eq!(
        (keys[9].as_str(), keys[10].as_str(), keys[19].as_str()),
        ("0", "⇧1", "⇧0")
    );
    let unique: BTreeSet<&String> = keys.iter().collect();
    assert_eq!(unique.len(), 20, "one key per option");
}

/// The README's complete example of a rubric document: it loads, and it uses every
/// field of the format, so the reference shows each one at work.
#[test]
fn the_readme_example_loads_and_uses_every_field() {
    let readme = include_str!("../../../../../README.md");
    let from = readme
        .find("A complete example, using every field of the format")
        .expect("the example's heading");
    let start = from + readme[from..].find("```json\n").expect("its block") + 8;
    let end = start + readme[start..].find("```").expect("its end");
    let value: Value = serde_json::from_str(&readme[start..end]).expect("JSON");
    let rubric = from_value(&value).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(rubric.name, "ship-it");
    let keys = |items: &[Value]| -> BTreeSet<String> {
        items
            .iter()
            .flat_map(|item| item.as_object().unwrap().keys().cloned())
            .collect()
    };
    let used = |items: &[Value], expected: &[&str], what: &str| {
        let found = keys(items);
        for key in expected {
            assert!(found.contains(*key), "the example uses no {what} {key}");
        }
    };
    used(
        std::slice::from_ref(&value),
        &[
            "name",
            "title",
            "subject",
            "help",
            "out_of_scope_help",
            "instructions",
            "questions",
            "derived",
            "warnings",
            "skip_reasons",
        ],
        "document field",
    );
    let questions = value["questions"].as_array().unwrap();
    used(
        questions,
        &[
            "key",
            "label",
            "help",
            "definition",
            "section",
            "each_response",
            "answer",
            "required",
            "explanation",
            "swap",
            "metrics",
            "out_of_scope",
            "code_runs",
            "applies_when",
        ],
        "question field",
    );
    let options: Vec<Value> = questions
        .iter()
        .filter_map(|q| q["answer"]["options"].as_array())
        .flatten()
        .cloned()
        .collect();
    used(&options, &["value", "label", "definition"], "option field");
    used(
        value["derived"].as_array().unwrap(),
        &[
            "key",
            "label",
            "help",
            "sum_of",
            "zero_when",
            "metrics",
            "ladder",
        ],
        "derived field",
    );
    used(
        value["skip_reasons"].as_array().unwrap(),
        &["value", "label", "note_required"],
        "skip reason field",
    );
    let types: BTreeSet<&str> = questions
        .iter()
        .map(|q| q["answer"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        BTreeSet::from(["choice", "multi_choice", "scale", "text", "yes_no"]),
        "every kind of answer"
    );
}

#[test]
fn several_choices_and_their_condition_follow_the_rules() {
    let mut doc = blackhat();
    let kinds = &mut doc["questions"][3];
    assert_eq!(kinds["key"], "issue_categories");
    kinds["metrics"] = json!({"role": "nominal"});
    kinds["explanation"] = json!({"required": "optional", "prompt": "Why?"});
    kinds["required"] = json!(true);
    kinds["out_of_scope"] = json!(["safety"]);
    kinds["applies_when"] = json!({
        "correctness": ["minor_issues", "sometimes"],
        "sxs": [1],
        "executability_explanation": "x",
        "later": true
    });
    doc["warnings"][0]["when"]["a.issue_categories"] = json!(["safety"]);
    let errors = errors_of(doc);
    let at = "questions[3]";
    assert!(
        errors[&format!("{at}.metrics")].contains("no role in metrics"),
        "{errors:?}"
    );
    assert_eq!(
        errors[&format!("{at}.explanation")],
        "several choices take no explanation: drop it"
    );
    assert_eq!(
        errors[&format!("{at}.applies_when")],
        "a question asked only when another answer allows it must have \"required\": false"
    );
    assert_eq!(
        errors[&format!("{at}.applies_when.correctness")],
        "\"sometimes\" is not an answer it takes"
    );
    // sxs is asked once, not of each response; the others are not earlier questions.
    for key in ["sxs", "executability_explanation", "later"] {
        assert_eq!(
            errors[&format!("{at}.applies_when.{key}")],
            "must name a question asked before this one, of each response",
            "{key}"
        );
    }
    assert!(errors[&format!("{at}.out_of_scope")].contains("sets nothing out of scope"));
    assert!(
        errors["warnings[0].when.a.issue_categories"].contains("cannot test"),
        "{errors:?}"
    );

    let mut doc = blackhat();
    doc["questions"][3]["answer"]["options"] = json!([{"value": "only", "label": "Only"}]);
    doc["questions"][3]["applies_when"] = json!({"executability": ["maybe"]});
    let errors = errors_of(doc);
    assert_eq!(
        errors["questions[3].answer.options"],
        "must offer from 2 to 20 options"
    );
    assert_eq!(
        errors["questions[3].applies_when.executability"],
        "\"maybe\" is not an answer it takes"
    );
    let mut doc = blackhat();
    doc["questions"][3]["answer"]["options"][1]["definition"] = json!("d".repeat(4001));
    assert_eq!(
        errors_of(doc)["questions[3].answer.options[1].definition"],
        "must be at most 4000 characters"
    );
}

#[test]
fn a_ladders_level_cannot_decide_whether_a_question_is_asked() {
    let mut doc = additive();
    doc["questions"].as_array_mut().unwrap().push(json!({
        "key": "why_not_expert", "label": "What keeps it from expert?",
        "answer": {"type": "text"}, "required": false,
        "applies_when": {"comprehensive": true}
    }));
    let at = format!(
        "questions[{}].applies_when.comprehensive",
        doc["questions"].as_array().unwrap().len() - 1
    );
    assert!(errors_of(doc)[&at].starts_with("is a level of a ladder"));
}

#[test]
fn a_text_answer_cannot_decide_whether_a_question_is_asked() {
    let mut doc = blackhat();
    doc["questions"].as_array_mut().unwrap().insert(
        0,
        json!({"key": "notes", "each_response": true, "label": "Notes",
               "answer": {"type": "text"}, "required": false}),
    );
    doc["questions"][4]["applies_when"] = json!({"notes": "x"});
    assert_eq!(
        errors_of(doc)["questions[4].applies_when.notes"],
        "must name a question with set answers (a choice, a scale or yes/no)"
    );
}
