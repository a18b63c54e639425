//! Reading a batch file: JSON Lines, a JSON array or CSV, one task per record.
//!
//! Records are read one at a time from the bytes of the upload, which are held once; a
//! record is checked on its own by [`parse_task`], so every bad one can be reported with
//! its line number and reason.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The largest text a single field may hold.
pub const MAX_FIELD_BYTES: usize = 2 * 1024 * 1024;
/// The longest external id.
pub const MAX_ID_CHARS: usize = 200;
/// How deep metadata may nest.
pub const MAX_METADATA_DEPTH: usize = 8;
/// At most this many bad records are listed; the rest are only counted.
pub const MAX_REPORTED_ERRORS: usize = 100;

/// How a batch file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object a line.
    Jsonl,
    /// One JSON array of objects.
    JsonArray,
    /// A header row naming `external_id,prompt,response_a,response_b` (and optionally
    /// `model_a`, `model_b`, `meta.*`), then one task a row.
    Csv,
}

impl Format {
    /// From a request's `Content-Type` (parameters such as `charset` are ignored).
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        match content_type.split(';').next().unwrap_or("").trim() {
            "application/x-ndjson" | "application/jsonl" | "application/jsonlines" => {
                Some(Self::Jsonl)
            }
            "application/json" => Some(Self::JsonArray),
            "text/csv" => Some(Self::Csv),
            _ => None,
        }
    }

    /// From a file name's extension.
    pub fn from_file_name(name: &str) -> Option<Self> {
        let ext = name.rsplit('.').next()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" => Some(Self::Jsonl),
            "json" => Some(Self::JsonArray),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }
}

/// How many responses a task of the batch holds: its rubric compares two (`response_a`,
/// `response_b`, with `model_a`, `model_b`) or judges one (`response`, with `model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responses {
    Two,
    One,
}

impl Responses {
    /// The fields a task of this kind has.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Responses::Two => &[
                "external_id",
                "prompt",
                "response_a",
                "response_b",
                "model_a",
                "model_b",
                "metadata",
                "gold",
            ],
            Responses::One => &[
                "external_id",
                "prompt",
                "response",
                "model",
                "metadata",
                "gold",
            ],
        }
    }

    /// The CSV columns a file of such tasks must have.
    fn required_columns(self) -> &'static [&'static str] {
        match self {
            Responses::Two => &["external_id", "prompt", "response_a", "response_b"],
            Responses::One => &["external_id", "prompt", "response"],
        }
    }

    /// Why a field of the other kind of task does not belong.
    fn misfit(self, field: &str) -> Option<String> {
        match (self, field) {
            (Responses::One, "response_a" | "response_b" | "model_a" | "model_b") => Some(format!(
                "{field} is for a rubric that compares two responses; this batch's rubric \
                 judges one: give response (and model)"
            )),
            (Responses::Two, "response" | "model") => Some(format!(
                "{field} is for a rubric that judges one response; this batch's rubric \
                 compares two: give response_a and response_b (and model_a, model_b)"
            )),
            _ => None,
        }
    }
}

/// A checked task, ready to store. A task with one response keeps it as `response_a`
/// (and its model as `model_a`), with `response_b` empty.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub external_id: String,
    /// A string, or a list of `{role, content}` messages.
    pub prompt: Value,
    pub response_a: String,
    pub response_b: String,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    pub metadata: Map<String, Value>,
    /// A gold task's expected answers by path, as given (checked against the batch's
    /// rubric by the checker `check` is given); `None` for any other task.
    pub gold: Option<Value>,
    /// SHA-256 of everything but the id: a re-upload with the same hash is unchanged.
    pub content_hash: String,
}

/// A bad record: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct RecordError {
    /// 1-based line of the file where the record starts.
    pub line: u64,
    pub message: String,
}

/// One record as read: its line and either the task or why it is refused.
pub type Record = (u64, Result<NewTask, String>);

/// The records of a file, read one at a time.
pub type Records<'a> = Box<dyn Iterator<Item = Record> + Send + 'a>;

/// The records of `bytes`, one at a time. Fails at once (line and reason) when the file
/// as a whole cannot be read that way: a JSON file that is not an array, a CSV header
/// without the required columns.
pub fn records(
    format: Format,
    bytes: &[u8],
    responses: Responses,
) -> Result<Records<'_>, RecordError> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    match format {
        Format::Jsonl => Ok(Box::new(jsonl(bytes, responses))),
        Format::JsonArray => json_array(bytes, responses),
        Format::Csv => csv_records(bytes, responses),
    }
}

