//! The rules a rubric document must meet beyond its shape: names and limits, each
//! question's answer, explanation, swap and role, the derived answers and the warnings.
//! Each broken rule is reported under its path in the document.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{
    DocumentErrors, MAX_DERIVED, MAX_HELP_CHARS, MAX_INSTRUCTIONS_CHARS, MAX_PHRASE_CHARS,
    MAX_PHRASES, MAX_QUESTIONS, MAX_WARNINGS, Parts, accepts, check_key, check_name, is_identifier,
};
use crate::rubric::{
    Answer, Matches, Question, Required, Role, Rubric, Slot, Subject, Swap, TextTest,
};

/// The rules a document must meet beyond its shape, for the `parts` of it that read.
pub(super) fn check(rubric: &Rubric, parts: &Parts, errors: &mut DocumentErrors) {
    let mut err = |path: String, why: String| {
        errors.entry(path).or_insert(why);
    };
    if let Err(why) = check_name(&rubric.name) {
        err("name".into(), why);
    }
    if rubric.title.trim().is_empty() {
        err("title".into(), "must not be empty".into());
    }
    if parts.complete && rubric.questions.is_empty() {
        err("questions".into(), "must ask at least one question".into());
    }
    for (field, over, why) in [
        (
            "questions",
            rubric.questions.len() > MAX_QUESTIONS,
            format!("must ask at most {MAX_QUESTIONS} questions"),
        ),
        (
            "derived",
            rubric.derived.len() > MAX_DERIVED,
            format!("must have at most {MAX_DERIVED} derived answers"),
        ),
        (
            "warnings",
            rubric.warnings.len() > MAX_WARNINGS,
            format!("must have at most {MAX_WARNINGS} warnings"),
        ),
    ] {
        if over {
            err(field.into(), why);
        }
    }
    let long_help = format!("must be at most {MAX_HELP_CHARS} characters");
    for (field, text) in [
        ("help", &rubric.help),
        ("out_of_scope_help", &rubric.out_of_scope_help),
    ] {
        if text.chars().count() > MAX_HELP_CHARS {
            err(field.into(), long_help.clone());
        }
    }
    if rubric.instructions.chars().count() > MAX_INSTRUCTIONS_CHARS {
        err(
            "instructions".into(),
            format!("must be at most {MAX_INSTRUCTIONS_CHARS} characters"),
        );
    }
    // Keys that share one object of the stored answers must differ.
    let mut top: BTreeMap<String, String> = BTreeMap::new();
    let mut each: BTreeMap<String, String> = BTreeMap::new();
    let claim = |map: &mut BTreeMap<String, String>, key: String, path: String| {
        map.insert(key, path.clone()).map(|other| (path, other))
    };
    for (q, i) in rubric.questions.iter().zip(&parts.questions) {
        let at = format!("questions[{i}]");
        if let Err(why) = check_key(&q.key) {
            err(format!("{at}.key"), why);
        }
        if q.label.trim().is_empty() {
            err(format!("{at}.label"), "must not be empty".into());
        }
        if q.help.chars().count() > MAX_HELP_CHARS {
            err(format!("{at}.help"), long_help.clone());
        }
        if q.definition.chars().count() > MAX_HELP_CHARS {
            err(format!("{at}.definition"), long_help.clone());
        }
        if let Answer::Choice { options } | Answer::MultiChoice { options } = &q.answer {
            for (j, option) in options.iter().enumerate() {
                if option.definition.chars().count() > MAX_HELP_CHARS {
                    err(
                        format!("{at}.answer.options[{j}].definition"),
                        long_help.clone(),
                    );
                }
            }
        }
        let map = if q.each_response { &mut each } else { &mut top };
        let mut keys = vec![q.key.clone()];
        if q.explanation.is_some() {
            keys.push(q.explanation_key());
        }
        for key in keys {
            if let Some((path, other)) = claim(map, key.clone(), format!("{at}.key")) {
                err(path, format!("{key} is also the answer key of {other}"));
            }
        }
        if q.each_response && rubric.subject == Subject::Single {
            err(
                format!("{at}.each_response"),
                "a single-response rubric has no sides to ask of".into(),
            );
        }
        check_answer(q, &at, &mut err);
        check_explanation(q, &at, &mut err);
        check_swap(rubric.subject, q, &at, &mut err);
        check_applies_when(rubric, q, &at, &mut err);
        if let Some(role) = &q.metrics {
            check_role(role, &q.answer, &format!("{at}.metrics"), &mut err);
        } else if !q.is_text() && !matches!(q.answer, Answer::MultiChoice { .. }) {
            err(
                format!("{at}.metrics"),
                "is required: say how metrics read it (preference, ordinal, nominal or score)"
                    .into(),
            );
        }
        if let Some(value) = &q.out_of_scope {
            if !q.applies_when.is_empty() {
                err(
                    format!("{at}.out_of_scope"),
                    "a question asked only when another answer allows it sets nothing out of \
                     scope"
                        .into(),
                );
            } else if !accepts(&q.answer, value) {
                err(
                    format!("{at}.out_of_scope"),
                    format!("{value} is not an answer this question takes"),
                );
            }
        }
    }
    for (d, i) in rubric.derived.iter().zip(&parts.derived) {
        let at = format!("derived[{i}]");
        if let Err(why) = check_key(&d.key) {
            err(format!("{at}.key"), why);
        }
        if let Some((path, other)) = claim(&mut top, d.key.clone(), format!("{at}.key")) {
            err(path, format!("{} is also the answer key of {other}", d.key));
        }
        if d.label.trim().is_empty() {
            err(format!("{at}.label"), "must not be empty".into());
        }
        if d.sum_of.is_empty() {
            err(
                format!("{at}.sum_of"),
                "must name at least one question".into(),
            );
        }
        for (list, keys, takes) in [
            ("sum_of", &d.sum_of, "a yes/no or scale question asked once"),
            ("zero_when", &d.zero_when, "a yes/no question asked once"),
        ] {
            for (j, key) in keys.iter().enumerate() {
                let fits = rubric.question(key).is_some_and(|q| {
                    !q.each_response
                        && match q.answer {
                            Answer::YesNo { .. } => true,
                            Answer::Scale { .. } => list == "sum_of",
                            _ => false,
                        }
                });
                // A name of a question that did not read is not known to be wrong.
                if !fits && parts.complete {
                    err(
                        format!("{at}.{list}[{j}]"),
                        format!("{key:?} must be {takes}"),
                    );
                }
            }
        }
        if let Some(ladder) = &d.ladder {
            check_ladder(rubric, d, ladder, &at, parts.complete, &long_help, &mut err);
        }
        match &d.metrics {
            Some(Role::Score) | None => {}
            Some(_) => err(
                format!("{at}.metrics"),
                "a derived answer is a number: its role is score".into(),
            ),
        }
    }
    check_skip_reasons(rubric, &mut err);
    // Warnings name answers by path; only a complete document has every path to check.
    if !parts.complete {
        return;
    }
    let slots = rubric.slots();
    let mut ids = std::collections::HashSet::new();
    for (i, w) in rubric.warnings.iter().enumerate() {
        let at = format!("warnings[{i}]");
        if !is_identifier(&w.id, '-') {
            err(
                format!("{at}.id"),
                "must be 1 to 64 lower-case letters, digits or dashes, starting with a letter \
                 (it names the warning in submissions and exports)"
                    .into(),
            );
        } else if !ids.insert(w.id.as_str()) {
            err(
                format!("{at}.id"),
                format!("{:?} names another warning too", w.id),
            );
        }
        if w.message.trim().is_empty() {
            err(format!("{at}.message"), "must not be empty".into());
        }
        if w.when.is_empty() {
            err(format!("{at}.when"), "must name at least one answer".into());
        }
        for (path, matches) in &w.when {
            let at = format!("{at}.when.{path}");
            match warning_target(rubric, &slots, path) {
                None => err(
                    at,
                    "is not an answer of this rubric (name it as a.KEY, b.KEY or KEY, or \
                     its explanation as a.KEY_explanation)"
                        .into(),
                ),
                Some(Target::Text) => check_text_condition(matches, &at, &mut err),
                Some(Target::Several) => err(
                    at,
                    "takes several choices, which a warning cannot test: name another answer"
                        .into(),
                ),
                Some(Target::Value(takes)) => {
                    check_value_condition(matches, &takes, &at, &mut err);
                }
            }
        }
    }
}

