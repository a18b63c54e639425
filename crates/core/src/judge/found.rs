//! Finding the answers an output gives, before any is read: every JSON object in the
//! text and every `score:` mention, each with whether it is marked final ("Final
//! answer:", "Final score: 4"). Which of them count, and how they are read, is
//! [`super::parse`]'s business.

use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A JSON object found in an output, with every key given twice differently.
pub(crate) struct Object {
    pub map: Map<String, Value>,
    /// Paths (`choices.helpfulness`, or `choices` for an object given twice) whose
    /// key appears more than once with different values.
    pub conflicts: Vec<String>,
    /// Where it stands in the output, in bytes.
    pub span: Range<usize>,
    pub is_final: bool,
}

impl Object {
    /// Whether the answer at `path` is given two ways: its own key, or an object it is
    /// in, appears twice with different values.
    pub fn conflicts_at(&self, path: &str) -> bool {
        self.conflicts.iter().any(|c| {
            path == c
                || path
                    .strip_prefix(c.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }
}

/// How much reading a hostile output may cost, as a multiple of its length, plus a
/// fixed allowance: every `{` is tried as the start of an object, and an output can be
/// made of openings that each read far before failing. Past the budget the search stops,
/// and what was not found yet is not read (the output is then `missing` answers, never
/// read wrong).
const BUDGET_PER_BYTE: usize = 16;
const BUDGET_FIXED: usize = 1 << 16;

/// Every JSON object at the top level of `output`, in order: tried at each `{` that is
/// not inside an object already found, so fences and text around them do not matter.
pub(crate) fn objects(output: &str) -> Vec<Object> {
    let mut found = Vec::new();
    let mut budget = output
        .len()
        .saturating_mul(BUDGET_PER_BYTE)
        .saturating_add(BUDGET_FIXED);
    let mut from = 0;
    while let Some(at) = output[from..].find('{').map(|i| from + i) {
        let text = &output[at..];
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Noted>();
        match stream.next() {
            Some(Ok(Noted {
                value: Value::Object(map),
                conflicts,
            })) => {
                let end = at + stream.byte_offset();
                found.push(Object {
                    map,
                    conflicts,
                    span: at..end,
                    is_final: marked_final(output, at),
                });
                from = end;
            }
            Some(Err(error)) => {
                let spent = offset_of(text, error.line(), error.column());
                budget = budget.saturating_sub(spent.max(1));
                if budget == 0 {
                    break;
                }
                from = at + 1;
            }
            _ => from = at + 1,
        }
    }
    found
}

/// The byte offset in `text` of a 1-based line and column, as serde_json reports where
/// it stopped; the cost of finding it is that of the text it read.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let before: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (before + column).min(text.len())
}

/// A `score:` mention outside every JSON object: what follows its colon up to the end
/// of the line or the next mention.
pub(crate) struct Mention<'a> {
    pub value: &'a str,
    pub is_final: bool,
}

/// Every `score:` mention of `output` outside `objects` (in order), and the output's
/// other lines, which hold the justification.
pub(crate) fn score_mentions<'a>(
    output: &'a str,
    objects: &[Object],
) -> (Vec<Mention<'a>>, String) {
    let mut mentions = Vec::new();
    let mut rest = Vec::new();
    let mut line_start = 0;
    for line in output.split_inclusive('\n') {
        let start = line_start;
        line_start += line.len();
        let inside = |at: usize| objects.iter().any(|o| o.span.contains(&(start + at)));
        let found: Vec<(usize, usize)> = score_words(line)
            .into_iter()
            .filter(|(at, _)| !inside(*at))
            .collect();
        if found.is_empty() {
            rest.push(line.trim_end_matches(['\n', '\r']));
            continue;
        }
        for (i, (at, value_at)) in found.iter().enumerate() {
            let end = found.get(i + 1).map_or(line.len(), |next| next.0);
            mentions.push(Mention {
                value: line[*value_at..end].trim_end_matches(['\n', '\r']),
                is_final: final_words(&line[..*at]) || final_line_before(output, start),
            });
        }
    }
    (mentions, rest.join("\n"))
}

/// Where each `score` of `line` is a whole word followed by a colon (markup such as
/// `**Score:**` aside): the word's start, and where its value starts.
fn score_words(line: &str) -> Vec<(usize, usize)> {
    let lower = line.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find("score").map(|i| from + i) {
        from = at + "score".len();
        let whole = at
            .checked_sub(1)
            .is_none_or(|b| !bytes[b].is_ascii_alphanumeric())
            && bytes.get(from).is_none_or(|c| !c.is_ascii_alphanumeric());
        if !whole {
            continue;
        }
        let after = lower[from..].trim_start_matches(['*', '_', ' ', '\t']);
        if let Some(value) = after.strip_prefix(':') {
            found.push((at, lower.len() - value.len()));
        }
    }
    found
}

