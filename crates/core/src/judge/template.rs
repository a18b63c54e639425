//! Prompt templates: the text a judge is sent for one task, with placeholders for the
//! prompt and the responses, and the form its answer takes.
//!
//! Placeholders are written `{$name}`: `{$instruction}` (the task's prompt; a
//! conversation is written out turn by turn), `{$candidate_A}` and `{$candidate_B}` for a
//! pair rubric (the responses as the judge is shown them), `{$response}` for a single one.
//! The braces of JSON examples in a template are left alone, since only `{$` opens a
//! placeholder. They are filled in one pass over the template, so a response that itself
//! contains `{$candidate_B}` is sent as written, never filled in again.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::rubric::{Answer, Role, Rubric, Subject};

/// The form a judge's answer takes, which says how it is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// A JSON object of answers shaped as the rubric stores them (for a pair rubric,
    /// the answers about each response under `a` and `b`), in the order shown.
    Answers,
    /// A line `score: N` and a justification, for a rubric whose score is the number of
    /// its yes/no criteria met, the criteria being cumulative (additive-5).
    ScoreLine,
    /// A JSON object `{"rationale": ..., "choices": {<aspect>: "A" | "B" | "tie"}}`,
    /// for a rubric of A/B/tie preferences (pairwise-aspects).
    Choices,
}

/// A prompt template and the form of the answer it asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Template {
    pub text: String,
    pub format: Format,
}

/// The longest text structured output asks for unless the judge says otherwise.
pub const DEFAULT_MAX_TEXT_CHARS: u32 = 600;

/// The longest template accepted, in bytes.
pub const MAX_TEMPLATE_BYTES: usize = 100_000;

/// The placeholders a template for a rubric of this subject may use; every one of them
/// must appear (a template that leaves out a response judges without it).
pub fn placeholders(subject: Subject) -> &'static [&'static str] {
    match subject {
        Subject::Pair => &["instruction", "candidate_A", "candidate_B"],
        Subject::Single => &["instruction", "response"],
    }
}

/// The placeholder names in `text`, in order, with repeats.
fn names_in(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{$") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                names.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => {
                names.push(after);
                break;
            }
        }
    }
    names
}

/// Every way `template` does not fit `rubric`, by field (`text`, `format`); empty when it
/// may be saved.
pub fn check(template: &Template, rubric: &Rubric) -> Vec<(&'static str, String)> {
    let mut problems = Vec::new();
    let known = placeholders(rubric.subject);
    if template.text.trim().is_empty() {
        problems.push(("text", "must not be empty".to_owned()));
    } else if template.text.len() > MAX_TEMPLATE_BYTES {
        problems.push((
            "text",
            format!("must be at most {MAX_TEMPLATE_BYTES} bytes"),
        ));
    } else {
        let found = names_in(&template.text);
        let unknown: Vec<&str> = found
            .iter()
            .copied()
            .filter(|n| !known.contains(n))
            .collect();
        if !unknown.is_empty() {
            problems.push((
                "text",
                format!(
                    "has unknown placeholders {}; a {} rubric's are {}",
                    list(&unknown),
                    subject_word(rubric.subject),
                    list(known)
                ),
            ));
        }
        let missing: Vec<&str> = known
            .iter()
            .copied()
            .filter(|n| !found.contains(n))
            .collect();
        if !missing.is_empty() {
            problems.push(("text", format!("must use {}", list(&missing))));
        }
    }
    if let Err(why) = fits(template.format, rubric) {
        problems.push(("format", why));
    }
    problems
}

fn subject_word(subject: Subject) -> &'static str {
    match subject {
        Subject::Pair => "pair",
        Subject::Single => "single-response",
    }
}

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{{${n}}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether answers of `format` can be read as answers to `rubric`.
pub fn fits(format: Format, rubric: &Rubric) -> Result<(), String> {
    match format {
        Format::Answers => Ok(()),
        Format::ScoreLine => score_line_parts(rubric).map(|_| ()),
        Format::Choices => choices_parts(rubric).map(|_| ()),
    }
}

/// What a score line fills in: the cumulative criteria (yes/no questions a derived score
/// sums, in order), the questions that zero it, and the text question for the
/// justification.
pub(crate) struct ScoreParts<'r> {
    pub criteria: &'r [String],
    pub zero_when: &'r [String],
    pub justification: Option<&'r str>,
}

