//! Code a rater ran in the browser, kept with the rating: each code block's last result
//! (how many blocks ran and passed is evidence for a question the rubric marks
//! `code_runs`), and the runs the rater attached with their code and output. The runner
//! itself lives in the page (`static/runner.js`); the server checks what it is sent,
//! caps its size, and stores it in the task's canonical orientation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fields::FieldErrors;
use crate::rubric::Side;

/// The most runs a rating attaches.
pub const MAX_ATTACHMENTS: usize = 8;
/// The longest code, stdout or stderr of an attached run, in characters.
pub const MAX_TEXT_CHARS: usize = 20_000;
/// The most code blocks whose results a rating records.
pub const MAX_RUNS: usize = 200;
/// The highest block number (blocks are numbered from 1 within a response).
const MAX_BLOCK: u32 = 10_000;
const MAX_LANGUAGE_CHARS: usize = 32;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// One entry per code block run: its last result.
    #[serde(default)]
    pub runs: Vec<Run>,
    /// Runs the rater attached to the rating, with their code and output.
    #[serde(default)]
    pub attachments: Vec<Attachment>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// It finished without an error.
    Passed,
    /// It raised an error or exited with a non-zero status.
    Failed,
    /// It was stopped at the time limit.
    TimedOut,
    /// The rater stopped it.
    Stopped,
}

impl RunStatus {
    pub fn label(self) -> &'static str {
        match self {
            RunStatus::Passed => "passed",
            RunStatus::Failed => "failed",
            RunStatus::TimedOut => "timed out",
            RunStatus::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    pub side: Side,
    /// The block's place in its response, from 1.
    pub block: u32,
    pub language: String,
    pub status: RunStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    pub side: Side,
    pub block: u32,
    pub language: String,
    /// The code as run (the rater may have edited it: then `edited`).
    pub code: String,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// A run of the rater's edited scratch copy, not of the response's own code: shown as
    /// such, and never the response's result (that is `runs`, which holds no edited run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
}

/// How many of a response's blocks ran, and how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Tally {
    pub ran: usize,
    pub passed: usize,
    pub failed: usize,
    pub timed_out: usize,
    pub stopped: usize,
}

impl Tally {
    /// In words, e.g. "ran 3 blocks: 2 passed, 1 failed".
    pub fn words(&self) -> String {
        let blocks = if self.ran == 1 { "block" } else { "blocks" };
        let parts: Vec<String> = [
            (self.passed, "passed"),
            (self.failed, "failed"),
            (self.timed_out, "timed out"),
            (self.stopped, "stopped"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        format!("ran {} {blocks}: {}", self.ran, parts.join(", "))
    }
}

impl Evidence {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.attachments.is_empty()
    }

    /// The same evidence with A and B traded when `swapped` (turning it between the
    /// orientation the rater saw and the canonical one; twice gives back what went in).
    pub fn oriented(mut self, swapped: bool) -> Self {
        if swapped {
            for run in &mut self.runs {
                run.side = run.side.other();
            }
            for attachment in &mut self.attachments {
                attachment.side = attachment.side.other();
            }
        }
        self
    }

    /// What ran of one response.
    pub fn tally(&self, side: Side) -> Tally {
        let mut tally = Tally::default();
        for run in self.runs.iter().filter(|r| r.side == side) {
            tally.ran += 1;
            match run.status {
                RunStatus::Passed => tally.passed += 1,
                RunStatus::Failed => tally.failed += 1,
                RunStatus::TimedOut => tally.timed_out += 1,
                RunStatus::Stopped => tally.stopped += 1,
            }
        }
        tally
    }
}

/// Reads the `evidence` of a submission: an object, the same as JSON text (as the form
/// sends it), or empty (`null`, `""`: none). Every broken rule is named by its path
/// (`evidence.attachments[0].stdout`). `single`: the rubric judges one response, so
/// every entry is of `a`.
pub fn parse(value: &Value, single: bool) -> Result<Evidence, FieldErrors> {
    let error = |path: &str, why: String| FieldErrors::from([(format!("evidence{path}"), why)]);
    let parsed;
    let value = match value {
        Value::Null => return Ok(Evidence::default()),
        Value::String(text) if text.trim().is_empty() => return Ok(Evidence::default()),
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text)
                .map_err(|e| error("", format!("is not valid JSON: {e}")))?;
            &parsed
        }
        other => other,
    };
    let evidence: Evidence = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            String::new()
        } else {
            format!(".{path}").replace(".[", "[")
        };
        error(&path, e.into_inner().to_string())
    })?;
    let mut errors = FieldErrors::new();
    check(&evidence, single, &mut errors);
    if errors.is_empty() {
        Ok(evidence)
    } else {
        Err(errors)
    }
}