/// What a warning's condition names: a written answer, or one with fixed values (and
/// which values it takes).
enum Target<'a> {
    Text,
    /// Several choices: no rule reads them.
    Several,
    Value(Box<dyn Fn(&Value) -> bool + 'a>),
}

fn warning_target<'a>(rubric: &Rubric, slots: &[Slot<'a>], path: &str) -> Option<Target<'a>> {
    slots.iter().find_map(|slot| match slot {
        Slot::Asked { question, .. } if slot.path() == path => Some(if question.is_text() {
            Target::Text
        } else if matches!(question.answer, Answer::MultiChoice { .. }) {
            Target::Several
        } else {
            let answer = &question.answer;
            Target::Value(Box::new(move |v: &Value| accepts(answer, v)))
        }),
        Slot::Asked { .. } if slot.explanation_path().as_deref() == Some(path) => {
            Some(Target::Text)
        }
        Slot::Derived(d) if slot.path() == path => {
            let (low, high) = d.range(rubric);
            Some(Target::Value(Box::new(move |v: &Value| {
                v.as_i64().is_some_and(|n| (low..=high).contains(&n))
            })))
        }
        _ => None,
    })
}

fn check_text_condition(matches: &Matches, at: &str, err: &mut impl FnMut(String, String)) {
    match matches {
        Matches::Text(TextTest::Mentions(phrases)) => {
            if phrases.is_empty() || phrases.iter().any(|p| p.trim().is_empty()) {
                err(at.into(), "mentions must list words, none empty".into());
            } else if phrases.len() > MAX_PHRASES {
                err(
                    at.into(),
                    format!("mentions must list at most {MAX_PHRASES} words or phrases"),
                );
            } else if phrases.iter().any(|p| p.chars().count() > MAX_PHRASE_CHARS) {
                err(
                    at.into(),
                    format!("each word or phrase must be at most {MAX_PHRASE_CHARS} characters"),
                );
            }
        }
        Matches::Text(TextTest::MoreWordsThan(_)) => {}
        _ => err(
            at.into(),
            "is written text: test it with {\"mentions\": [words]} or {\"more_words_than\": N}"
                .into(),
        ),
    }
}

