//! The JSON schema of a judge's answer, sent as `response_format` under structured
//! output: what the rubric asks and no more, in a length a small model can write within
//! its token limit.

use serde_json::{Value, json};

use super::template::{DEFAULT_MAX_TEXT_CHARS, Format, choices_parts, score_line_parts};
use crate::rubric::{Answer, Answers, Rubric, Subject};

/// The JSON schema of the answer `format` asks for, sent as the request's
/// `response_format` when the judge uses structured output.
///
/// It asks for what the rubric asks of a rater and no more, in a length a small model
/// can write within its token limit:
/// - an explanation is required exactly where the rubric requires it (a side's answers
///   are one alternative per kind of answer: `correctness` of `major_issues` with its
///   explanation, of `no_issues` without), and a question asked only after some answers
///   appears only with them;
/// - each text is at least `min_explanation` characters, as a rater's must be, and at
///   most [`text_cap`] allows.
pub fn schema(
    rubric: &Rubric,
    format: Format,
    min_explanation: usize,
    max_chars: Option<u32>,
    max_tokens: Option<u32>,
) -> Value {
    let limits = Limits::new(rubric, format, min_explanation, max_chars, max_tokens);
    match format {
        Format::ScoreLine => {
            let parts = score_line_parts(rubric).ok();
            let high = parts.as_ref().map_or(5, |p| p.criteria.len());
            let justification = parts
                .and_then(|p| p.justification)
                .and_then(|key| rubric.question(key));
            json!({
                "type": "object",
                "properties": {
                    "score": {"type": "integer", "minimum": 0, "maximum": high},
                    "justification": limits.text(justification.and_then(text_limits))
                },
                "required": ["score", "justification"],
                "additionalProperties": false
            })
        }
        Format::Choices => {
            let (aspects, rationale) = choices_parts(rubric).unwrap_or_default();
            let rationale = rationale.and_then(|key| rubric.question(key));
            let choice = json!({"type": "string", "enum": ["A", "B", "tie"]});
            let properties: serde_json::Map<String, Value> = aspects
                .iter()
                .map(|a| ((*a).to_owned(), choice.clone()))
                .collect();
            json!({
                "type": "object",
                "properties": {
                    "rationale": limits.text(rationale.and_then(text_limits)),
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
            let pair = rubric.subject == Subject::Pair;
            let sides = pair && rubric.questions.iter().any(|q| q.each_response);
            let side = sides.then(|| {
                one_of(
                    variants(rubric, true, &limits)
                        .into_iter()
                        .map(Variant::into_schema)
                        .collect(),
                )
            });
            let whole = variants(rubric, !pair, &limits)
                .into_iter()
                .map(|mut variant| {
                    if let Some(side) = &side {
                        variant.first(&[("a", side.clone()), ("b", side.clone())]);
                    }
                    variant.into_schema()
                })
                .collect();
            one_of(whole)
        }
    }
}

/// The character limits a rubric sets on a text: its own (a word limit at four
/// characters a word, which holds for English prose with room to spare) and those of
/// the explanation box.
fn text_limits(question: &crate::rubric::Question) -> Option<usize> {
    match &question.answer {
        Answer::Text {
            max_words,
            max_chars,
        } => tighter(max_words.map(|w| w * CHARS_PER_WORD), *max_chars),
        _ => None,
    }
}

fn explanation_limits(explanation: &crate::rubric::Explanation) -> Option<usize> {
    tighter(
        explanation.max_words.map(|w| w * CHARS_PER_WORD),
        explanation.max_chars,
    )
}

fn tighter(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Characters a word of a word limit is allowed under structured output.
const CHARS_PER_WORD: usize = 4;

/// How the texts of one answer share its token limit: the characters each may have.
struct Limits {
    min: usize,
    /// The judge's own cap, or within the token limit, whichever is less.
    each: usize,
}

impl Limits {
    /// A token is taken as 3 characters of text (English runs nearer 4, code and JSON
    /// less), and the rest of the answer (keys, options, punctuation) as 2 characters a
    /// token; what the token limit leaves is shared equally by the most texts one
    /// answer can hold.
    fn new(
        rubric: &Rubric,
        format: Format,
        min_explanation: usize,
        max_chars: Option<u32>,
        max_tokens: Option<u32>,
    ) -> Self {
        let cap = max_chars.unwrap_or(DEFAULT_MAX_TEXT_CHARS) as usize;
        let each = match max_tokens {
            Some(tokens) => {
                let (texts, skeleton) = answer_size(rubric, format);
                let left = (tokens as usize).saturating_sub(skeleton.div_ceil(2));
                (left * 3 / texts.max(1)).min(cap)
            }
            None => cap,
        };
        Self {
            min: min_explanation,
            each,
        }
    }

    /// A text's schema, within the rubric's own limit; never below the shortest
    /// explanation allowed, which the rubric's rules would refuse anyway.
    fn text(&self, own: Option<usize>) -> Value {
        let max = own
            .map_or(self.each, |own| own.min(self.each))
            .max(self.min);
        json!({"type": "string", "minLength": self.min, "maxLength": max})
    }
}

/// The most texts one answer of `format` holds, and the length of the rest of its
/// longest form.
fn answer_size(rubric: &Rubric, format: Format) -> (usize, usize) {
    let longest = |question: &crate::rubric::Question| -> usize {
        let options = question.options();
        let widest = options.iter().map(|(v, _)| v.to_string().len()).max();
        match &question.answer {
            Answer::MultiChoice { .. } => {
                options.iter().map(|(v, _)| v.to_string().len() + 1).sum()
            }
            _ => widest.unwrap_or(2),
        }
    };
    match format {
        Format::ScoreLine => (1, 40),
        Format::Choices => {
            let (aspects, _) = choices_parts(rubric).unwrap_or_default();
            (1, 40 + aspects.iter().map(|a| a.len() + 12).sum::<usize>())
        }
        Format::Answers => {
            let sides = if rubric.subject == Subject::Pair {
                2
            } else {
                1
            };
            let mut texts = 0;
            let mut skeleton = 2;
            for question in &rubric.questions {
                let times = if question.each_response { sides } else { 1 };
                skeleton += times * (question.key.len() + 6 + longest(question));
                if question.is_text() {
                    texts += times;
                }
                if question.explanation.is_some() {
                    texts += times;
                    skeleton += times * (question.key.len() + 18);
                }
            }
            (texts, skeleton + 20)
        }
    }
}

/// One form an answers object may take: its properties in order, and those required.
struct Variant {
    properties: serde_json::Map<String, Value>,
    required: Vec<String>,
}

impl Variant {
    /// Puts these properties first, required (a pair's sides before its own answers).
    fn first(&mut self, properties: &[(&str, Value)]) {
        let mut ordered = serde_json::Map::new();
        for (key, value) in properties {
            ordered.insert((*key).to_owned(), value.clone());
        }
        ordered.extend(std::mem::take(&mut self.properties));
        self.properties = ordered;
        self.required
            .splice(0..0, properties.iter().map(|(k, _)| (*k).to_owned()));
    }

    fn into_schema(self) -> Value {
        json!({
            "type": "object",
            "properties": self.properties,
            "required": self.required,
            "additionalProperties": false
        })
    }
}

fn one_of(mut schemas: Vec<Value>) -> Value {
    if schemas.len() == 1 {
        schemas.remove(0)
    } else {
        json!({"anyOf": schemas})
    }
}

/// The most alternatives an answers object is split into; a rubric with more kinds of
/// answer than this gets one form in which conditional explanations may be left out.
const MAX_VARIANTS: usize = 32;

/// The forms the answers to the questions asked of each response (`each`), or of the
/// whole, may take: one per combination of the kinds of answer that change what else is
/// asked (an explanation required, a question that applies).
fn variants(rubric: &Rubric, each: bool, limits: &Limits) -> Vec<Variant> {
    let questions: Vec<&crate::rubric::Question> = rubric
        .questions
        .iter()
        .filter(|q| q.each_response == each)
        .collect();
    // Each deciding question's options, grouped by what they change.
    let mut deciding: Vec<(&str, Vec<Vec<Value>>)> = Vec::new();
    for question in &questions {
        let decides_explanation = matches!(
            question.explanation.as_ref().map(|e| &e.required),
            Some(crate::rubric::Required::When(_))
        );
        let decides_others = questions
            .iter()
            .any(|q| q.applies_when.contains_key(&question.key));
        if !(decides_explanation || decides_others) {
            continue;
        }
        let mut classes: Vec<(Vec<bool>, Vec<Value>)> = Vec::new();
        for (value, _) in question.options() {
            let mut alone = Answers::new();
            alone.insert(question.key.clone(), value.clone());
            let mut signature = vec![question.needs_explanation(&value)];
            signature.extend(questions.iter().map(|q| q.applies(&alone)));
            match classes.iter_mut().find(|(s, _)| *s == signature) {
                Some((_, values)) => values.push(value),
                None => classes.push((signature, vec![value])),
            }
        }
        deciding.push((&question.key, classes.into_iter().map(|(_, v)| v).collect()));
    }
    let count: usize = deciding.iter().map(|(_, c)| c.len()).product();
    let combinations: Vec<Vec<usize>> = if deciding.is_empty() || count > MAX_VARIANTS {
        vec![Vec::new()]
    } else {
        (0..count)
            .map(|mut n| {
                deciding
                    .iter()
                    .map(|(_, classes)| {
                        let pick = n % classes.len();
                        n /= classes.len();
                        pick
                    })
                    .collect()
            })
            .collect()
    };
    combinations
        .into_iter()
        .map(|picks| {
            let chosen: Vec<(&str, &Vec<Value>)> = deciding
                .iter()
                .zip(&picks)
                .map(|((key, classes), &pick)| (*key, &classes[pick]))
                .collect();
            let mut sample = Answers::new();
            for (key, values) in &chosen {
                sample.insert((*key).to_owned(), values[0].clone());
            }
            let mut variant = Variant {
                properties: serde_json::Map::new(),
                required: Vec::new(),
            };
            for question in &questions {
                if !chosen.is_empty() && !question.applies(&sample) {
                    continue;
                }
                let only = chosen
                    .iter()
                    .find(|(key, _)| *key == question.key)
                    .map(|(_, values)| values.as_slice());
                variant
                    .properties
                    .insert(question.key.clone(), kind(question, only, limits));
                if question.required || question.applies_when.is_empty() {
                    variant.required.push(question.key.clone());
                }
                let Some(explanation) = &question.explanation else {
                    continue;
                };
                let required = match (&explanation.required, only) {
                    (crate::rubric::Required::Always, _) => Some(true),
                    (crate::rubric::Required::When(_), Some(values)) => {
                        question.needs_explanation(&values[0]).then_some(true)
                    }
                    // Too many kinds to spell out: the explanation may be left out.
                    (crate::rubric::Required::When(_), None) => Some(false),
                    (crate::rubric::Required::Optional, _) => Some(false),
                };
                if let Some(required) = required {
                    let key = question.explanation_key();
                    variant
                        .properties
                        .insert(key.clone(), limits.text(explanation_limits(explanation)));
                    if required {
                        variant.required.push(key);
                    }
                }
            }
            variant
        })
        .collect()
}

/// The schema of one question's answer, its options narrowed to `only` when given.
fn kind(question: &crate::rubric::Question, only: Option<&[Value]>, limits: &Limits) -> Value {
    let values = |options: &[crate::rubric::Choice]| -> Vec<Value> {
        options
            .iter()
            .map(|o| Value::from(o.value.as_str()))
            .filter(|v| only.is_none_or(|only| only.contains(v)))
            .collect()
    };
    match &question.answer {
        Answer::Choice { options } => json!({"type": "string", "enum": values(options)}),
        Answer::Scale { min, max, .. } => match only {
            Some(only) => json!({"type": "integer", "enum": only}),
            None => json!({"type": "integer", "minimum": min, "maximum": max}),
        },
        Answer::MultiChoice { options } => json!({
            "type": "array",
            "items": {"type": "string", "enum": values(options)},
            "uniqueItems": true
        }),
        Answer::YesNo { .. } => match only {
            Some(only) => json!({"type": "boolean", "enum": only}),
            None => json!({"type": "boolean"}),
        },
        Answer::Text { .. } => limits.text(text_limits(question)),
    }
}

/// What a prompt asking for a `score:` line adds under structured output, where the
/// schema has the model answer in JSON: the same answer in that form, so the prompt and
/// the schema ask for the same thing.
pub fn structured_note(rubric: &Rubric, format: Format) -> Option<String> {
    if format != Format::ScoreLine {
        return None;
    }
    let parts = score_line_parts(rubric).ok()?;
    let words = parts
        .justification
        .and_then(|key| rubric.question(key))
        .and_then(|q| match &q.answer {
            Answer::Text { max_words, .. } => *max_words,
            _ => None,
        })
        .map_or(String::new(), |w| format!(", in at most {w} words"));
    Some(format!(
        "\n\nGive the score and the justification as one JSON object: \
         {{\"score\": <points, a whole number from 0 to {}>, \"justification\": \"<why{words}>\"}}.\n",
        parts.criteria.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rubric::by_name;

    #[test]
    fn the_answers_schema_asks_for_every_question_of_each_side() {
        let schema = schema(
            by_name("blackhat").unwrap(),
            Format::Answers,
            20,
            Some(300),
            None,
        );
        assert_eq!(schema["required"][0], "a");
        assert_eq!(schema["required"][1], "b");
        // One form per kind of answer: 2 x 2 x 2 for when the three explanations are due.
        let forms = schema["properties"]["a"]["anyOf"].as_array().unwrap();
        assert_eq!(forms.len(), 8);
        let mut seen = std::collections::BTreeSet::new();
        for form in forms {
            let enums = &form["properties"]["correctness"]["enum"];
            let due = enums.as_array().unwrap().contains(&json!("major_issues"));
            let required: Vec<&str> = form["required"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(required.contains(&"correctness_explanation"), due, "{form}");
            assert_eq!(
                form["properties"].get("correctness_explanation").is_some(),
                due
            );
            // Issue kinds are asked only with issues, and never required.
            assert_eq!(form["properties"].get("issue_categories").is_some(), due);
            assert!(!required.contains(&"issue_categories"));
            seen.insert(enums.to_string());
        }
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(schema["properties"]["sxs"]["maximum"], 7);
        assert_eq!(schema["properties"]["sxs_explanation"]["minLength"], 20);
        assert_eq!(schema["properties"]["sxs_explanation"]["maxLength"], 300);
        assert!(
            schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!("sxs_explanation"))
        );
    }

    #[test]
    fn texts_share_what_the_token_limit_leaves() {
        let blackhat = by_name("blackhat").unwrap();
        let roomy = schema(blackhat, Format::Answers, 20, None, None);
        assert_eq!(roomy["properties"]["sxs_explanation"]["maxLength"], 600);
        let tight = schema(blackhat, Format::Answers, 20, None, Some(700));
        let each = tight["properties"]["sxs_explanation"]["maxLength"]
            .as_u64()
            .unwrap();
        // Seven texts at most in one answer, and its keys, in 700 tokens.
        assert!((100..=250).contains(&each), "{each}");
        // Never below the batch's shortest explanation.
        let short = schema(blackhat, Format::Answers, 20, None, Some(50));
        assert_eq!(short["properties"]["sxs_explanation"]["maxLength"], 20);
        // A word limit becomes four characters a word.
        let additive = by_name("additive-5").unwrap();
        let score = schema(additive, Format::ScoreLine, 0, None, Some(700));
        assert_eq!(score["properties"]["justification"]["maxLength"], 400);
        let note = structured_note(additive, Format::ScoreLine).unwrap();
        assert!(
            note.contains("\"score\": <points, a whole number from 0 to 5>"),
            "{note}"
        );
        assert!(note.contains("in at most 100 words"), "{note}");
        assert!(structured_note(blackhat, Format::Answers).is_none());
    }
}
