//! States are enums, never strings: a scan of the app's code and templates (and the
//! core's, beside the enums' own definitions) for a state's name used as a literal in a
//! comparison or an assignment. Issue 27 turned every such comparison into a method on
//! the core's enums (`assignment.state.is_open()`); this keeps new ones from creeping
//! back in, naming each by file and line.
//!
//! SQL text is left alone by construction: it quotes names with single quotes. Unit
//! tests (`#[cfg(test)] mod tests`, at the end of a file) are not scanned: they may send
//! names as the wire carries them.

use std::path::{Path, PathBuf};

use verdict_core::lifecycle::{
    AssignmentState, BatchState, CallStatus, Decision, Outcome, RaterKind, RunStatus, Status,
};

/// Every state's name, of every enum that names one, once (`open` is an assignment's
/// and a batch's). Skip reasons are not states: each rubric lists its own.
fn state_names() -> Vec<&'static str> {
    let mut names = [
        Outcome::NAMES,
        Status::NAMES,
        Decision::NAMES,
        RaterKind::NAMES,
        RunStatus::NAMES,
        CallStatus::NAMES,
        AssignmentState::NAMES,
        BatchState::NAMES,
    ]
    .concat();
    names.sort_unstable();
    names.dedup();
    names
}

/// Field names that hold a state: a literal assigned to one of them is a state
/// written as a string (`ended.state = "expired".into()`, `Batch { state: "open", .. }`).
const STATE_FIELDS: &[&str] = &[
    "state",
    "status",
    "outcome",
    "decision",
    "rater_kind",
    "kind",
];

/// Whether `before` (the line up to a literal) ends by assigning to a state field.
fn assigns_a_state_field(before: &str) -> bool {
    let Some(head) = before.strip_suffix(':').or_else(|| {
        before
            .strip_suffix('=')
            .filter(|h| !h.ends_with(['=', '!', '<', '>']))
    }) else {
        return false;
    };
    let head = head.trim_end();
    STATE_FIELDS.iter().any(|field| {
        head.strip_suffix(field).is_some_and(|rest| {
            !rest.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '"')
        })
    })
}

/// Why a literal of a state's name at `at` in `line` is a comparison or an assignment
/// of a state, or `None` when it is something else (a label, a JSON key, a field name).
/// `arm_of_state` says whether the closest `match` above switches on a state.
fn misuse(line: &str, at: usize, literal: &str, arm_of_state: bool) -> Option<&'static str> {
    let before = line[..at].trim_end();
    let after = line[at + literal.len()..].trim_start();
    let single_bar = |s: &str| s == "|" || (s.ends_with('|') && !s.ends_with("||"));
    let compares = |s: &str| s.starts_with("==") || s.starts_with("!=");
    if before.ends_with("==") || before.ends_with("!=") || compares(after) {
        Some("compared")
    } else if single_bar(before) || (after.starts_with('|') && !after.starts_with("||")) {
        Some("matched in a pattern")
    } else if before.ends_with("when") || (after.starts_with("=>") && arm_of_state) {
        Some("matched")
    } else if assigns_a_state_field(before) {
        Some("assigned")
    } else {
        None
    }
}

/// The misuses in one file's text, as `line number: why: line`.
fn scan(text: &str, names: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let mut previous = "";
    let mut arm_of_state = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("mod tests") && previous == "#[cfg(test)]" {
            break;
        }
        if !trimmed.is_empty() {
            previous = trimmed;
        }
        if trimmed.starts_with("//") || trimmed.starts_with("{#") {
            continue;
        }
        if let Some(scrutinee) = trimmed
            .find("match ")
            .map(|at| &trimmed[at..])
            .filter(|m| m.ends_with('{'))
        {
            arm_of_state = STATE_FIELDS.iter().any(|f| scrutinee.contains(f));
        }
        for name in names {
            let literal = format!("\"{name}\"");
            for (at, _) in line.match_indices(&literal) {
                if let Some(why) = misuse(line, at, &literal, arm_of_state) {
                    found.push(format!("{}: {why} {literal}: {trimmed}", i + 1));
                }
            }
        }
    }
    found
}

/// The `.rs` and `.html` files under `dir`, recursively.
fn sources(dir: &Path, into: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "html") {
            into.push(path);
        }
    }
}

#[test]
fn no_state_is_compared_as_a_string_literal() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The enums' definitions spell every name once, and may.
    let definitions = root.join("crates/core/src/lifecycle.rs");
    let mut files = Vec::new();
    for dir in ["src", "templates", "crates/core/src"] {
        sources(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(
        files.len() > 100,
        "the scan found only {} files",
        files.len()
    );
    let names = state_names();
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != definitions) {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        found.extend(
            scan(&text, &names)
                .into_iter()
                .map(|f| format!("{shown}:{f}")),
        );
    }
    assert!(
        found.is_empty(),
        "states written as strings; use the core's enums (verdict_core::lifecycle) and \
         their methods instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_each_kind_of_misuse_and_leaves_the_rest() {
    let names = state_names();
    let misuses = [
        (r#"    if batch.state != "open" {"#, 1),
        (r#"    if "expired" == assignment.state {"#, 1),
        (
            r#"    if matches!(assignment.state.as_str(), "open" | "expired") {"#,
            2,
        ),
        (r#"        | "skipped" => true,"#, 1),
        (r#"    ended.state = "expired".into();"#, 1),
        (r#"        status: "draft".into(),"#, 1),
        (
            r#"<td>{% if s.batch.state == "open" %}Next{% endif %}</td>"#,
            1,
        ),
        (r#"{% when "closed" %}"#, 1),
    ];
    for (line, count) in misuses {
        assert_eq!(scan(line, &names).len(), count, "{line}");
    }
    let arm = "match assignment.state.as_str() {\n    \"done\" => 1,\n";
    assert_eq!(scan(arm, &names).len(), 1);
    let fine = [
        r#"    "UPDATE assignments SET state = 'expired' WHERE id = $1","#,
        r#"    .filter(|(field, _)| *field != "run")"#,
        "match field.as_str() {\n    \"judge\" => format!(\"Judge: {why}\"),\n",
        r#"    json!({"status": "submitted"})"#,
        r#"    ServiceError::field("judge", "is required")"#,
        r#"    // if state == "open""#,
        r#"<option value="open">open</option>"#,
        r#"    if a == "x" || "open".len() > 1 {"#,
        "#[cfg(test)]\nmod tests {\n    let s = State { state: \"open\" };\n",
    ];
    for line in fine {
        assert_eq!(scan(line, &names), Vec::<String>::new(), "{line}");
    }
}