fn check_value_condition(
    matches: &Matches,
    takes: &dyn Fn(&Value) -> bool,
    at: &str,
    err: &mut impl FnMut(String, String),
) {
    if let Matches::Text(_) = matches {
        err(
            at.into(),
            "mentions and more_words_than test written text; this answer takes set values".into(),
        );
        return;
    }
    if matches.values().is_empty() {
        err(at.into(), "must name at least one answer".into());
    }
    for v in matches.values() {
        if !takes(v) {
            err(at.into(), format!("{v} is not an answer it takes"));
        }
    }
}

/// A condition on when a question is asked: it names answers given before it on the
/// form, in the same object (the same response's, for a question asked of each
/// response), by their values; the question is then optional, since it is not always
/// asked.
fn check_applies_when(
    rubric: &Rubric,
    q: &Question,
    at: &str,
    err: &mut impl FnMut(String, String),
) {
    if q.applies_when.is_empty() {
        return;
    }
    let at = format!("{at}.applies_when");
    if q.required {
        err(
            at.clone(),
            "a question asked only when another answer allows it must have \"required\": false"
                .into(),
        );
    }
    let earlier: Vec<&Question> = rubric
        .questions
        .iter()
        .take_while(|o| !std::ptr::eq(*o, q))
        .filter(|o| o.each_response == q.each_response)
        .collect();
    for (key, matches) in &q.applies_when {
        let path = format!("{at}.{key}");
        let Some(other) = earlier.iter().find(|o| o.key == *key) else {
            err(
                path,
                format!(
                    "must name a question asked before this one{}",
                    if q.each_response {
                        ", of each response"
                    } else {
                        ", once for the task"
                    }
                ),
            );
            continue;
        };
        if other.is_text() || matches!(other.answer, Answer::MultiChoice { .. }) {
            err(
                path,
                "must name a question with set answers (a choice, a scale or yes/no)".into(),
            );
            continue;
        }
        if rubric.ladder_of(key).is_some() {
            err(
                path,
                "is a level of a ladder, which the form asks as one question: name another \
                 answer"
                    .into(),
            );
            continue;
        }
        let answer = &other.answer;
        check_value_condition(matches, &|v: &Value| accepts(answer, v), &path, err);
    }
}