fn check(evidence: &Evidence, single: bool, errors: &mut FieldErrors) {
    let mut err = |path: String, why: String| {
        errors.entry(format!("evidence.{path}")).or_insert(why);
    };
    if evidence.runs.len() > MAX_RUNS {
        err("runs".into(), format!("at most {MAX_RUNS} blocks"));
    }
    if evidence.attachments.len() > MAX_ATTACHMENTS {
        err(
            "attachments".into(),
            format!("at most {MAX_ATTACHMENTS} runs can be attached"),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, run) in evidence.runs.iter().enumerate() {
        let at = format!("runs[{i}]");
        check_place(run.side, run.block, &run.language, single, &at, &mut err);
        if !seen.insert((run.side, run.block)) {
            err(
                at,
                format!(
                    "block {} of {} is listed twice: give each block's last run once",
                    run.block,
                    run.side.key()
                ),
            );
        }
    }
    for (i, attachment) in evidence.attachments.iter().enumerate() {
        let at = format!("attachments[{i}]");
        let a = attachment;
        check_place(a.side, a.block, &a.language, single, &at, &mut err);
        for (field, text) in [
            ("code", &a.code),
            ("stdout", &a.stdout),
            ("stderr", &a.stderr),
        ] {
            let chars = text.chars().count();
            if chars > MAX_TEXT_CHARS {
                err(
                    format!("{at}.{field}"),
                    format!("is {chars} characters; at most {MAX_TEXT_CHARS} can be attached"),
                );
            }
        }
        if a.code.trim().is_empty() {
            err(format!("{at}.code"), "must not be empty".into());
        }
    }
}

fn check_place(
    side: Side,
    block: u32,
    language: &str,
    single: bool,
    at: &str,
    err: &mut impl FnMut(String, String),
) {
    if single && side == Side::B {
        err(
            format!("{at}.side"),
            "this rubric judges one response: use \"a\"".into(),
        );
    }
    if !(1..=MAX_BLOCK).contains(&block) {
        err(
            format!("{at}.block"),
            format!("must be a block number from 1 to {MAX_BLOCK}"),
        );
    }
    if language.chars().count() > MAX_LANGUAGE_CHARS
        || language
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
    {
        err(
            format!("{at}.language"),
            format!("must be a language name of at most {MAX_LANGUAGE_CHARS} characters"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(side: &str, block: u32, status: &str) -> Value {
        json!({"side": side, "block": block, "language": "python", "status": status})
    }

    #[test]
    fn empty_values_are_no_evidence() {
        for empty in [Value::Null, json!(""), json!("  "), json!({})] {
            assert!(parse(&empty, false).unwrap().is_empty(), "{empty}");
        }
    }

    #[test]
    fn json_text_reads_as_the_object_does() {
        let object = json!({"runs": [run("a", 1, "passed"), run("b", 2, "failed")]});
        let text = Value::from(object.to_string());
        assert_eq!(parse(&text, false).unwrap(), parse(&object, false).unwrap());
        assert!(parse(&json!("{not json"), false).unwrap_err()["evidence"].contains("JSON"));
    }

    #[test]
    fn tallies_count_each_blocks_last_result() {
        let evidence = parse(
            &json!({"runs": [run("a", 1, "passed"), run("a", 2, "failed"),
                              run("a", 3, "passed"), run("b", 1, "timed_out")]}),
            false,
        )
        .unwrap();
        assert_eq!(
            evidence.tally(Side::A).words(),
            "ran 3 blocks: 2 passed, 1 failed"
        );
        assert_eq!(evidence.tally(Side::B).words(), "ran 1 block: 1 timed out");
        let canonical = evidence.clone().oriented(true);
        assert_eq!(canonical.tally(Side::B).ran, 3);
        assert_eq!(canonical.oriented(true), evidence);
    }

    #[test]
    fn every_broken_rule_is_named_by_its_path() {
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        let errors = parse(
            &json!({
                "runs": [run("a", 1, "passed"), run("a", 1, "failed"), run("b", 0, "passed")],
                "attachments": [{"side": "b", "block": 1, "language": "py thon", "code": " ",
                                 "stdout": long, "status": "passed"}]
            }),
            true,
        )
        .unwrap_err();
        assert!(errors["evidence.runs[1]"].contains("listed twice"));
        assert!(errors["evidence.runs[2].side"].contains("one response"));
        assert!(errors["evidence.runs[2].block"].contains("from 1"));
        assert!(errors["evidence.attachments[0].language"].contains("language"));
        assert_eq!(errors["evidence.attachments[0].code"], "must not be empty");
        assert!(errors["evidence.attachments[0].stdout"].contains("at most 20000"));
        let shape = parse(&json!({"runs": [{"side": "c"}]}), false).unwrap_err();
        assert!(
            shape.keys().next().unwrap().starts_with("evidence.runs[0]"),
            "{shape:?}"
        );
        let unknown = parse(&json!({"files": []}), false).unwrap_err();
        assert!(
            unknown
                .iter()
                .any(|(path, why)| path.starts_with("evidence")
                    && why.contains("unknown field `files`")),
            "{unknown:?}"
        );
    }

    #[test]
    fn at_most_eight_attachments() {
        let one =
            json!({"side": "a", "block": 1, "language": "js", "code": "1", "status": "passed"});
        let many = json!({"attachments": vec![one; MAX_ATTACHMENTS + 1]});
        assert!(parse(&many, false).unwrap_err()["evidence.attachments"].contains("at most 8"));
    }
}
