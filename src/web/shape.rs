//! JSON bodies of the wrong shape (a field missing, unknown or of the wrong type), reported
//! like every other 422: `{error, fields: {"<path>": "<why>"}}`, the path in the same form
//! the rubric checks use (`b.correctness`, `raters[0]`).

use serde::de::DeserializeOwned;

use crate::error::{AppError, FieldErrors};

/// Reads `bytes` as a `T`: 400 for text that is not JSON, 422 naming the field for JSON
/// of the wrong shape.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let error = match serde_path_to_error::deserialize::<_, T>(&mut json) {
        Ok(value) => {
            json.end()
                .map_err(|e| AppError::BadRequest(format!("malformed JSON: {e}")))?;
            return Ok(value);
        }
        Err(error) => error,
    };
    let path = error.path().to_string();
    let inner = error.into_inner();
    if !inner.is_data() {
        return Err(AppError::BadRequest(format!("malformed JSON: {inner}")));
    }
    let (field, why) = explain(&path, &without_position(&inner.to_string()));
    let mut fields = FieldErrors::new();
    fields.insert(field, why);
    Err(AppError::invalid(fields))
}

/// serde's message without its " at line L column C".
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// The field a serde data error is about, and why, in the app's words. `path` is where
/// the deserializer was (`.` at the top).
fn explain(path: &str, message: &str) -> (String, String) {
    let at = |name: &str| -> String {
        if path == "." || path.is_empty() {
            name.to_owned()
        } else if path.rsplit(['.', '[']).next() == Some(name) {
            path.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    let here = if path == "." || path.is_empty() {
        "body".to_owned()
    } else {
        path.to_owned()
    };
    let quoted = |text: &str| text.split('`').nth(1).unwrap_or_default().to_owned();
    if let Some(rest) = message.strip_prefix("missing field ") {
        (at(&quoted(rest)), "is required".into())
    } else if let Some(rest) = message.strip_prefix("unknown field ") {
        let expected = rest
            .split_once(", expected ")
            .map(|(_, list)| list.replace('`', ""))
            .unwrap_or_default();
        let why = if expected.is_empty() {
            "is not a field here".to_owned()
        } else {
            format!("is not a field here; expected {expected}")
        };
        (at(&quoted(rest)), why)
    } else if let Some(rest) = message.strip_prefix("invalid type: ") {
        match rest.split_once(", expected ") {
            Some((got, want)) => (here, format!("must be {want} (got {got})")),
            None => (here, format!("has the wrong type: {rest}")),
        }
    } else if let Some(rest) = message.strip_prefix("invalid value: ") {
        match rest.split_once(", expected ") {
            Some((got, want)) => (here, format!("must be {want} (got {got})")),
            None => (here, format!("is not allowed: {rest}")),
        }
    } else {
        (here, message.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Skip {
        reason: String,
        note: Option<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Members {
        raters: Option<Vec<String>>,
        inner: Option<Skip>,
    }

    fn fields_of<T: DeserializeOwned + std::fmt::Debug>(body: &str) -> FieldErrors {
        match parse::<T>(body.as_bytes()) {
            Err(AppError::Validation { fields, .. }) => fields,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn every_shape_error_names_its_field() {
        assert_eq!(fields_of::<Skip>("{}")["reason"], "is required");
        let unknown = fields_of::<Skip>(r#"{"reason": "other", "colour": 1}"#);
        assert_eq!(
            unknown["colour"],
            "is not a field here; expected reason or note"
        );
        let typed = fields_of::<Skip>(r#"{"reason": 7}"#);
        assert_eq!(typed["reason"], "must be a string (got integer `7`)");
        let listed = fields_of::<Members>(r#"{"raters": ["a", 2]}"#);
        assert_eq!(listed["raters[1]"], "must be a string (got integer `2`)");
        let nested = fields_of::<Members>(r#"{"inner": {}}"#);
        assert_eq!(nested["inner.reason"], "is required");
        let whole = fields_of::<Skip>("7");
        assert!(
            whole["body"].starts_with("must be struct Skip"),
            "{whole:?}"
        );
    }

    #[test]
    fn text_that_is_not_json_is_a_bad_request() {
        for body in ["{", "nope", r#"{"reason": "other"} trailing"#] {
            assert!(
                matches!(parse::<Skip>(body.as_bytes()), Err(AppError::BadRequest(_))),
                "{body}"
            );
        }
    }
}
