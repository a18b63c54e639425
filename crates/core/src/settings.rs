//! A batch's settings by name, in words: what the settings page, its confirmation and the
//! audit log call each one and how they read its value.

use serde_json::Value;

/// Every setting's name in the API, in the order the settings page asks them.
pub const SETTINGS: [&str; 15] = [
    "state",
    "overlap",
    "max_overlap",
    "escalate",
    "route_by",
    "routing",
    "randomize",
    "raters_see_external_ids",
    "lease_minutes",
    "min_explanation_len",
    "bradley_terry_prior",
    "final_method",
    "classifications",
    "raters",
    "leads",
];

/// A setting's name in words.
pub fn label(setting: &str) -> &'static str {
    match setting {
        "state" => "State",
        "overlap" => "Raters per task",
        "max_overlap" => "Most raters per task",
        "escalate" => "One more rater when",
        "route_by" => "Route tasks by",
        "routing" => "Routing",
        "randomize" => "Random A/B order",
        "raters_see_external_ids" => "Raters see external ids",
        "lease_minutes" => "Lease",
        "min_explanation_len" => "Shortest explanation",
        "bradley_terry_prior" => "Bradley-Terry prior",
        "final_method" => "Final answer where no lead decided",
        "classifications" => "Classification questions",
        "raters" => "Raters",
        "leads" => "Leads",
        _ => "Setting",
    }
}

/// A setting's value in words, as the confirmation and the audit log show it.
pub fn describe(setting: &str, value: &Value) -> String {
    match (setting, value) {
        ("randomize" | "raters_see_external_ids", Value::Bool(on)) => {
            if *on { "on" } else { "off" }.into()
        }
        ("lease_minutes", Value::Number(n)) => format!("{n} minutes"),
        ("escalate", Value::Null) => "the rubric's default".into(),
        ("route_by", Value::Null) => "nothing (tasks in upload order to anyone)".into(),
        ("routing", Value::String(mode)) if mode == "prefer" => {
            "prefer: tasks matching a rater's skills first".into()
        }
        ("routing", Value::String(mode)) if mode == "strict" => {
            "strict: only tasks matching a rater's skills".into()
        }
        ("min_explanation_len", Value::Number(n)) => format!("{n} characters"),
        ("bradley_terry_prior", Value::Number(n)) if n.as_f64() == Some(0.0) => {
            "none (plain maximum likelihood)".into()
        }
        ("bradley_terry_prior", Value::Number(n)) => format!("{n} wins each way per pair"),
        ("final_method", Value::String(m)) if m == "majority" => "majority vote".into(),
        ("final_method", Value::String(m)) if m == "dawid_skene" => "Dawid-Skene".into(),
        ("raters", Value::Null) => "every rater".into(),
        ("leads", Value::Null) => "every lead".into(),
        ("raters" | "leads", Value::Array(names)) if names.is_empty() => "nobody".into(),
        ("raters" | "leads", Value::Array(names)) => names
            .iter()
            .map(|n| n.as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(", "),
        ("classifications", Value::Array(questions)) if questions.is_empty() => "none".into(),
        ("classifications", Value::Array(questions)) => questions
            .iter()
            .map(|q| {
                let options: Vec<&str> = q["options"]
                    .as_array()
                    .map(|o| o.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut flags = Vec::new();
                if q["multiple"] == Value::Bool(true) {
                    flags.push("several choices");
                }
                if q["required"] == Value::Bool(false) {
                    flags.push("optional");
                }
                let flags = if flags.is_empty() {
                    String::new()
                } else {
                    format!(", {}", flags.join(", "))
                };
                format!(
                    "{} ({}{flags}): {}",
                    q["label"].as_str().unwrap_or_default(),
                    q["key"].as_str().unwrap_or_default(),
                    options.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        (_, Value::String(s)) => s.clone(),
        (_, other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn settings_read_as_words() {
        assert_eq!(label("overlap"), "Raters per task");
        assert_eq!(label("nonsense"), "Setting");
        assert_eq!(describe("randomize", &json!(false)), "off");
        assert_eq!(describe("lease_minutes", &json!(30)), "30 minutes");
        assert_eq!(describe("raters", &Value::Null), "every rater");
        assert_eq!(describe("escalate", &Value::Null), "the rubric's default");
        assert_eq!(describe("escalate", &json!("points:sxs:3")), "points:sxs:3");
        assert_eq!(
            describe("route_by", &Value::Null),
            "nothing (tasks in upload order to anyone)"
        );
        assert_eq!(
            describe("route_by", &json!("metadata.language")),
            "metadata.language"
        );
        assert!(describe("routing", &json!("strict")).starts_with("strict: only"));
        assert_eq!(describe("leads", &json!(["ada", "bo"])), "ada, bo");
        let question = json!([{"key": "language", "label": "Language", "multiple": true,
                               "required": false, "options": ["python", "rust"]}]);
        assert_eq!(
            describe("classifications", &question),
            "Language (language, several choices, optional): python, rust"
        );
        assert!(SETTINGS.iter().all(|s| label(s) != "Setting"));
    }
}
