//! Skills routing: raters have skills (languages, subjects), a batch names the task field
//! it routes by (`metadata.<key>`), and each task's value of that field, its *route
//! key*, decides who is offered it first or at all.
//!
//! - `prefer`: a rater is offered the tasks whose key is one of their skills first, then
//!   any other;
//! - `strict`: a rater is offered only the tasks whose key is one of their skills; the
//!   rest wait for someone who has the skill.
//!
//! Who sets the skills routing goes by: a lead sets a rater's (an admin anyone's, a lead or
//! an admin their own); a rater only *declares* theirs. What a rater declares widens
//! `prefer` (their declared subjects come first too) and never `strict`, so a rater can
//! neither take tasks meant for others by declaring every skill nor hold no work by
//! declaring none (see [`skills_for`]).
//!
//! A task without a key (the field missing, or not a string) is anyone's in both modes.
//! Keys and skills compare trimmed and in lower case, so `Rust`, ` rust` and `rust` are one.
//!
//! A rater who skips many tasks of one key as unfamiliar (at least [`SUGGEST_AT`], and at
//! least half of the ones they finished) is a suggestion for their lead: the rater lacks
//! that skill, or holds it only in name.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// The most skills one person has.
pub const MAX_SKILLS: usize = 50;

/// The longest skill, in characters.
pub const MAX_SKILL_LEN: usize = 40;

/// The longest key a batch routes by, in characters.
pub const MAX_KEY_LEN: usize = 64;

/// The fewest unfamiliar skips of one key that make a suggestion.
pub const SUGGEST_AT: i64 = 3;

/// How a batch routes its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// Matching tasks first, then any.
    #[default]
    Prefer,
    /// Matching tasks (and tasks without a key) only.
    Strict,
}

impl Routing {
    pub fn as_str(self) -> &'static str {
        match self {
            Routing::Prefer => "prefer",
            Routing::Strict => "strict",
        }
    }
}

impl fmt::Display for Routing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Routing {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "prefer" => Ok(Routing::Prefer),
            "strict" => Ok(Routing::Strict),
            other => Err(format!(
                "unknown routing {other:?}: use prefer (matching tasks first) or strict (matching tasks only)"
            )),
        }
    }
}

impl TryFrom<String> for Routing {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// The task field a batch routes by: a key of the task's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteBy {
    key: String,
}

impl RouteBy {
    /// Reads `metadata.<key>`; the key is letters, digits, `_` and `-`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let Some(key) = text.strip_prefix("metadata.") else {
            return Err(format!(
                "{text:?} is not a task field to route by: write metadata.<key>, e.g. metadata.language"
            ));
        };
        if key.is_empty()
            || key.chars().count() > MAX_KEY_LEN
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "the key after metadata. must be 1 to {MAX_KEY_LEN} letters, digits, _ or -"
            ));
        }
        Ok(Self {
            key: key.to_owned(),
        })
    }

    /// The metadata key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key as a SQLite JSON path (`$."key"`): the key holds no quote, so it needs
    /// no escaping.
    pub fn json_path(&self) -> String {
        format!("$.\"{}\"", self.key)
    }
}

impl fmt::Display for RouteBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "metadata.{}", self.key)
    }
}

/// A task's route key from its metadata value: a string, trimmed and in lower case;
/// `None` for anything else or an empty string. The store computes the same in SQL
/// (see `Store::route_tasks`); this is the rule it follows.
pub fn route_key(value: Option<&serde_json::Value>) -> Option<String> {
    let key = value?.as_str()?.trim().to_lowercase();
    (!key.is_empty()).then_some(key)
}

/// A person's skills, checked: each trimmed and in lower case, without repeats, sorted.
/// Every broken entry is named.
pub fn parse_skills<S: AsRef<str>>(skills: &[S]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    for skill in skills {
        let skill = skill.as_ref().trim().to_lowercase();
        if skill.is_empty() {
            bad.push("a skill is empty".to_owned());
        } else if skill.chars().count() > MAX_SKILL_LEN {
            bad.push(format!(
                "{:?} is longer than {MAX_SKILL_LEN} characters",
                skill.chars().take(20).collect::<String>()
            ));
        } else if skill.chars().any(|c| c.is_control() || c == ',') {
            bad.push(format!("{skill:?} holds a comma or a control character"));
        } else if !out.contains(&skill) {
            out.push(skill);
        }
    }
    if out.len() > MAX_SKILLS {
        bad.push(format!("at most {MAX_SKILLS} skills"));
    }
    if !bad.is_empty() {
        return Err(bad.join("; "));
    }
    out.sort();
    Ok(out)
}

/// Skills written as a list separated by commas (a form field, the command line); blank
/// is none.
pub fn parse_skills_text(text: &str) -> Result<Vec<String>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    parse_skills(&text.split(',').collect::<Vec<_>>())
}

/// Whether `skipped` unfamiliar skips of `finished` tasks of one key make a suggestion.
pub fn suggests(skipped: i64, finished: i64) -> bool {
    skipped >= SUGGEST_AT && 2 * skipped >= finished
}

