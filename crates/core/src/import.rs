//! Reading a batch file: JSON Lines, a JSON array or CSV, one task per record.
//!
//! Records are read one at a time from the bytes of the upload, which are held once; a
//! record is checked on its own by [`parse_task`], so every bad one can be reported with
//! its line number and reason.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The longest explanation of a gold task's answers, in characters.
pub const MAX_GOLD_EXPLANATION: usize = 4000;

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
                "gold_explanation",
            ],
            Responses::One => &[
                "external_id",
                "prompt",
                "response",
                "model",
                "metadata",
                "gold",
                "gold_explanation",
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
    /// Why a gold task's expected answers are right, shown to a rater after a
    /// qualification try when the batch reveals them (see [`crate::qualification`]).
    pub gold_explanation: Option<String>,
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
        if name == "gold" || name == "gold_explanation" {
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
                .filter(|k| !matches!(*k, "metadata" | "gold" | "gold_explanation"))
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
    let gold_explanation = match object.get("gold_explanation") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if gold.is_some() => {
            if text.chars().count() > MAX_GOLD_EXPLANATION {
                return Err(format!(
                    "gold_explanation is longer than {MAX_GOLD_EXPLANATION} characters"
                ));
            }
            check_text("gold_explanation", text)?;
            Some(text.clone())
        }
        Some(Value::String(_)) => {
            return Err("gold_explanation is for a gold task: give the task gold too".into());
        }
        Some(_) => return Err("gold_explanation must be text".into()),
    };
    // A task without gold hashes as it did before gold existed, and a gold task without
    // an explanation as it did before explanations.
    let content = match (&gold, &gold_explanation) {
        (None, _) => {
            serde_json::json!([prompt, response_a, response_b, model_a, model_b, metadata])
        }
        (Some(gold), None) => {
            serde_json::json!([
                prompt, response_a, response_b, model_a, model_b, metadata, gold
            ])
        }
        (Some(gold), Some(why)) => {
            serde_json::json!([
                prompt, response_a, response_b, model_a, model_b, metadata, gold, why
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
        gold_explanation,
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
    progress: impl FnMut(u64),
) -> Checked {
    check_each(format, bytes, responses, gold, existing, progress, |_| {})
}

/// [`check`], handing each task that passed to `accept` as it goes (new ones and those
/// identical to the stored ones, in file order), for as long as no record has failed: a
/// caller stores them while the rest is checked, and keeps what it stored only if the
/// whole file passed.
pub fn check_each(
    format: Format,
    bytes: &[u8],
    responses: Responses,
    gold: impl Fn(&Value) -> Result<(), String>,
    existing: &HashMap<String, String>,
    mut progress: impl FnMut(u64),
    mut accept: impl FnMut(NewTask),
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
        let passed = match existing.get(&task.external_id) {
            None => {
                checked.new += 1;
                true
            }
            Some(hash) if *hash == task.content_hash => {
                checked.unchanged += 1;
                true
            }
            Some(_) => {
                checked.refuse(
                    line,
                    format!(
                        "external_id {:?} is already in this batch with different content; \
                         give changed tasks new ids",
                        task.external_id
                    ),
                );
                false
            }
        };
        if passed && checked.error_count == 0 {
            accept(task);
        }
    }
    if checked.new + checked.unchanged == 0 && checked.error_count == 0 {
        checked.refuse(1, "the file holds no tasks".into());
    }
    progress(bytes.len() as u64);
    checked
}

#[cfg(test)]
mod tests;