fn check_answer(q: &Question, at: &str, err: &mut impl FnMut(String, String)) {
    let at = format!("{at}.answer");
    match &q.answer {
        Answer::MultiChoice { options } => {
            if !(2..=crate::rubric::MAX_OPTIONS).contains(&options.len()) {
                err(
                    format!("{at}.options"),
                    format!(
                        "must offer from 2 to {} options",
                        crate::rubric::MAX_OPTIONS
                    ),
                );
            }
            check_options(options, &at, err);
            let question = at.trim_end_matches(".answer");
            if q.explanation.is_some() {
                err(
                    format!("{question}.explanation"),
                    "several choices take no explanation: drop it".into(),
                );
            }
            if q.metrics.is_some() {
                err(
                    format!("{question}.metrics"),
                    "several choices have no role in metrics: each option is counted by \
                     itself; drop metrics"
                        .into(),
                );
            }
        }
        Answer::Choice { options } => {
            if !(2..=crate::rubric::MAX_OPTIONS).contains(&options.len()) {
                err(
                    format!("{at}.options"),
                    format!(
                        "must offer from 2 to {} options (each has a key on the form)",
                        crate::rubric::MAX_OPTIONS
                    ),
                );
            }
            check_options(options, &at, err);
        }
        Answer::Scale { min, max, labels } => {
            if min >= max || max - min >= crate::rubric::MAX_OPTIONS as i64 {
                err(
                    format!("{at}.max"),
                    format!(
                        "must be above min, for at most {} values (each has a key on the form)",
                        crate::rubric::MAX_OPTIONS
                    ),
                );
            } else if labels.len() as i64 != max - min + 1 {
                err(
                    format!("{at}.labels"),
                    format!(
                        "must label each of the {} values from {min} to {max} (has {})",
                        max - min + 1,
                        labels.len()
                    ),
                );
            }
        }
        Answer::YesNo { .. } => {}
        Answer::Text {
            max_words,
            max_chars,
        } => {
            check_limits(*max_words, *max_chars, &at, err);
            if q.explanation.is_some() {
                err(
                    format!("{at}.type"),
                    "a text answer is its own explanation: drop the explanation".into(),
                );
            }
        }
    }
}

fn check_options(
    options: &[crate::rubric::Choice],
    at: &str,
    err: &mut impl FnMut(String, String),
) {
    let mut seen = BTreeSet::new();
    for (i, o) in options.iter().enumerate() {
        if o.value.is_empty() || o.value.len() > 64 {
            err(
                format!("{at}.options[{i}].value"),
                "must be 1 to 64 characters".into(),
            );
        } else if !seen.insert(o.value.as_str()) {
            err(
                format!("{at}.options[{i}].value"),
                format!("{:?} is offered twice", o.value),
            );
        }
        if o.label.trim().is_empty() {
            err(
                format!("{at}.options[{i}].label"),
                "must not be empty".into(),
            );
        }
    }
}

fn check_limits(
    max_words: Option<usize>,
    max_chars: Option<usize>,
    at: &str,
    err: &mut impl FnMut(String, String),
) {
    if max_words == Some(0) {
        err(format!("{at}.max_words"), "must be at least 1".into());
    }
    if let Some(n) = max_chars
        && !(1..=crate::rubric::MAX_TEXT_CHARS).contains(&n)
    {
        err(
            format!("{at}.max_chars"),
            format!("must be from 1 to {}", crate::rubric::MAX_TEXT_CHARS),
        );
    }
}

