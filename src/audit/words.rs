//! An audit entry in words for the log page: what changed, before and after, and links
//! to the batch, account or rating it names. Pure: it reads the entry's detail only.

use serde_json::Value;
use uuid::Uuid;

use super::AuditView;

/// A link from an entry to what it names.
pub struct Link {
    pub text: String,
    pub href: String,
}

/// An entry as the log page shows it.
pub struct EntryWords {
    /// Where the target links to, when it names something with a page.
    pub target_href: Option<String>,
    /// What happened, a line each, in words.
    pub lines: Vec<String>,
    /// Other things the entry names.
    pub links: Vec<Link>,
}

fn id(detail: &Value, key: &str) -> Option<Uuid> {
    detail.get(key)?.as_str()?.parse().ok()
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

fn yes_no(value: &Value) -> &'static str {
    if value == &Value::Bool(true) {
        "yes"
    } else {
        "no"
    }
}

/// `setting: before → after` for each setting an entry of the shape `{changed, before,
/// after}` lists; `describe` puts a value in words.
fn changes(detail: &Value, describe: impl Fn(&str, &Value) -> String) -> Vec<String> {
    let names: Vec<&str> = detail["changed"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    names
        .into_iter()
        .map(
            |name| match (detail["before"].get(name), detail["after"].get(name)) {
                (Some(before), Some(after)) => {
                    format!(
                        "{}: {} → {}",
                        label(name),
                        describe(name, before),
                        describe(name, after)
                    )
                }
                _ => format!("{} changed", label(name)),
            },
        )
        .collect()
}

fn label(setting: &str) -> String {
    match setting {
        "role" => "Role".into(),
        "active" => "Active".into(),
        "password" => "Password".into(),
        "skills" => "Skills".into(),
        other => verdict_core::settings::label(other).into(),
    }
}

/// The entry in words.
pub fn words(entry: &AuditView) -> EntryWords {
    let d = &entry.detail;
    let batch_link = |links: &mut Vec<Link>| {
        if let Some(batch) = id(d, "batch_id") {
            links.push(Link {
                text: format!("batch {}", d["batch"].as_str().unwrap_or("page")),
                href: format!("/batches/{batch}"),
            });
        }
    };
    let user_href = |key: &str| id(d, key).map(|u| format!("/admin/users#user-{u}"));
    let mut links = Vec::new();
    let (target_href, lines) = match entry.action.as_str() {
        "batch.settings" => {
            let lines = if d.get("before").is_some() {
                changes(d, verdict_core::settings::describe)
            } else {
                vec![format!("Changed: {}", list(&d["changed"]))]
            };
            (
                id(d, "batch_id").map(|b| format!("/admin/batches/{b}")),
                lines,
            )
        }
        "batch.upload" => (
            id(d, "batch_id").map(|b| format!("/batches/{b}")),
            vec![format!(
                "{} tasks added, {} already there",
                text(&d["created"]),
                text(&d["unchanged"])
            )],
        ),
        "batch.export" => {
            let filters: Vec<String> = ["outcome", "status", "rater", "since", "until"]
                .into_iter()
                .filter_map(|k| d.get(k).filter(|v| !v.is_null()).map(|v| (k, v)))
                .map(|(k, v)| format!("{k} {}", text(v)))
                .collect();
            let format = d
                .get("format")
                .filter(|f| !f.is_null())
                .map_or("csv".into(), text);
            let which = if filters.is_empty() {
                "every rating".to_owned()
            } else {
                filters.join(", ")
            };
            (
                id(d, "batch_id").map(|b| format!("/batches/{b}")),
                vec![format!("{format}, {which}")],
            )
        }
        "user.create" => (
            user_href("user_id"),
            vec![format!("Created as {}", text(&d["role"]))],
        ),
        "user.update" if d.get("changed").is_some() => (
            user_href("user_id"),
            changes(d, |name, value| match (name, value) {
                ("active", _) => yes_no(value).into(),
                ("skills", Value::Array(skills)) if skills.is_empty() => "none".into(),
                ("skills", Value::Array(skills)) => {
                    skills.iter().map(text).collect::<Vec<_>>().join(", ")
                }
                _ => text(value),
            }),
        ),
        "user.update" => {
            // Entries recorded before the log kept values before and after.
            let mut lines = Vec::new();
            if let Some(role) = d.get("role") {
                lines.push(format!("Role: now {}", text(role)));
            }
            if let Some(active) = d.get("active") {
                lines.push(format!("Active: now {}", yes_no(active)));
            }
            if d.get("password_changed").is_some() {
                lines.push("Password changed".into());
            }
            (None, lines)
        }
        "rating.review" => {
            batch_link(&mut links);
            let mut lines = vec![format!("Decision: {}", text(&d["decision"]))];
            if let Some(comment) = d["comment"].as_str().filter(|c| !c.is_empty()) {
                lines.push(format!("Comment: {comment}"));
            }
            let rating = entry.target.as_deref().and_then(|t| t.parse::<Uuid>().ok());
            (rating.map(|r| format!("/review/{r}")), lines)
        }
        "assignment.release" => {
            batch_link(&mut links);
            if let Some(href) = user_href("rater") {
                links.push(Link {
                    text: "the rater".into(),
                    href,
                });
            }
            (None, vec!["Task given back to the pool".into()])
        }
        "token.create" | "token.revoke" => (
            Some("/tokens".into()),
            vec![format!("Token \u{201c}{}\u{201d}", text(&d["name"]))],
        ),
        "rubric.add" => (
            Some("/admin/rubrics".into()),
            vec![format!(
                "Version {}: {}",
                text(&d["version"]),
                text(&d["title"])
            )],
        ),
        "judge.create" | "judge.update" => (Some("/admin/judges".into()), fallback(d)),
        "webhook.create" => {
            batch_link(&mut links);
            let scope = if d["batch_id"].is_null() {
                "every batch"
            } else {
                "one batch"
            };
            (
                Some("/webhooks".into()),
                vec![format!("Sends {} of {scope}", list(&d["events"]))],
            )
        }
        "webhook.delete" => (
            Some("/webhooks".into()),
            vec!["Deleted with its deliveries".into()],
        ),
        "judge_run.start" => {
            let run = id(d, "run").map(|r| format!("/judge-runs/{r}/calls"));
            (run, vec![format!("Judge {} started", text(&d["judge"]))])
        }
        "judge_run.export" => {
            let run = id(d, "run").map(|r| format!("/judge-runs/{r}/calls"));
            let line = format!(
                "Judge {}'s answers, {}",
                text(&d["judge"]),
                text(&d["format"])
            );
            (run, vec![line])
        }
        "judge_run.pause" | "judge_run.resume" | "judge_run.cancel" => {
            let run = entry.target.as_deref().and_then(|t| t.parse::<Uuid>().ok());
            (
                run.map(|r| format!("/judge-runs/{r}/calls")),
                vec![format!("Run: {} → {}", text(&d["from"]), text(&d["to"]))],
            )
        }
        _ => (None, fallback(d)),
    };
    EntryWords {
        target_href,
        lines,
        links,
    }
}

fn list(value: &Value) -> String {
    value
        .as_array()
        .map(|items| items.iter().map(text).collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|| text(value))
}

/// Any other detail: `key: value` a line.
fn fallback(detail: &Value) -> Vec<String> {
    match detail {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", text(v)))
            .collect(),
        Value::Null => vec![],
        other => vec![text(other)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(action: &str, target: &str, detail: Value) -> AuditView {
        AuditView {
            at: chrono::Utc::now(),
            actor: Some("admin".into()),
            action: action.into(),
            target: Some(target.into()),
            detail,
        }
    }

    #[test]
    fn a_settings_change_reads_before_and_after_and_links_the_batch() {
        let batch = Uuid::from_u128(7);
        let w = words(&entry(
            "batch.settings",
            "demo",
            json!({"batch_id": batch, "changed": ["overlap", "raters"],
                   "before": {"overlap": 1, "raters": null},
                   "after": {"overlap": 2, "raters": ["ana", "ben"]}}),
        ));
        assert_eq!(
            w.lines,
            ["Raters per task: 1 → 2", "Raters: every rater → ana, ben"]
        );
        assert_eq!(w.target_href, Some(format!("/admin/batches/{batch}")));
    }

    #[test]
    fn a_user_change_and_a_review_read_as_words() {
        let user = Uuid::from_u128(9);
        let w = words(&entry(
            "user.update",
            "noor",
            json!({"user_id": user, "changed": ["role", "active", "password"],
                   "before": {"role": "rater", "active": true},
                   "after": {"role": "lead", "active": false}}),
        ));
        assert_eq!(
            w.lines,
            ["Role: rater → lead", "Active: yes → no", "Password changed"]
        );
        assert_eq!(w.target_href, Some(format!("/admin/users#user-{user}")));
        let w = words(&entry(
            "user.update",
            "noor",
            json!({"user_id": user, "changed": ["skills"],
                   "before": {"skills": []}, "after": {"skills": ["go", "rust"]}}),
        ));
        assert_eq!(w.lines, ["Skills: none → go, rust"]);
        let rating = Uuid::from_u128(3);
        let w = words(&entry(
            "rating.review",
            &rating.to_string(),
            json!({"decision": "return", "comment": "see B", "batch": "demo",
                   "batch_id": Uuid::from_u128(1)}),
        ));
        assert_eq!(w.lines, ["Decision: return", "Comment: see B"]);
        assert_eq!(w.target_href, Some(format!("/review/{rating}")));
        assert_eq!(w.links[0].text, "batch demo");
    }

    #[test]
    fn judge_runs_read_as_words_and_link_their_calls() {
        let run = Uuid::from_u128(5);
        let w = words(&entry(
            "judge_run.start",
            "demo",
            json!({"judge": "smollm", "run": run}),
        ));
        assert_eq!(w.lines, ["Judge smollm started"]);
        assert_eq!(w.target_href, Some(format!("/judge-runs/{run}/calls")));
        let w = words(&entry(
            "judge_run.pause",
            &run.to_string(),
            json!({"from": "running", "to": "paused"}),
        ));
        assert_eq!(w.lines, ["Run: running → paused"]);
        assert_eq!(w.target_href, Some(format!("/judge-runs/{run}/calls")));
        let w = words(&entry(
            "judge_run.export",
            "demo",
            json!({"judge": "smollm", "run": run, "format": "jsonl"}),
        ));
        assert_eq!(w.lines, ["Judge smollm's answers, jsonl"]);
        assert_eq!(w.target_href, Some(format!("/judge-runs/{run}/calls")));
    }

    #[test]
    fn a_target_that_is_no_id_gets_no_link() {
        let w = words(&entry(
            "rating.review",
            "\"><script>",
            json!({"decision": "accept"}),
        ));
        assert_eq!(w.target_href, None);
    }
}