/// What routing did for a routed batch: skips by reason before and after its routing
/// last changed, the open tasks no allowed rater has the skill for, and suggestions
/// from raters' unfamiliar skips. Gold tasks are left out.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RoutingFigures {
    /// The task field tasks are routed by (`metadata.language`).
    pub route_by: String,
    /// `prefer` or `strict`.
    pub routing: String,
    /// When the routing last changed: what "before" and "after" divide at.
    pub since: DateTime<Utc>,
    pub before: SkipFigures,
    pub after: SkipFigures,
    /// Tasks with room left whose key nobody who could take them now has as a skill
    /// (active, allowed on the batch, not failed its qualification), by key: under
    /// `strict` they wait for one (the stalls' `no_rater_with_skill`); under `prefer`
    /// they go to anyone.
    pub unmatched: BTreeMap<String, i64>,
    /// The sum of `unmatched`.
    pub unmatched_tasks: i64,
    /// Raters who skipped many tasks of one key as unfamiliar, most skips first.
    pub suggestions: Vec<Suggestion>,
}

impl RoutingFigures {
    /// Before and after, in words.
    pub fn periods(&self) -> [(&'static str, &SkipFigures); 2] {
        [
            ("Before routing", &self.before),
            ("After routing", &self.after),
        ]
    }
}

/// Finished ratings of people, and their skips by reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SkipFigures {
    /// Ratings finished (rated, skipped or out of scope; not drafts or rejected ones).
    pub finished: i64,
    pub skipped: i64,
    /// `skipped / finished`; absent with nothing finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_share: Option<f64>,
    pub by_reason: BTreeMap<String, i64>,
}

impl SkipFigures {
    /// The figures of `rows`: (outcome skipped or not, skip reason, ratings).
    pub fn of<'a>(rows: impl IntoIterator<Item = (bool, Option<&'a str>, i64)>) -> Self {
        let mut figures = SkipFigures::default();
        for (skipped, reason, n) in rows {
            figures.finished += n;
            if skipped {
                figures.skipped += n;
                *figures
                    .by_reason
                    .entry(reason.unwrap_or("none").to_owned())
                    .or_default() += n;
            }
        }
        figures.skipped_share =
            (figures.finished > 0).then(|| figures.skipped as f64 / figures.finished as f64);
        figures
    }
}

/// A rater who skipped many tasks of one key as unfamiliar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Suggestion {
    pub rater: String,
    /// The tasks' route key (`rust`).
    pub key: String,
    /// Tasks of the key the rater skipped as unfamiliar.
    pub skipped: i64,
    /// Tasks of the key the rater finished (skips included).
    pub finished: i64,
    /// Whether the key is one of the rater's skills (then the skill is in doubt;
    /// otherwise routing already passes these tasks over for them, or should).
    pub has_skill: bool,
}

impl Suggestion {
    /// The suggestion in words, as the dashboard says it.
    pub fn text(&self) -> String {
        let advice = if self.has_skill {
            format!(
                "{} is one of their skills: check it with them, or take it off",
                self.key
            )
        } else {
            format!("{} is not one of their skills", self.key)
        };
        format!(
            "{} skipped {} of {} {} tasks as unfamiliar; {advice}",
            self.rater, self.skipped, self.finished, self.key
        )
    }

    /// The suggestions of `rows` (rater, key, finished, unfamiliar skips), with each
    /// rater's skills: those [`suggests`] keeps, most skips first.
    pub fn of(
        rows: impl IntoIterator<Item = (String, String, i64, i64)>,
        skills: &BTreeMap<String, Vec<String>>,
    ) -> Vec<Suggestion> {
        let mut out: Vec<Suggestion> = rows
            .into_iter()
            .filter(|(_, _, finished, skipped)| suggests(*skipped, *finished))
            .map(|(rater, key, finished, skipped)| Suggestion {
                has_skill: skills.get(&rater).is_some_and(|s| s.contains(&key)),
                rater,
                key,
                skipped,
                finished,
            })
            .collect();
        out.sort_by(|a, b| {
            b.skipped
                .cmp(&a.skipped)
                .then_with(|| a.rater.cmp(&b.rater))
                .then_with(|| a.key.cmp(&b.key))
        });
        out
    }
}

/// The skills a batch routed by `routing` goes by for a person whose skills a lead or an
/// admin set to `set` and who declared `declared`: `set` alone when strict; both, in one
/// sorted list without repeats, when it prefers.
pub fn skills_for(routing: Routing, set: &[String], declared: &[String]) -> Vec<String> {
    let mut skills = set.to_vec();
    if routing == Routing::Prefer {
        skills.extend(declared.iter().cloned());
        skills.sort();
        skills.dedup();
    }
    skills
}