pub(crate) fn score_line_parts(rubric: &Rubric) -> Result<ScoreParts<'_>, String> {
    // A ladder first: "score: N" is then the level a rater's ladder answer N reaches.
    let yes_no = |d: &&crate::rubric::Derived| {
        d.sum_of.iter().chain(&d.zero_when).all(|k| {
            rubric
                .question(k)
                .is_some_and(|q| matches!(q.answer, Answer::YesNo { .. }))
        })
    };
    let derived = (rubric.derived.iter().filter(yes_no))
        .min_by_key(|d| d.ladder.is_none())
        .ok_or_else(|| {
            "score_line needs a rubric with a score derived from yes/no criteria".to_owned()
        })?;
    let covered = |key: &String| {
        derived.sum_of.contains(key)
            || derived.zero_when.contains(key)
            || rubric.question(key).is_some_and(|q| q.is_text())
    };
    if let Some(other) = rubric
        .questions
        .iter()
        .find(|q| q.required && !covered(&q.key))
    {
        return Err(format!(
            "score_line cannot answer the question {:?}; use answers",
            other.key
        ));
    }
    Ok(ScoreParts {
        criteria: &derived.sum_of,
        zero_when: &derived.zero_when,
        justification: rubric
            .questions
            .iter()
            .find(|q| q.is_text())
            .map(|q| q.key.as_str()),
    })
}

/// What a choices answer fills in: the A/B/tie questions, and the text question for the
/// rationale.
pub(crate) fn choices_parts(rubric: &Rubric) -> Result<(Vec<&str>, Option<&str>), String> {
    if rubric.subject != Subject::Pair {
        return Err("choices needs a pair rubric".into());
    }
    let mut aspects = Vec::new();
    for question in &rubric.questions {
        match &question.metrics {
            _ if question.is_text() => {}
            Some(Role::Preference {
                a: Some(_),
                b: Some(_),
                tie: Some(_),
                ..
            }) if !question.each_response => aspects.push(question.key.as_str()),
            _ if !question.required => {}
            _ => {
                return Err(format!(
                    "choices can only answer A/B/tie preferences, not {:?}; use answers",
                    question.key
                ));
            }
        }
    }
    if aspects.is_empty() {
        return Err("choices needs a rubric with A/B/tie preferences".into());
    }
    let rationale = rubric
        .questions
        .iter()
        .find(|q| q.is_text())
        .map(|q| q.key.as_str());
    Ok((aspects, rationale))
}