fn jsonl(bytes: &[u8], responses: Responses) -> impl Iterator<Item = Record> + '_ {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter_map(move |(i, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                return None;
            }
            let number = i as u64 + 1;
            let task = std::str::from_utf8(line)
                .map_err(|e| format!("not valid UTF-8 (byte {})", e.valid_up_to() + 1))
                .and_then(|text| serde_json::from_str::<Value>(text).map_err(json_error))
                .and_then(|value| parse_task(&value, responses));
            Some((number, task))
        })
}

fn json_error(err: serde_json::Error) -> String {
    let text = err.to_string();
    // serde_json appends " at line L column C"; inside one record the line is ours.
    match text.rsplit_once(" at line ") {
        Some((message, _)) => format!("malformed JSON: {message}"),
        None => format!("malformed JSON: {text}"),
    }
}

fn json_array(bytes: &[u8], responses: Responses) -> Result<Records<'_>, RecordError> {
    let text = std::str::from_utf8(bytes).map_err(|e| RecordError {
        line: line_of(bytes, e.valid_up_to()),
        message: "the file is not valid UTF-8".into(),
    })?;
    let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| RecordError {
        line: e.line() as u64,
        message: if e.is_data() {
            "a JSON upload must be an array of task objects".into()
        } else {
            json_error(e)
        },
    })?;
    let mut line = 1u64;
    let mut seen = 0usize;
    Ok(Box::new(items.into_iter().map(move |raw| {
        let offset = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        line += bytecount_newlines(&text.as_bytes()[seen..offset]);
        seen = offset;
        let task = serde_json::from_str::<Value>(raw.get())
            .map_err(json_error)
            .and_then(|v| parse_task(&v, responses));
        (line, task)
    })))
}

fn bytecount_newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

fn line_of(bytes: &[u8], offset: usize) -> u64 {
    1 + bytecount_newlines(&bytes[..offset.min(bytes.len())])
}

fn csv_records(bytes: &[u8], responses: Responses) -> Result<Records<'_>, RecordError> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let header_error = |message: String| RecordError { line: 1, message };
    let headers = reader
        .byte_headers()
        .map_err(|e| header_error(format!("unreadable header row: {e}")))?
        .clone();
    let mut names = Vec::with_capacity(headers.len());
    for raw in headers.iter() {
        let name = std::str::from_utf8(raw)
            .map_err(|_| header_error("the header row is not valid UTF-8".into()))?;
        let name = name.trim().to_owned();
        if let Some(why) = responses.misfit(&name) {
            return Err(header_error(format!("column {why}")));
        }
        if name == "gold" {
            return Err(header_error(
                "column \"gold\": expected answers are given in the JSON formats (JSONL or a \
                 JSON array), as an object on the task"
                    .into(),
            ));
        }
        let known = (name != "metadata" && responses.keys().contains(&name.as_str()))
            || name.strip_prefix("meta.").is_some_and(|k| !k.is_empty());
        if !known {
            let columns: Vec<&str> = responses
                .keys()
                .iter()
                .copied()
                .filter(|k| !matches!(*k, "metadata" | "gold"))
                .collect();
            return Err(header_error(format!(
                "unknown column {name:?}: use {} and meta.* columns",
                columns.join(", ")
            )));
        }
        if names.contains(&name) {
            return Err(header_error(format!("column {name:?} appears twice")));
        }
        names.push(name);
    }
    if let Some(missing) = responses
        .required_columns()
        .iter()
        .find(|c| !names.iter().any(|n| n == *c))
    {
        return Err(header_error(format!(
            "the header row has no {missing:?} column"
        )));
    }
    let mut lines = CsvLines {
        bytes,
        seen: 0,
        line: 1,
    };
    Ok(Box::new(reader.into_byte_records().map(
        move |row| match row {
            Err(e) => {
                let line = e.position().map_or(0, |p| lines.at(p.byte()));
                (line, Err(format!("unreadable CSV row: {e}")))
            }
            Ok(row) => {
                let line = row.position().map_or(0, |p| lines.at(p.byte()));
                (line, csv_task(&names, &row, responses))
            }
        },
    )))
}

/// The lines CSV records start on, from their byte offsets (which only grow), counting
/// line breaks once. Not the csv crate's own `Position::line`: that is taken before the
/// previous record's `\n` and any blank lines, so it is one short on every record of a
/// CRLF file and after blank lines. Like the CSV reader, a lone `\r` ends a line too.
struct CsvLines<'a> {
    bytes: &'a [u8],
    seen: usize,
    line: u64,
}