/// The open tasks by key (`open`: key and tasks with room) that none of `skills` (the
/// allowed raters') covers.
pub fn unmatched(open: &[(String, i64)], skills: &[Vec<String>]) -> BTreeMap<String, i64> {
    open.iter()
        .filter(|(key, _)| !skills.iter().any(|s| s.contains(key)))
        .map(|(key, n)| (key.clone(), *n))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_route_is_a_metadata_key() {
        let by = RouteBy::parse(" metadata.language ").expect("parses");
        assert_eq!(by.key(), "language");
        assert_eq!(by.to_string(), "metadata.language");
        assert_eq!(by.json_path(), "$.\"language\"");
        for bad in [
            "language",
            "metadata.",
            "metadata.a b",
            "metadata.x\"y",
            "prompt.x",
        ] {
            assert!(RouteBy::parse(bad).is_err(), "{bad}");
        }
        assert!(RouteBy::parse(&format!("metadata.{}", "k".repeat(65))).is_err());
    }

    #[test]
    fn routing_reads_its_two_modes() {
        assert_eq!("strict".parse::<Routing>(), Ok(Routing::Strict));
        assert_eq!("prefer".parse::<Routing>(), Ok(Routing::Prefer));
        assert!(" prefer".parse::<Routing>().is_err());
        let refused = "loose".parse::<Routing>().expect_err("refused");
        assert!(refused.contains("prefer") && refused.contains("strict"));
    }

    #[test]
    fn keys_are_strings_trimmed_in_lower_case() {
        assert_eq!(route_key(Some(&json!(" Rust "))), Some("rust".into()));
        assert_eq!(route_key(Some(&json!(""))), None);
        assert_eq!(route_key(Some(&json!(3))), None);
        assert_eq!(route_key(None), None);
    }

    #[test]
    fn declared_skills_widen_prefer_and_never_strict() {
        let set = vec!["python".to_owned()];
        let declared = vec!["go".to_owned(), "python".to_owned(), "rust".to_owned()];
        assert_eq!(skills_for(Routing::Strict, &set, &declared), ["python"]);
        assert_eq!(
            skills_for(Routing::Prefer, &set, &declared),
            ["go", "python", "rust"]
        );
        assert!(skills_for(Routing::Strict, &[], &declared).is_empty());
        assert_eq!(skills_for(Routing::Prefer, &set, &[]), ["python"]);
    }

    #[test]
    fn skills_are_checked_and_kept_in_one_form() {
        assert_eq!(
            parse_skills(&["Rust", " python", "rust"]),
            Ok(vec!["python".to_owned(), "rust".to_owned()])
        );
        assert_eq!(parse_skills_text(" "), Ok(vec![]));
        assert_eq!(
            parse_skills_text("Go, SQL"),
            Ok(vec!["go".to_owned(), "sql".to_owned()])
        );
        let refused = parse_skills(&["", &"x".repeat(41), "a\u{7}"]).expect_err("refused");
        assert!(refused.contains("empty"), "{refused}");
        assert!(refused.contains("longer than 40"), "{refused}");
        assert!(refused.contains("control"), "{refused}");
        let many: Vec<String> = (0..51).map(|n| format!("s{n}")).collect();
        assert!(
            parse_skills(&many)
                .expect_err("too many")
                .contains("at most 50")
        );
    }

    #[test]
    fn skips_are_counted_by_reason() {
        let figures = SkipFigures::of([
            (false, None, 6),
            (true, Some("unfamiliar"), 3),
            (true, Some("too_long"), 1),
        ]);
        assert_eq!(figures.finished, 10);
        assert_eq!(figures.skipped, 4);
        assert_eq!(figures.skipped_share, Some(0.4));
        assert_eq!(figures.by_reason["unfamiliar"], 3);
        assert_eq!(SkipFigures::of([]).skipped_share, None);
    }

    #[test]
    fn suggestions_name_the_rater_and_whether_the_skill_is_theirs() {
        let skills = BTreeMap::from([("ana".to_owned(), vec!["rust".to_owned()])]);
        let rows = [
            ("ana".to_owned(), "rust".to_owned(), 10, 9),
            ("bo".to_owned(), "go".to_owned(), 4, 3),
            ("cy".to_owned(), "go".to_owned(), 10, 3),
        ];
        let suggestions = Suggestion::of(rows, &skills);
        assert_eq!(suggestions.len(), 2, "{suggestions:?}");
        assert_eq!(
            suggestions[0].text(),
            "ana skipped 9 of 10 rust tasks as unfamiliar; rust is one of their skills: check it with them, or take it off"
        );
        assert!(!suggestions[1].has_skill);
        assert_eq!(suggestions[1].rater, "bo");
    }

    #[test]
    fn unmatched_keys_are_those_nobody_allowed_knows() {
        let open = [("rust".to_owned(), 4), ("cobol".to_owned(), 2)];
        let skills = [vec!["rust".to_owned()], vec![]];
        assert_eq!(
            unmatched(&open, &skills),
            BTreeMap::from([("cobol".to_owned(), 2)])
        );
    }

    #[test]
    fn a_suggestion_takes_three_skips_and_half_the_tasks() {
        assert!(suggests(9, 10));
        assert!(suggests(3, 6));
        assert!(!suggests(2, 2));
        assert!(!suggests(3, 7));
    }
}