fn check_explanation(q: &Question, at: &str, err: &mut impl FnMut(String, String)) {
    let Some(explanation) = &q.explanation else {
        return;
    };
    let at = format!("{at}.explanation");
    if let Required::When(values) = &explanation.required {
        if values.is_empty() {
            err(
                format!("{at}.required.when"),
                "must name at least one answer".into(),
            );
        }
        for (i, value) in values.iter().enumerate() {
            if !accepts(&q.answer, value) {
                err(
                    format!("{at}.required.when[{i}]"),
                    format!("{value} is not an answer of this question"),
                );
            }
        }
    }
    if explanation.prompt.trim().is_empty() {
        err(format!("{at}.prompt"), "must not be empty".into());
    }
    check_limits(explanation.max_words, explanation.max_chars, &at, err);
}

fn check_swap(subject: Subject, q: &Question, at: &str, err: &mut impl FnMut(String, String)) {
    let at = format!("{at}.swap");
    match (&q.swap, &q.answer) {
        (Swap::None, _) => {
            if subject == Subject::Pair
                && !q.each_response
                && matches!(q.metrics, Some(Role::Preference { .. }))
            {
                err(
                    at,
                    "a preference between A and B must say how it turns when they were shown \
                     swapped (mirror_scale or swap_values)"
                        .into(),
                );
            }
        }
        _ if subject == Subject::Single => {
            err(at, "a single-response rubric is never shown swapped".into());
        }
        _ if q.each_response => {
            err(
                at,
                "answers asked of each response trade sides by themselves: use none".into(),
            );
        }
        (Swap::MirrorScale, Answer::Scale { .. }) => {}
        (Swap::MirrorScale, _) => err(at, "mirror_scale needs a scale answer".into()),
        (Swap::SwapValues(map), Answer::Choice { options }) => {
            let known = |v: &str| options.iter().any(|o| o.value == v);
            for (from, to) in map {
                if !known(from) || !known(to) {
                    err(
                        format!("{at}.swap_values.{from}"),
                        format!("{from:?} and {to:?} must both be options"),
                    );
                } else if map.get(to) != Some(from) {
                    err(
                        format!("{at}.swap_values.{from}"),
                        format!("{to:?} must turn back into {from:?}"),
                    );
                }
            }
        }
        (Swap::SwapValues(_), _) => err(at, "swap_values needs a choice answer".into()),
    }
}

fn check_role(role: &Role, answer: &Answer, at: &str, err: &mut impl FnMut(String, String)) {
    let values_fit = |values: &[Value], err: &mut dyn FnMut(String, String)| {
        for (i, v) in values.iter().enumerate() {
            if !accepts(answer, v) {
                err(
                    format!("{at}.unscaled[{i}]"),
                    format!("{v} is not an answer of this question"),
                );
            }
        }
    };
    match (role, answer) {
        (_, Answer::Text { .. }) => err(at.into(), "free text has no role in metrics".into()),
        // Refused by the answer's own check.
        (_, Answer::MultiChoice { .. }) => {}
        (
            Role::Preference {
                midpoint,
                a,
                b,
                tie,
            },
            Answer::Scale { min, max, .. },
        ) => {
            match midpoint {
                Some(m) if min < m && m < max => {}
                Some(_) => err(
                    format!("{at}.midpoint"),
                    format!("must lie strictly between {min} and {max}"),
                ),
                None => err(
                    format!("{at}.midpoint"),
                    "is required for a scale preference".into(),
                ),
            }
            if a.is_some() || b.is_some() || tie.is_some() {
                err(
                    at.into(),
                    "a scale preference has a midpoint, not a, b and tie".into(),
                );
            }
        }
        (
            Role::Preference {
                midpoint,
                a,
                b,
                tie,
            },
            Answer::Choice { options },
        ) => {
            if midpoint.is_some() {
                err(
                    format!("{at}.midpoint"),
                    "a choice preference names its a, b and tie options instead".into(),
                );
            }
            for (name, value) in [("a", a), ("b", b), ("tie", tie)] {
                match value {
                    Some(v) if options.iter().any(|o| o.value == *v) => {}
                    Some(v) => err(format!("{at}.{name}"), format!("{v:?} is not an option")),
                    None => err(
                        format!("{at}.{name}"),
                        "is required: the option that means this".into(),
                    ),
                }
            }
        }
        (Role::Preference { .. }, Answer::YesNo { .. }) => err(
            at.into(),
            "a preference is a scale or a choice, not yes/no".into(),
        ),
        (Role::Ordinal { unscaled }, Answer::Choice { .. } | Answer::Scale { .. }) => {
            values_fit(unscaled, err)
        }
        (Role::Ordinal { .. }, Answer::YesNo { .. }) => {
            err(at.into(), "yes/no has no order: use nominal".into())
        }
        (Role::Nominal { unscaled }, _) => values_fit(unscaled, err),
        (Role::Score, Answer::Scale { .. }) => {}
        (Role::Score, _) => err(at.into(), "a score is a number: use it on a scale".into()),
    }
}