impl CsvLines<'_> {
    fn at(&mut self, offset: u64) -> u64 {
        let bytes = self.bytes;
        let offset = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
        let start = offset
            + bytes[offset..]
                .iter()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
        if start < self.seen {
            (self.seen, self.line) = (0, 1);
        }
        let breaks = (self.seen..start)
            .filter(|&i| {
                bytes[i] == b'\n' || (bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
            })
            .count();
        self.line += breaks as u64;
        self.seen = start;
        self.line
    }
}

fn csv_task(
    names: &[String],
    row: &csv::ByteRecord,
    responses: Responses,
) -> Result<NewTask, String> {
    if row.len() != names.len() {
        return Err(format!(
            "has {} fields, the header has {}",
            row.len(),
            names.len()
        ));
    }
    let mut object = Map::new();
    let mut metadata = Map::new();
    for (name, raw) in names.iter().zip(row.iter()) {
        let text = std::str::from_utf8(raw).map_err(|_| format!("{name} is not valid UTF-8"))?;
        if let Some(key) = name.strip_prefix("meta.") {
            if !text.is_empty() {
                metadata.insert(key.to_owned(), Value::from(text));
            }
        } else if !(text.is_empty() && name.starts_with("model")) {
            object.insert(name.clone(), Value::from(text));
        }
    }
    object.insert("metadata".into(), Value::Object(metadata));
    parse_task(&Value::Object(object), responses)
}

/// Checks one record and turns it into a task with `responses`, or says (naming the
/// field) why not.
pub fn parse_task(value: &Value, responses: Responses) -> Result<NewTask, String> {
    let Some(object) = value.as_object() else {
        return Err("a task must be a JSON object".into());
    };
    let keys = responses.keys();
    let unknown: Vec<&String> = object
        .keys()
        .filter(|k| !keys.contains(&k.as_str()))
        .collect();
    // A response of the other kind of task says the most: name it first.
    let first = unknown.iter().find(|k| k.starts_with("response"));
    if let Some(unknown) = first.or(unknown.first()) {
        return Err(responses.misfit(unknown).unwrap_or_else(|| {
            format!("unknown field {unknown:?} (a task has {})", keys.join(", "))
        }));
    }
    let external_id = match object.get("external_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        None | Some(Value::Null) => return Err("external_id is required".into()),
        Some(Value::String(_)) => return Err("external_id is empty".into()),
        Some(_) => return Err("external_id must be a string".into()),
    };
    if external_id.chars().count() > MAX_ID_CHARS {
        return Err(format!(
            "external_id is longer than {MAX_ID_CHARS} characters"
        ));
    }
    check_text("external_id", &external_id)?;
    let prompt = parse_prompt(object.get("prompt"))?;
    let (response_a, response_b, model_a, model_b) = match responses {
        Responses::Two => (
            required_text(object, "response_a")?,
            required_text(object, "response_b")?,
            optional_text(object, "model_a")?,
            optional_text(object, "model_b")?,
        ),
        Responses::One => (
            required_text(object, "response")?,
            String::new(),
            optional_text(object, "model")?,
            None,
        ),
    };
    let metadata = match object.get("metadata") {
        None | Some(Value::Null) => Map::new(),
        Some(value @ Value::Object(map)) => {
            if depth(&Value::Object(map.clone())) > MAX_METADATA_DEPTH {
                return Err(format!(
                    "metadata nests deeper than {MAX_METADATA_DEPTH} levels"
                ));
            }
            // The serialised text escapes a NUL as `\u0000`, which PostgreSQL's jsonb
            // refuses all the same: look in every key and string.
            if holds_nul(value) {
                return Err("metadata contains a NUL character".into());
            }
            let text = serde_json::to_string(map).map_err(|e| e.to_string())?;
            check_text("metadata", &text)?;
            map.clone()
        }
        Some(_) => return Err("metadata must be an object".into()),
    };
    let gold = match object.get("gold") {
        None | Some(Value::Null) => None,
        Some(value @ Value::Object(_)) => Some(value.clone()),
        Some(_) => {
            return Err(
                "gold must be an object of expected answers by path, e.g. {\"sxs\": 2}".into(),
            );
        }
    };
    // A task without gold hashes as it did before gold existed.
    let content = match &gold {
        None => serde_json::json!([prompt, response_a, response_b, model_a, model_b, metadata]),
        Some(gold) => {
            serde_json::json!([
                prompt, response_a, response_b, model_a, model_b, metadata, gold
            ])
        }
    };
    let digest = Sha256::digest(content.to_string().as_bytes());
    let content_hash = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(NewTask {
        external_id,
        prompt,
        response_a,
        response_b,
        model_a,
        model_b,
        metadata,
        gold,
        content_hash,
    })
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether a NUL character is in any string or key of `value`.
fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// Refuses text over the field limit, or holding a NUL character (PostgreSQL cannot
/// store one, so SQLite refuses it too: one answer on both).
fn check_text(field: &str, text: &str) -> Result<(), String> {
    if text.len() > MAX_FIELD_BYTES {
        return Err(format!(
            "{field} is {:.1} MiB, over the limit of {} MiB for one field",
            text.len() as f64 / (1024.0 * 1024.0),
            MAX_FIELD_BYTES / (1024 * 1024)
        ));
    }
    if text.contains('\0') {
        return Err(format!("{field} contains a NUL character"));
    }
    Ok(())
}

fn required_text(object: &Map<String, Value>, field: &str) -> Result<String, String> {
    match object.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => {
            check_text(field, s)?;
            Ok(s.clone())
        }
        Some(Value::String(_)) => Err(format!("{field} is empty")),
        None | Some(Value::Null) => Err(format!("{field} is required")),
        Some(_) => Err(format!("{field} must be a string")),
    }
}

