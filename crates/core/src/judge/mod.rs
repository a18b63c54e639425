//! LLM judges: the domain core. What a judge is asked for a task ([`template`]), how its
//! output is read back as answers to the rubric ([`parse`]), and how the two orders a
//! pair is asked in make one answer ([`combine`]). Plain functions over plain data; the
//! calls themselves are made by `services::judging`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub mod combine;
pub mod export;
mod found;
pub mod parse;
pub mod schema;
pub mod template;

pub use combine::{Asked, Combined, combine};
pub use parse::{FieldStatus, Fields, Parsed, parse};
pub use template::{Format, Template};

use crate::rubric::{Rubric, Subject};

/// The only environment variables a judge's key may be read from: a judge names the
/// variable, and its value goes to the judge's URL, so the server's own secrets
/// (`VERDICT_SECRET_KEY`, `DATABASE_URL`) must be out of its reach.
pub const KEY_ENV_PREFIX: &str = "VERDICT_JUDGE_KEY_";

/// How a judge samples: what is sent with every request besides the prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Send the JSON schema of the expected answer as `response_format`, so a server that
    /// supports it (llama.cpp, OpenAI) constrains the output to it.
    #[serde(default)]
    pub structured_output: bool,
    /// Under structured output, the longest explanation or text asked for, in
    /// characters (default 600): small models otherwise write until the token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_text_chars: Option<u32>,
    /// How long one request may take, in seconds (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u32>,
    /// The most of a reply read, in bytes (default 4 MiB, at most the server's
    /// `--judge-max-reply-mib`); a longer reply fails the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_reply_bytes: Option<u64>,
}

/// What a run asks with, fixed when it starts, so a resumed run asks as it began.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub rubric: String,
    pub rubric_version: i32,
    pub template: Template,
    pub model: String,
    pub params: Params,
    /// The batch's shortest explanation, which the judge's must meet as a rater's do.
    pub min_explanation: usize,
}

impl Plan {
    /// The orders a task is asked in: A first, and for a pair also B first.
    pub fn orders(subject: Subject) -> &'static [bool] {
        match subject {
            Subject::Pair => &[false, true],
            Subject::Single => &[false],
        }
    }
}

/// The task's content as a judge is shown it.
#[derive(Debug, Clone, Copy)]
pub struct TaskText<'a> {
    /// A string, or a conversation: a list of `{role, content}` messages.
    pub prompt: &'a Value,
    pub response_a: &'a str,
    pub response_b: &'a str,
}

/// The prompt as one text: a string as it is, a conversation turn by turn.
pub fn instruction(prompt: &Value) -> String {
    match prompt {
        Value::String(s) => s.clone(),
        Value::Array(turns) => turns
            .iter()
            .map(|turn| {
                let role = turn.get("role").and_then(Value::as_str).unwrap_or("user");
                let content = turn.get("content").and_then(Value::as_str).unwrap_or("");
                format!("[{role}]\n{content}")
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        other => other.to_string(),
    }
}

/// The prompt the judge is sent for `task`, with B shown as "A" when `swapped`.
pub fn render(rubric: &Rubric, template: &Template, task: TaskText<'_>, swapped: bool) -> String {
    let instruction = instruction(task.prompt);
    let (first, second) = if swapped {
        (task.response_b, task.response_a)
    } else {
        (task.response_a, task.response_b)
    };
    let values: Vec<(&str, &str)> = match rubric.subject {
        Subject::Pair => vec![
            ("instruction", &instruction),
            ("candidate_A", first),
            ("candidate_B", second),
        ],
        Subject::Single => vec![("instruction", &instruction), ("response", task.response_a)],
    };
    template::render(&template.text, &values)
}

/// The SHA-256 of a rendered prompt, in hex: what is stored of it, to tell whether two
/// calls asked the same thing without keeping every prompt twice.
pub fn prompt_hash(prompt: &str) -> String {
    Sha256::digest(prompt.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The latest error a run met (a call's failure, or a failed attempt it retries after), as
/// the run's row, its JSON and the command line show it: one line of at most
/// [`LastError::MAX_CHARS`] characters. An endpoint has a hand in what an error says, so
/// the text is kept short, line breaks, control and direction characters become spaces,
/// and pages show it as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct LastError(String);

impl LastError {
    /// The most characters kept, the ellipsis of a cut text included (the database
    /// checks the same).
    pub const MAX_CHARS: usize = 200;

    /// `text` as one short line: cut to [`Self::MAX_CHARS`] characters with an ellipsis.
    pub fn new(text: &str) -> Self {
        let plain = text
            .chars()
            .map(|c| {
                if c.is_control() || is_direction_mark(c) {
                    ' '
                } else {
                    c
                }
            })
            .collect::<String>();
        let words: Vec<&str> = plain.split_whitespace().collect();
        let line = if words.is_empty() {
            "an error that says nothing".to_owned()
        } else {
            words.join(" ")
        };
        if line.chars().count() <= Self::MAX_CHARS {
            return Self(line);
        }
        let mut cut: String = line.chars().take(Self::MAX_CHARS - 1).collect();
        cut.truncate(cut.trim_end().len());
        cut.push('…');
        Self(cut)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Characters that reorder the text around them (bidirectional marks, embeddings,
/// overrides and isolates): an error could otherwise make what follows it read backwards.
fn is_direction_mark(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rubric::by_name;
    use serde_json::json;

    #[test]
    fn the_swapped_order_shows_b_as_a() {
        let rubric = by_name("pairwise-aspects").unwrap();
        let template = template::built_in(rubric);
        let prompt = json!("Reverse a list");
        let task = TaskText {
            prompt: &prompt,
            response_a: "first answer",
            response_b: "second answer",
        };
        let shown = render(rubric, &template, task, true);
        let a = shown.find("## Response A\nsecond answer").expect(&shown);
        let b = shown.find("## Response B\nfirst answer").expect(&shown);
        assert!(a < b);
        assert!(shown.contains("## The user's query\nReverse a list"));
    }

    #[test]
    fn a_conversation_is_written_out_turn_by_turn() {
        let prompt =
            json!([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]);
        assert_eq!(instruction(&prompt), "[user]\nHi\n\n[assistant]\nHello");
    }

    #[test]
    fn a_last_error_is_one_short_plain_line() {
        assert_eq!(
            LastError::new("connection failed:\n  refused\r\n").as_str(),
            "connection failed: refused"
        );
        assert_eq!(
            LastError::new("HTTP 500 \u{202e}lanretni\u{1b}[31m").as_str(),
            "HTTP 500 lanretni [31m"
        );
        let long = LastError::new(&"é".repeat(500));
        assert_eq!(long.as_str().chars().count(), LastError::MAX_CHARS);
        assert!(long.as_str().ends_with("é…"), "{long:?}");
        let fits = "x".repeat(LastError::MAX_CHARS);
        assert_eq!(LastError::new(&fits).as_str(), fits);
        // Cut where a word ends: no space before the ellipsis.
        let words = format!("{} tail", "a".repeat(LastError::MAX_CHARS - 2));
        assert_eq!(
            LastError::new(&words).as_str(),
            format!("{}…", "a".repeat(LastError::MAX_CHARS - 2))
        );
        assert_eq!(
            LastError::new(" \n ").as_str(),
            "an error that says nothing"
        );
        // Markup is text: pages escape it, nothing here pretends to.
        assert_eq!(LastError::new("<b>x</b>").as_str(), "<b>x</b>");
    }

    #[test]
    fn prompt_hashes_are_sha256_hex() {
        assert_eq!(
            prompt_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