/// A ladder's rules: it names its question and its level 0, and its criteria are
/// distinct required yes/no questions with no explanation of their own (the form asks
/// for the level reached, once), each on no other ladder.
fn check_ladder(
    rubric: &Rubric,
    derived: &crate::rubric::Derived,
    ladder: &crate::rubric::Ladder,
    at: &str,
    complete: bool,
    long_help: &str,
    err: &mut impl FnMut(String, String),
) {
    for (field, text) in [("label", &ladder.label), ("none", &ladder.none)] {
        if text.trim().is_empty() {
            err(format!("{at}.ladder.{field}"), "must not be empty".into());
        }
    }
    if ladder.help.chars().count() > MAX_HELP_CHARS {
        err(format!("{at}.ladder.help"), long_help.to_owned());
    }
    let levels = derived.sum_of.len();
    if !(2..crate::rubric::MAX_OPTIONS).contains(&levels) {
        err(
            format!("{at}.sum_of"),
            format!(
                "a ladder has 2 to {} criteria, one per level above 0",
                crate::rubric::MAX_OPTIONS - 1
            ),
        );
    }
    for (j, key) in derived.sum_of.iter().enumerate() {
        let path = format!("{at}.sum_of[{j}]");
        if derived.sum_of[..j].contains(key) {
            err(path, format!("{key:?} is already a level of this ladder"));
            continue;
        }
        let other = rubric
            .derived
            .iter()
            .find(|o| !std::ptr::eq(*o, derived) && o.ladder.is_some() && o.sum_of.contains(key));
        if let Some(other) = other {
            err(
                path,
                format!("{key:?} is a level of the ladder {:?} too", other.key),
            );
            continue;
        }
        // A name of a question that did not read is not known to be wrong.
        let Some(question) = rubric.question(key) else {
            continue;
        };
        if complete
            && (!matches!(question.answer, Answer::YesNo { .. })
                || !question.required
                || question.explanation.is_some())
        {
            err(
                path,
                format!(
                    "{key:?} must be a required yes/no question without an explanation of \
                     its own: the form asks once for the highest level reached"
                ),
            );
        }
    }
}

/// The longest label of a skip reason.
const MAX_REASON_LABEL_CHARS: usize = 200;

/// A rubric's skip reasons: at most as many as a question's options, each a distinct
/// value of the stored form with a label.
fn check_skip_reasons(rubric: &Rubric, err: &mut impl FnMut(String, String)) {
    if rubric.skip_reasons.len() > crate::rubric::MAX_OPTIONS {
        err(
            "skip_reasons".into(),
            format!("must list at most {} reasons", crate::rubric::MAX_OPTIONS),
        );
    }
    let mut seen = BTreeSet::new();
    for (i, reason) in rubric.skip_reasons.iter().enumerate() {
        let at = format!("skip_reasons[{i}]");
        if !crate::lifecycle::SkipReason::is_value(&reason.value) {
            err(
                format!("{at}.value"),
                "must be 1 to 64 lower-case letters, digits or underscores, starting with a \
                 letter (it is stored with the skip)"
                    .into(),
            );
        } else if !seen.insert(reason.value.as_str()) {
            err(
                format!("{at}.value"),
                format!("{:?} is listed twice", reason.value),
            );
        }
        let length = reason.label.trim().chars().count();
        if length == 0 || length > MAX_REASON_LABEL_CHARS {
            err(
                format!("{at}.label"),
                format!("must be 1 to {MAX_REASON_LABEL_CHARS} characters"),
            );
        }
    }
}