fn optional_text(object: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) if s.chars().count() > MAX_ID_CHARS => {
            Err(format!("{field} is longer than {MAX_ID_CHARS} characters"))
        }
        Some(Value::String(s)) => {
            check_text(field, s)?;
            Ok(Some(s.trim().to_owned()))
        }
        Some(_) => Err(format!("{field} must be a string")),
    }
}

const ROLES: [&str; 3] = ["system", "user", "assistant"];

fn parse_prompt(value: Option<&Value>) -> Result<Value, String> {
    match value {
        Some(Value::String(s)) if !s.trim().is_empty() => {
            check_text("prompt", s)?;
            Ok(Value::from(s.as_str()))
        }
        Some(Value::String(_)) => Err("prompt is empty".into()),
        None | Some(Value::Null) => Err("prompt is required".into()),
        Some(Value::Array(messages)) if messages.is_empty() => {
            Err("prompt is an empty conversation".into())
        }
        Some(Value::Array(messages)) => {
            let mut total = 0;
            for (i, message) in messages.iter().enumerate() {
                let at = format!("prompt[{i}]");
                let Some(m) = message.as_object() else {
                    return Err(format!("{at} must be an object with role and content"));
                };
                if let Some(k) = m.keys().find(|k| *k != "role" && *k != "content") {
                    return Err(format!(
                        "{at} has an unknown field {k:?} (a message has role and content)"
                    ));
                }
                match m.get("role").and_then(Value::as_str) {
                    Some(role) if ROLES.contains(&role) => {}
                    Some(role) => {
                        return Err(format!(
                            "{at}.role {role:?} is not one of system, user, assistant"
                        ));
                    }
                    None => return Err(format!("{at}.role is required")),
                }
                match m.get("content").and_then(Value::as_str) {
                    Some(c) if !c.trim().is_empty() => {
                        check_text(&format!("{at}.content"), c)?;
                        total += c.len();
                    }
                    _ => return Err(format!("{at}.content must be a non-empty string")),
                }
            }
            if total > MAX_FIELD_BYTES {
                return Err(format!(
                    "prompt is over the limit of {} MiB for one field",
                    MAX_FIELD_BYTES / (1024 * 1024)
                ));
            }
            Ok(Value::Array(messages.clone()))
        }
        Some(_) => Err("prompt must be a string or a list of {role, content} messages".into()),
    }
}

/// What a check of a whole file found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Tasks whose id is new to the batch.
    pub new: u64,
    /// Tasks identical to the stored ones.
    pub unchanged: u64,
    /// The first bad records.
    pub errors: Vec<RecordError>,
    /// How many records are bad in all.
    pub error_count: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

impl Checked {
    fn refuse(&mut self, line: u64, message: String) {
        self.error_count += 1;
        if self.errors.len() < MAX_REPORTED_ERRORS {
            self.errors.push(RecordError { line, message });
        }
    }
}