/// Whether the text on the line before an answer marks it final: it starts or ends
/// with "final" (`Final answer: {`, `**Final score:** 4`, `the final score: 4`).
fn final_words(prefix: &str) -> bool {
    let words = prefix
        .trim_matches(|c: char| c.is_whitespace() || "*#_->`:\"".contains(c))
        .to_lowercase();
    words.starts_with("final") || words.ends_with("final")
}

/// Whether the last line with words before the line starting at `line_start` (fences
/// passed over) is a heading that marks what follows final: `Final answer:`, `## Final
/// verdict`; not a sentence that happens to begin with "Final".
fn final_line_before(output: &str, line_start: usize) -> bool {
    let Some(line) = output[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))
    else {
        return false;
    };
    let bare = line.trim_matches(|c: char| c.is_whitespace() || "*#_->`".contains(c));
    bare.to_lowercase().starts_with("final")
        && (bare.ends_with(':') || bare.split_whitespace().count() <= 4)
}

/// Whether the answer starting at byte `at` of `output` is marked final, on its own
/// line or by the heading before it.
pub(crate) fn marked_final(output: &str, at: usize) -> bool {
    let line_start = output[..at].rfind('\n').map_or(0, |i| i + 1);
    final_words(&output[line_start..at]) || final_line_before(output, line_start)
}

/// A JSON value with every key that appears twice with different values noted, by path:
/// `serde_json::Value` keeps the last silently.
struct Noted {
    value: Value,
    conflicts: Vec<String>,
}

impl Noted {
    fn plain(value: Value) -> Self {
        Self {
            value,
            conflicts: Vec::new(),
        }
    }
}

impl<'de> Deserialize<'de> for Noted {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NotedVisitor)
    }
}

struct NotedVisitor;

impl<'de> Visitor<'de> for NotedVisitor {
    type Value = Noted;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Noted, E> {
        Ok(Noted::plain(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_unit<E>(self) -> Result<Noted, E> {
        Ok(Noted::plain(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Noted, E> {
        Ok(Noted::plain(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Noted, A::Error> {
        let mut values = Vec::new();
        while let Some(item) = seq.next_element::<Noted>()? {
            values.push(item.value);
        }
        Ok(Noted::plain(Value::Array(values)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Noted, A::Error> {
        let mut object = Map::new();
        let mut conflicts = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let child: Noted = map.next_value()?;
            conflicts.extend(child.conflicts.iter().map(|c| format!("{key}.{c}")));
            // A key given twice the same way is one answer; differently, none.
            if object.get(&key).is_some_and(|seen| *seen != child.value) {
                conflicts.push(key.clone());
            }
            object.insert(key, child.value);
        }
        Ok(Noted {
            value: Value::Object(object),
            conflicts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_found_anywhere_with_their_spans() {
        let output =
            "Draft: {\"x\": 1}\n```json\n{\"y\": {\"z\": 2}}\n```\nno {json here} {\"w\": 3";
        let found = objects(output);
        assert_eq!(found.len(), 2);
        assert_eq!(&output[found[0].span.clone()], "{\"x\": 1}");
        assert_eq!(found[1].map["y"]["z"], 2);
        assert!(!found[0].is_final && !found[1].is_final);
    }

    #[test]
    fn a_key_or_object_given_twice_differently_is_noted() {
        let found = objects("{\"c\": {\"h\": \"A\"}, \"c\": {\"h\": \"B\"}, \"d\": 1, \"d\": 1}");
        assert_eq!(found[0].conflicts, vec!["c".to_owned()]);
        assert!(found[0].conflicts_at("c.h"));
        assert!(!found[0].conflicts_at("d"));
        assert!(!found[0].conflicts_at("cc"));
    }

    #[test]
    fn final_marks_are_read_on_the_line_and_from_a_heading() {
        for (output, is_final) in [
            ("Final answer: {\"a\": 1}", true),
            ("**Final answer:**\n```json\n{\"a\": 1}\n```", true),
            ("## Final verdict\n\n{\"a\": 1}", true),
            (
                "Final thoughts: the loop is wrong and B is better.\n{\"a\": 1}",
                false,
            ),
            ("Draft: {\"a\": 1}", false),
        ] {
            assert_eq!(objects(output)[0].is_final, is_final, "{output}");
        }
    }

    #[test]
    fn score_mentions_are_words_followed_by_a_colon_outside_objects() {
        let output =
            "Scores: many\nthe score: 2 fits\n**Final Score:** 4/5\n{\"score\": 3}\nscoreboard: 1";
        let found = objects(output);
        let (mentions, rest) = score_mentions(output, &found);
        let values: Vec<(&str, bool)> = mentions.iter().map(|m| (m.value, m.is_final)).collect();
        assert_eq!(values, vec![(" 2 fits", false), ("** 4/5", true)]);
        assert!(rest.starts_with("Scores: many\n{\"score\": 3}"), "{rest}");
    }

    #[test]
    fn a_flood_of_openings_is_read_as_nothing() {
        // Each opening reads to the end before it fails: quadratic without a budget.
        let hostile = "{\"a\":[".repeat(20_000) + "1";
        let found = objects(&hostile);
        assert!(found.is_empty());
    }
}