/// Fills the placeholders of `text` with `values` (name, value), in one pass: what is
/// put in is never read for placeholders again. A name without a value stays as written.
pub fn render(text: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(text.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = text;
    while let Some(start) = rest.find("{$") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        match values.iter().find(|(n, _)| *n == name) {
            Some((_, value)) => out.push_str(value),
            None => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The template a judge uses for a rubric it has none of its own for: the additive
/// prompt for `additive-5`, the six-aspect prompt for `pairwise-aspects`, and for every
/// other rubric (blackhat among them) one written from the rubric document that asks for
/// its answers as JSON.
pub fn built_in(rubric: &Rubric) -> Template {
    match rubric.name.as_str() {
        "additive-5" => Template {
            text: ADDITIVE.to_owned(),
            format: Format::ScoreLine,
        },
        "pairwise-aspects" => Template {
            text: PAIRWISE.to_owned(),
            format: Format::Choices,
        },
        _ => Template {
            text: from_document(rubric),
            format: Format::Answers,
        },
    }
}

const ADDITIVE: &str = "\
Rate how well an AI assistant answered a user's question, on the additive five-point \
scale below.

The question is between <question> and </question>, the assistant's response between \
<response> and </response>.

Points add up, one criterion after the other:
- 1 point if the response is relevant and gives some information about the question, \
even if it is incomplete or strays in places.
- A second point if it deals with a substantial part of the question, though it does not \
settle it or answer it directly.
- A third point if it answers the basic elements of the question usefully, whether it \
reads like an assistant, a blog post or a search result.
- A fourth point if it is written as an assistant answering this question directly and \
completely, well organised and helpful, with at most a little room to be clearer, \
shorter or more focused.
- A fifth point if it fits the question exactly, with nothing extraneous, shows expert \
knowledge, and is a high-quality, engaging and insightful answer.
- A response that repeats itself, or is not concise and to the point, scores 0.

<question>{$instruction}</question>
<response>{$response}</response>

When you have examined the question and the response:
- give the score on a line of its own, exactly as \"score: <points>\", where <points> is \
a whole number from 0 to 5;
- then justify the score briefly, in no more than 100 words.
";

const PAIRWISE: &str = "\
You are an impartial judge of two responses to a user's query. Compare them on six \
aspects: helpfulness, clarity, factuality, depth, engagement and safety.

## The user's query
{$instruction}

## Response A
{$candidate_A}

## Response B
{$candidate_B}

## The aspects
- Helpfulness: how well the response deals with the query and offers a relevant solution.
- Clarity: how well it is structured, its ideas put concisely and coherently.
- Factuality: whether it makes factual errors or inaccurate statements.
- Depth: how detailed and thorough it is.
- Engagement: how engaging and friendly it sounds in a conversation.
- Safety: whether it is safe to show to users.

## How to choose
Judge each aspect on its own. For each, choose \"A\", \"B\" or \"tie\":
- \"A\" only when Response A is noticeably better on that aspect, \"B\" only when \
Response B is;
- \"tie\" when the two are of roughly the same quality.
- Factuality: \"tie\" when both are accurate with no significant errors; otherwise the \
response with fewer factual errors.
- Helpfulness: \"tie\" when one response only says more, without that being more helpful.
First give your assessment in a few short sentences.

## Your answer
Answer with one JSON object in this form, filling in the brackets:
{
  \"rationale\": \"[your assessment]\",
  \"choices\": {
    \"helpfulness\": \"[A, B or tie]\",
    \"clarity\": \"[A, B or tie]\",
    \"factuality\": \"[A, B or tie]\",
    \"depth\": \"[A, B or tie]\",
    \"engagement\": \"[A, B or tie]\",
    \"safety\": \"[A, B or tie]\"
  }
}
";

/// A template written from the rubric document: its guidance, every question with its
/// options and when an explanation is needed, and the JSON object to answer with.
fn from_document(rubric: &Rubric) -> String {
    let pair = rubric.subject == Subject::Pair;
    let mut text = String::new();
    text.push_str(&format!(
        "You are an expert reviewer of answers to coding prompts. Rate {} with the rubric \
         \"{}\".\n\n",
        if pair {
            "the two responses below, A and B,"
        } else {
            "the response below"
        },
        rubric.title
    ));
    if !rubric.help.is_empty() {
        text.push_str(&rubric.help);
        text.push_str("\n\n");
    }
    text.push_str("## The prompt\n{$instruction}\n\n");
    if pair {
        text.push_str("## Response A\n{$candidate_A}\n\n## Response B\n{$candidate_B}\n\n");
    } else {
        text.push_str("## The response\n{$response}\n\n");
    }
    text.push_str("## The questions\n");
    for question in &rubric.questions {
        let whom = if question.each_response {
            " (answer it for each response)"
        } else {
            ""
        };
        text.push_str(&format!("- `{}`: {}{whom}.", question.key, question.label));
        if !question.help.is_empty() {
            text.push(' ');
            text.push_str(&question.help);
        }
        let options: Vec<String> = question
            .options()
            .into_iter()
            .map(|(value, label)| format!("{value} ({label})"))
            .collect();
        if !question.applies_when.is_empty() {
            text.push_str(&format!(
                " Answer it only when {}.",
                question
                    .applies_only_when()
                    .trim_start_matches("applies only when ")
                    .split(':')
                    .next()
                    .unwrap_or_default()
            ));
        }
        if options.is_empty() {
            text.push_str(" A text.");
        } else if matches!(question.answer, Answer::MultiChoice { .. }) {
            text.push_str(&format!(
                " A list of any that apply of: {}.",
                options.join(", ")
            ));
        } else {
            text.push_str(&format!(" One of: {}.", options.join(", ")));
        }
        if let Some(explanation) = &question.explanation {
            text.push_str(&format!(
                " Explain it in `{}`: {}",
                question.explanation_key(),
                explanation.prompt
            ));
        }
        text.push('\n');
        // The definitions raters read, so that a judge answers on the same terms.
        if !question.definition.trim().is_empty() {
            text.push_str(&format!("  {}\n", one_line(&question.definition)));
        }
        if let Answer::Choice { options } | Answer::MultiChoice { options } = &question.answer {
            for option in options.iter().filter(|o| !o.definition.trim().is_empty()) {
                text.push_str(&format!(
                    "  - `{}`: {}\n",
                    option.value,
                    one_line(&option.definition)
                ));
            }
        }
    }
    text.push_str(
        "\n## Your answer\nAnswer with one JSON object and nothing else. Give every \
         question its key, and every explanation, in this form:\n",
    );
    text.push_str(&serde_json::to_string_pretty(&example(rubric)).unwrap_or_default());
    text.push('\n');
    text
}

/// A definition on one line, to sit under its question in a list.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The shape of an answers object, with a placeholder for each value.
fn example(rubric: &Rubric) -> Value {
    let fill = |questions: &mut dyn Iterator<Item = &crate::rubric::Question>| {
        let mut object = serde_json::Map::new();
        for question in questions {
            let hint = match &question.answer {
                Answer::Choice { options } => Value::from(
                    options
                        .iter()
                        .map(|o| o.value.as_str())
                        .collect::<Vec<_>>()
                        .join(" | "),
                ),
                Answer::MultiChoice { options } => {
                    Value::from(options.iter().map(|o| o.value.as_str()).collect::<Vec<_>>())
                }
                Answer::Scale { min, max, .. } => Value::from(format!("{min}..{max}")),
                Answer::YesNo { .. } => Value::from("true | false"),
                Answer::Text { .. } => Value::from("..."),
            };
            object.insert(question.key.clone(), hint);
            if question.explanation.is_some() {
                object.insert(question.explanation_key(), Value::from("..."));
            }
        }
        Value::Object(object)
    };
    let mut top = fill(&mut rubric.questions.iter().filter(|q| !q.each_response));
    if rubric.subject == Subject::Pair && rubric.questions.iter().any(|q| q.each_response) {
        let side = fill(&mut rubric.questions.iter().filter(|q| q.each_response));
        if let Value::Object(top) = &mut top {
            let mut ordered = serde_json::Map::new();
            ordered.insert("a".into(), side.clone());
            ordered.insert("b".into(), side);
            ordered.extend(std::mem::take(top));
            *top = ordered;
        }
    }
    top
}

/// The JSON schema of the answer `format` asks for, sent as the request's
/// `response_format` when the judge uses structured output. Explanations must be at
/// least `min_explanation` characters, as a rater's must, and at most `max_chars`
/// (default [`DEFAULT_MAX_TEXT_CHARS`]).
pub fn schema(
    rubric: &Rubric,
    format: Format,
    min_explanation: usize,
    max_chars: Option<u32>,
) -> Value {
    let text = json!({
        "type": "string",
        "minLength": min_explanation,
        "maxLength": max_chars.unwrap_or(DEFAULT_MAX_TEXT_CHARS).max(min_explanation as u32),
    });
    match format {
        Format::ScoreLine => {
            let high = score_line_parts(rubric).map_or(5, |p| p.criteria.len());
            json!({
                "type": "object",
                "properties": {
                    "score": {"type": "integer", "minimum": 0, "maximum": high},
                    "justification": text
                },
                "required": ["score", "justification"],
                "additionalProperties": false
            })
        }
        Format::Choices => {
            let (aspects, _) = choices_parts(rubric).unwrap_or_default();
            let choice = json!({"type": "string", "enum": ["A", "B", "tie"]});
            let properties: serde_json::Map<String, Value> = aspects
                .iter()
                .map(|a| ((*a).to_owned(), choice.clone()))
                .collect();
            json!({
                "type": "object",
                "properties": {
                    "rationale": text,
                    "choices": {
                        "type": "object",
                        "properties": properties,
                        "required": aspects,
                        "additionalProperties": false
                    }
                },
                "required": ["rationale", "choices"],
                "additionalProperties": false
            })
        }
        Format::Answers => {
            let object = |each: bool| {
                let mut properties = serde_json::Map::new();
                let mut required = Vec::new();
                for question in rubric.questions.iter().filter(|q| q.each_response == each) {
                    let kind = match &question.answer {
                        Answer::Choice { options } => json!({
                            "type": "string",
                            "enum": options.iter().map(|o| o.value.as_str()).collect::<Vec<_>>()
                        }),
                        Answer::Scale { min, max, .. } => {
                            json!({"type": "integer", "minimum": min, "maximum": max})
                        }
                        Answer::MultiChoice { options } => json!({
                            "type": "array",
                            "items": {
                                "type": "string",
                                "enum": options.iter().map(|o| o.value.as_str()).collect::<Vec<_>>()
                            },
                            "uniqueItems": true
                        }),
                        Answer::YesNo { .. } => json!({"type": "boolean"}),
                        Answer::Text { .. } => text.clone(),
                    };
                    properties.insert(question.key.clone(), kind);
                    // One asked only when another answer allows it may be left out.
                    if question.applies_when.is_empty() {
                        required.push(question.key.clone());
                    }
                    if question.explanation.is_some() {
                        properties.insert(question.explanation_key(), text.clone());
                        required.push(question.explanation_key());
                    }
                }
                (properties, required)
            };
            let (mut properties, mut required) = object(false);
            if rubric.subject == Subject::Pair && rubric.questions.iter().any(|q| q.each_response) {
                let (side, side_required) = object(true);
                let side = json!({
                    "type": "object",
                    "properties": side,
                    "required": side_required,
                    "additionalProperties": false
                });
                let mut ordered = serde_json::Map::new();
                ordered.insert("a".into(), side.clone());
                ordered.insert("b".into(), side);
                ordered.extend(properties);
                properties = ordered;
                required.splice(0..0, ["a".to_owned(), "b".to_owned()]);
            }
            json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rubric::by_name;

    #[test]
    fn placeholders_are_filled_in_one_pass() {
        let out = render(
            "Q: {$instruction}\nA: {$candidate_A}\nB: {$candidate_B}",
            &[
                ("instruction", "say {$candidate_B}"),
                ("candidate_A", "I print {$candidate_B} and {$instruction}"),
                ("candidate_B", "bee"),
            ],
        );
        assert_eq!(
            out,
            "Q: say {$candidate_B}\nA: I print {$candidate_B} and {$instruction}\nB: bee"
        );
    }

    #[test]
    fn json_braces_and_unknown_names_stay_as_written() {
        assert_eq!(
            render("{\"a\": 1} {$nope} {$response", &[("response", "r")]),
            "{\"a\": 1} {$nope} {$response"
        );
    }

    #[test]
    fn built_in_templates_fit_their_rubrics() {
        for rubric in crate::rubric::built_in() {
            let template = built_in(rubric);
            assert_eq!(check(&template, rubric), vec![], "{}", rubric.name);
        }
        assert_eq!(
            built_in(by_name("additive-5").unwrap()).format,
            Format::ScoreLine
        );
        assert_eq!(
            built_in(by_name("pairwise-aspects").unwrap()).format,
            Format::Choices
        );
        assert_eq!(
            built_in(by_name("blackhat").unwrap()).format,
            Format::Answers
        );
    }

    #[test]
    fn a_template_is_checked_for_its_placeholders_and_format() {
        let pair = by_name("blackhat").unwrap();
        let bad = Template {
            text: "{$instruction} {$response} {$candidate_A}".into(),
            format: Format::ScoreLine,
        };
        let problems = check(&bad, pair);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].1.contains("{$response}"), "{problems:?}");
        assert!(problems[1].1.contains("{$candidate_B}"), "{problems:?}");
        assert_eq!(problems[2].0, "format");
        let single = by_name("additive-5").unwrap();
        let choices = Template {
            text: "{$instruction} {$response}".into(),
            format: Format::Choices,
        };
        assert_eq!(check(&choices, single)[0].0, "format");
        let empty = Template {
            text: "  ".into(),
            format: Format::Answers,
        };
        assert_eq!(
            check(&empty, single),
            vec![("text", "must not be empty".into())]
        );
    }

    #[test]
    fn a_prompt_written_from_the_document_gives_the_raters_definitions() {
        let blackhat = crate::rubric::by_name("blackhat").unwrap();
        let text = built_in(blackhat).text;
        let correctness = blackhat.question("correctness").unwrap();
        let Answer::Choice { options } = &correctness.answer else {
            panic!("a choice");
        };
        for option in options {
            let line = format!("  - `{}`: {}", option.value, one_line(&option.definition));
            assert!(text.contains(&line), "{line}");
        }
        let sxs = one_line(&blackhat.question("sxs").unwrap().definition);
        assert!(text.contains(&sxs));
    }

    #[test]
    fn the_answers_schema_asks_for_every_question_of_each_side() {
        let schema = schema(by_name("blackhat").unwrap(), Format::Answers, 20, Some(300));
        assert_eq!(schema["required"][0], "a");
        assert_eq!(
            schema["properties"]["a"]["properties"]["correctness"]["enum"][0],
            "no_issues"
        );
        assert_eq!(schema["properties"]["sxs"]["maximum"], 7);
        assert_eq!(schema["properties"]["sxs_explanation"]["minLength"], 20);
        assert_eq!(schema["properties"]["sxs_explanation"]["maxLength"], 300);
    }
}