/// Reads every record of a file and checks it, against the others (no id twice),
/// against `existing` (id to content hash of tasks already in the batch: the same id
/// must come with the same content), and a gold task's expected answers with `gold`
/// (the batch's rubric knows them: see `crate::gold::check_task`; taking a checker keeps
/// this module free of the app's own items, so the fuzz crate compiles it alone).
/// `progress` hears how many bytes were read so far.
pub fn check(
    format: Format,
    bytes: &[u8],
    responses: Responses,
    gold: impl Fn(&Value) -> Result<(), String>,
    existing: &HashMap<String, String>,
    mut progress: impl FnMut(u64),
) -> Checked {
    let mut checked = Checked {
        bytes: bytes.len() as u64,
        ..Checked::default()
    };
    let records = match records(format, bytes, responses) {
        Ok(records) => records,
        Err(e) => {
            checked.refuse(e.line, e.message);
            return checked;
        }
    };
    let mut first_line: HashMap<String, u64> = HashMap::new();
    let total_lines = bytecount_newlines(bytes).max(1);
    for (line, task) in records {
        progress(bytes.len() as u64 * line.min(total_lines) / total_lines);
        let task = match task {
            Ok(task) => task,
            Err(message) => {
                checked.refuse(line, message);
                continue;
            }
        };
        if let Some(Err(why)) = task.gold.as_ref().map(&gold) {
            checked.refuse(line, why);
            continue;
        }
        if let Some(first) = first_line.get(&task.external_id) {
            checked.refuse(
                line,
                format!(
                    "external_id {:?} appears again (first on line {first})",
                    task.external_id
                ),
            );
            continue;
        }
        first_line.insert(task.external_id.clone(), line);
        match existing.get(&task.external_id) {
            None => checked.new += 1,
            Some(hash) if *hash == task.content_hash => checked.unchanged += 1,
            Some(_) => checked.refuse(
                line,
                format!(
                    "external_id {:?} is already in this batch with different content; \
                     give changed tasks new ids",
                    task.external_id
                ),
            ),
        }
    }
    if checked.new + checked.unchanged == 0 && checked.error_count == 0 {
        checked.refuse(1, "the file holds no tasks".into());
    }
    progress(bytes.len() as u64);
    checked
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task(id: &str) -> Value {
        json!({"external_id": id, "prompt": "Fix my loop", "response_a": "A", "response_b": "B"})
    }

    fn lines(values: &[Value]) -> String {
        values.iter().map(|v| v.to_string() + "\n").collect()
    }

    fn check_all(format: Format, bytes: &[u8]) -> Checked {
        check(
            format,
            bytes,
            Responses::Two,
            any_gold,
            &HashMap::new(),
            |_| {},
        )
    }

    #[test]
    fn formats_come_from_content_types_and_file_names() {
        assert_eq!(
            Format::from_content_type("application/x-ndjson"),
            Some(Format::Jsonl)
        );
        assert_eq!(
            Format::from_content_type("application/json; charset=utf-8"),
            Some(Format::JsonArray)
        );
        assert_eq!(Format::from_content_type("text/csv"), Some(Format::Csv));
        assert_eq!(Format::from_content_type("text/plain"), None);
        assert_eq!(Format::from_file_name("tasks.JSONL"), Some(Format::Jsonl));
        assert_eq!(Format::from_file_name("tasks.txt"), None);
    }

    #[test]
    fn a_good_jsonl_file_reads_every_task() {
        let file = lines(&[task("1"), task("2")]);
        let checked = check_all(Format::Jsonl, file.as_bytes());
        assert_eq!((checked.new, checked.error_count), (2, 0));
    }

    #[test]
    fn jsonl_tolerates_a_bom_crlf_and_blank_lines() {
        let file = format!("\u{feff}{}\r\n\r\n{}\r\n", task("1"), task("2"));
        let checked = check_all(Format::Jsonl, file.as_bytes());
        assert_eq!(
            (checked.new, checked.error_count),
            (2, 0),
            "{:?}",
            checked.errors
        );
    }

    #[test]
    fn every_bad_record_is_named_with_its_line() {
        let mut no_prompt = task("3");
        no_prompt.as_object_mut().unwrap().remove("prompt");
        let mut typo = task("5");
        typo["responseA"] = json!("x");
        let file = format!(
            "{}\n{}\n{}\n{{not json\n{}\n{}\n",
            task("1"),
            task("1"),
            no_prompt,
            typo,
            json!({"external_id": "6", "prompt": "", "response_a": 1, "response_b": "b"})
        );
        let checked = check_all(Format::Jsonl, file.as_bytes());
        let got: Vec<(u64, &str)> = checked
            .errors
            .iter()
            .map(|e| (e.line, e.message.as_str()))
            .collect();
        assert_eq!(
            got[0],
            (2, "external_id \"1\" appears again (first on line 1)")
        );
        assert_eq!(got[1], (3, "prompt is required"));
        assert_eq!(got[2].0, 4);
        assert!(
            got[2].1.starts_with("malformed JSON: key must be a string"),
            "{}",
            got[2].1
        );
        assert_eq!(
            got[3],
            (
                5,
                "unknown field \"responseA\" (a task has external_id, prompt, response_a, response_b, model_a, model_b, metadata, gold)"
            )
        );
        assert_eq!(got[4], (6, "prompt is empty"));
        assert_eq!(checked.error_count, 5);
    }

    #[test]
    fn invalid_utf8_nul_and_oversized_fields_are_refused() {
        let mut file = lines(&[task("1")]).into_bytes();
        file.extend_from_slice(b"{\"external_id\": \"2\xff\"}\n");
        let nul =
            json!({"external_id": "3", "prompt": "a\u{0}b", "response_a": "A", "response_b": "B"});
        let big = json!({"external_id": "4", "prompt": "p", "response_a": "x".repeat(MAX_FIELD_BYTES + 1), "response_b": "B"});
        file.extend(lines(&[nul, big]).into_bytes());
        let checked = check_all(Format::Jsonl, &file);
        let messages: Vec<&str> = checked.errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(messages[0], "not valid UTF-8 (byte 19)");
        assert_eq!(messages[1], "prompt contains a NUL character");
        assert_eq!(
            messages[2],
            "response_a is 2.0 MiB, over the limit of 2 MiB for one field"
        );
    }

    #[test]
    fn nul_in_metadata_is_refused() {
        // Found by the import_csv fuzz target: the check of the serialised metadata saw
        // `\u0000`, never a NUL, so PostgreSQL's jsonb column got to refuse it instead.
        for metadata in [
            json!({"language": "py\u{0}thon"}),
            json!({"k\u{0}ey": "v"}),
            json!({"deep": [{"x": ["\u{0}"]}]}),
        ] {
            let mut t = task("1");
            t["metadata"] = metadata;
            assert_eq!(
                parse_task(&t, Responses::Two).unwrap_err(),
                "metadata contains a NUL character"
            );
        }
        let csv = b"external_id,prompt,response_a,response_b,meta.language\n1,p,A,B,a\0b\n";
        let checked = check_all(Format::Csv, csv);
        assert_eq!(
            checked.errors,
            vec![RecordError {
                line: 2,
                message: "metadata contains a NUL character".into()
            }]
        );
    }

    #[test]
    fn metadata_numbers_are_read_exactly() {
        // Found by the import_jsonl fuzz target: serde_json's default float parsing can be
        // one bit off, so a task written back out and read again had another content hash.
        let line = r#"{"external_id": "1", "prompt": "p", "response_a": "A", "response_b": "B", "metadata": {"score": 4.444444444444e35}}"#;
        let (_, read) = records(Format::Jsonl, line.as_bytes(), Responses::Two)
            .unwrap()
            .next()
            .unwrap();
        let read = read.unwrap();
        assert_eq!(read.metadata["score"].as_f64(), Some(4.444444444444e35));
        let written = json!({"external_id": "1", "prompt": "p", "response_a": "A",
            "response_b": "B", "metadata": read.metadata})
        .to_string();
        let (_, again) = records(Format::Jsonl, written.as_bytes(), Responses::Two)
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(again, Ok(read));
    }

    #[test]
    fn deep_nesting_is_refused_without_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let checked = check_all(Format::Jsonl, deep.as_bytes());
        assert!(
            checked.errors[0].message.contains("recursion limit"),
            "{:?}",
            checked.errors
        );
        let mut nested = json!("leaf");
        for _ in 0..MAX_METADATA_DEPTH + 1 {
            nested = json!({"k": nested});
        }
        let mut t = task("1");
        t["metadata"] = nested;
        let checked = check_all(Format::Jsonl, lines(&[t]).as_bytes());
        assert_eq!(
            checked.errors[0].message,
            "metadata nests deeper than 8 levels"
        );
    }

    #[test]
    fn conversations_are_checked_message_by_message() {
        let mut t = task("1");
        t["prompt"] = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "fix it"}]);
        assert!(parse_task(&t, Responses::Two).is_ok());
        t["prompt"] = json!([{"role": "robot", "content": "hi"}]);
        assert_eq!(
            parse_task(&t, Responses::Two).unwrap_err(),
            "prompt[0].role \"robot\" is not one of system, user, assistant"
        );
        t["prompt"] = json!([{"role": "user", "content": ""}]);
        assert_eq!(
            parse_task(&t, Responses::Two).unwrap_err(),
            "prompt[0].content must be a non-empty string"
        );
        t["prompt"] = json!([]);
        assert_eq!(
            parse_task(&t, Responses::Two).unwrap_err(),
            "prompt is an empty conversation"
        );
        t["prompt"] = json!(42);
        assert_eq!(
            parse_task(&t, Responses::Two).unwrap_err(),
            "prompt must be a string or a list of {role, content} messages"
        );
    }

    #[test]
    fn a_json_array_reports_lines_of_its_elements() {
        let file = format!(
            "[\n  {},\n  {},\n  {{\"external_id\": \"3\"}}\n]\n",
            task("1"),
            task("2")
        );
        let checked = check_all(Format::JsonArray, file.as_bytes());
        assert_eq!(checked.new, 2);
        assert_eq!(
            checked.errors,
            vec![RecordError {
                line: 4,
                message: "prompt is required".into()
            }]
        );
        let not_array = check_all(Format::JsonArray, task("1").to_string().as_bytes());
        assert_eq!(
            not_array.errors[0].message,
            "a JSON upload must be an array of task objects"
        );
    }

    #[test]
    fn csv_reads_meta_columns_and_reports_ragged_rows() {
        let file = "external_id,prompt,response_a,response_b,model_a,meta.language\n\
                    1,\"Fix, please\",A,B,m1,python\n\
                    2,p,A\n\
                    3,\"multi\nline\",A,B,,\n";
        let mut tasks = vec![];
        for (line, task) in records(Format::Csv, file.as_bytes(), Responses::Two).unwrap() {
            tasks.push((line, task));
        }
        let first = tasks[0].1.as_ref().unwrap();
        assert_eq!(first.prompt, json!("Fix, please"));
        assert_eq!(first.model_a.as_deref(), Some("m1"));
        assert_eq!(first.metadata["language"], "python");
        assert_eq!(tasks[1], (3, Err("has 3 fields, the header has 6".into())));
        let third = tasks[2].1.as_ref().unwrap();
        assert_eq!((tasks[2].0, third.model_a.clone()), (4, None));
    }

    #[test]
    fn csv_rows_are_numbered_by_the_line_they_start_on() {
        // Found by the import_csv fuzz target: the csv crate's own line numbers are one
        // short with CRLF line endings and ignore the blank lines skipped before a row.
        let crlf = "external_id,prompt,response_a,response_b\r\n1,p,A,B\r\n\r\n\
                    2,\"multi\r\nline\",A,B\r\n3,p,A\r\n";
        let lf = "external_id,prompt,response_a,response_b\n\n\n1,p,A,B\n2,p,A\n";
        let cr = "external_id,prompt,response_a,response_b\r1,p,A,B\r\r2,\"a\rb\",A,B\r";
        for (file, expected) in [(crlf, vec![2, 4, 6]), (lf, vec![4, 5]), (cr, vec![2, 4])] {
            let lines: Vec<u64> = records(Format::Csv, file.as_bytes(), Responses::Two)
                .unwrap()
                .map(|(line, _)| line)
                .collect();
            assert_eq!(lines, expected, "{file:?}");
        }
        let checked = check_all(Format::Csv, crlf.as_bytes());
        assert_eq!(
            checked.errors,
            vec![RecordError {
                line: 6,
                message: "has 3 fields, the header has 4".into()
            }]
        );
    }

    #[test]
    fn csv_headers_must_name_known_columns() {
        let unknown = check_all(
            Format::Csv,
            b"external_id,prompt,response_a,response_b,score\n",
        );
        assert!(
            unknown.errors[0]
                .message
                .starts_with("unknown column \"score\"")
        );
        let missing = check_all(Format::Csv, b"external_id,prompt,response_a\n");
        assert_eq!(
            missing.errors[0].message,
            "the header row has no \"response_b\" column"
        );
    }

    #[test]
    fn one_response_tasks_read_in_every_format_and_misfits_are_named() {
        let one = json!({"external_id": "s1", "prompt": "Sum a list.", "response": "sum(xs)",
                         "model": "m1", "metadata": {"language": "python"}});
        let single = parse_task(&one, Responses::One).unwrap();
        assert_eq!(
            (single.response_a.as_str(), single.response_b.as_str()),
            ("sum(xs)", "")
        );
        assert_eq!(
            (single.model_a.as_deref(), single.model_b.as_deref()),
            (Some("m1"), None)
        );
        let csv =
            "external_id,prompt,response,model,meta.language\ns1,Sum a list.,sum(xs),m1,python\n";
        let read: Vec<_> = records(Format::Csv, csv.as_bytes(), Responses::One)
            .unwrap()
            .collect();
        assert_eq!(
            read,
            vec![(2, Ok(single.clone()))],
            "CSV reads the same task"
        );
        let array = format!("[{one}]");
        let read: Vec<_> = records(Format::JsonArray, array.as_bytes(), Responses::One)
            .unwrap()
            .collect();
        assert_eq!(read, vec![(1, Ok(single))]);

        let pair_for_one = parse_task(&task("1"), Responses::One).unwrap_err();
        assert!(
            pair_for_one.starts_with("response_a is for a rubric that compares two responses"),
            "{pair_for_one}"
        );
        let one_for_pair = parse_task(&one, Responses::Two).unwrap_err();
        assert!(
            one_for_pair.starts_with("response is for a rubric that judges one response"),
            "{one_for_pair}"
        );
        let header = records(
            Format::Csv,
            b"external_id,prompt,response_a,response_b\n",
            Responses::One,
        )
        .err()
        .unwrap();
        assert_eq!(header.line, 1);
        assert!(
            header
                .message
                .starts_with("column response_a is for a rubric")
        );
        let checked = check(
            Format::Jsonl,
            lines(&[
                one.clone(),
                task("2"),
                json!({"external_id": "s3", "prompt": "p"}),
            ])
            .as_bytes(),
            Responses::One,
            any_gold,
            &HashMap::new(),
            |_| {},
        );
        assert_eq!((checked.new, checked.error_count), (1, 2));
        assert_eq!(checked.errors[0].line, 2);
        assert_eq!(checked.errors[1].message, "response is required");
    }

    /// Takes any gold (the app checks it against the batch's rubric).
    fn any_gold(_: &Value) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn gold_is_carried_checked_and_part_of_the_content() {
        let plain = parse_task(&task("1"), Responses::Two).unwrap();
        assert_eq!(plain.gold, None);
        let mut gold = task("1");
        gold["gold"] = json!({"sxs": {"value": 2, "within": 1}});
        let golden = parse_task(&gold, Responses::Two).unwrap();
        assert_eq!(golden.gold, Some(json!({"sxs": {"value": 2, "within": 1}})));
        assert_ne!(
            golden.content_hash, plain.content_hash,
            "adding gold to a task changes it"
        );
        let mut bad = task("2");
        bad["gold"] = json!({"sxs": 8});
        let refuse_eight = |g: &Value| match g["sxs"].as_i64() {
            Some(8) => Err("gold.sxs 8 is not an answer it takes".to_owned()),
            _ => Ok(()),
        };
        let file = lines(&[gold, bad]);
        let checked = check(
            Format::Jsonl,
            file.as_bytes(),
            Responses::Two,
            refuse_eight,
            &HashMap::new(),
            |_| {},
        );
        assert_eq!((checked.new, checked.error_count), (1, 1));
        assert_eq!(checked.errors[0].line, 2);
        assert_eq!(
            checked.errors[0].message,
            "gold.sxs 8 is not an answer it takes"
        );
        let mut listed = task("3");
        listed["gold"] = json!(["sxs"]);
        assert!(
            parse_task(&listed, Responses::Two)
                .unwrap_err()
                .starts_with("gold must be an object")
        );
    }

    #[test]
    fn reuploads_are_unchanged_or_conflicts() {
        let original = parse_task(&task("1"), Responses::Two).unwrap();
        let existing = HashMap::from([("1".to_owned(), original.content_hash.clone())]);
        let same = check(
            Format::Jsonl,
            lines(&[task("1"), task("2")]).as_bytes(),
            Responses::Two,
            any_gold,
            &existing,
            |_| {},
        );
        assert_eq!((same.unchanged, same.new, same.error_count), (1, 1, 0));
        let mut changed = task("1");
        changed["response_b"] = json!("B, improved");
        let conflict = check(
            Format::Jsonl,
            lines(&[changed]).as_bytes(),
            Responses::Two,
            any_gold,
            &existing,
            |_| {},
        );
        assert_eq!(
            conflict.errors[0].message,
            "external_id \"1\" is already in this batch with different content; give changed tasks new ids"
        );
    }

    #[test]
    fn an_empty_file_is_an_error() {
        assert_eq!(
            check_all(Format::Jsonl, b"\n\n").errors[0].message,
            "the file holds no tasks"
        );
    }

    #[test]
    fn only_the_first_hundred_errors_are_listed_but_all_are_counted() {
        let file = "{}\n".repeat(150);
        let checked = check_all(Format::Jsonl, file.as_bytes());
        assert_eq!(
            (checked.errors.len(), checked.error_count),
            (MAX_REPORTED_ERRORS, 150)
        );
    }
}
