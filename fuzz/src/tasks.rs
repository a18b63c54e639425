//! The importer's own rules, checked on everything it accepts, and the bookkeeping of a
//! whole-file check against the records it yields.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};

use crate::import::{
    self, Format, MAX_FIELD_BYTES, MAX_ID_CHARS, MAX_METADATA_DEPTH, MAX_REPORTED_ERRORS, NewTask,
    Responses,
};

const ROLES: [&str; 3] = ["system", "user", "assistant"];

/// Reads `bytes` as `format` every way the app does, as tasks of two responses and of one,
/// and checks all of it; returns the tasks accepted (in file order, duplicates included).
pub fn check_file(format: Format, bytes: &[u8]) -> Vec<NewTask> {
    let mut tasks = check_as(format, bytes, Responses::Two);
    tasks.extend(check_as(format, bytes, Responses::One));
    tasks
}

fn check_as(format: Format, bytes: &[u8], responses: Responses) -> Vec<NewTask> {
    // CSV, like its reader, also takes a lone `\r` for a line break.
    let breaks = (0..bytes.len())
        .filter(|&i| match bytes[i] {
            b'\n' => true,
            b'\r' => format == Format::Csv && bytes.get(i + 1) != Some(&b'\n'),
            _ => false,
        })
        .count();
    let lines_in_file = breaks as u64 + 1;
    let no_existing = HashMap::new();
    let records = match import::records(format, bytes, responses) {
        Err(e) => {
            // Refused whole: `check` says exactly that and nothing else.
            assert!(!e.message.is_empty());
            assert!(
                (1..=lines_in_file).contains(&e.line),
                "file error on line {} of {lines_in_file}",
                e.line
            );
            let checked = check(format, bytes, responses, &no_existing);
            assert_eq!(checked.errors, vec![e]);
            assert_eq!(
                (checked.new, checked.unchanged, checked.error_count),
                (0, 0, 1)
            );
            return Vec::new();
        }
        Ok(records) => records.collect::<Vec<_>>(),
    };

    if format == Format::Jsonl {
        // One record for every line that is not blank, numbered as the line.
        let unmarked = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        let expected: Vec<u64> = unmarked
            .split(|b| *b == b'\n')
            .enumerate()
            .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
            .map(|(i, _)| i as u64 + 1)
            .collect();
        let got: Vec<u64> = records.iter().map(|(line, _)| *line).collect();
        assert_eq!(got, expected, "JSONL records and lines differ");
    }
    let mut previous = 0;
    for (line, record) in &records {
        assert!(
            (1..=lines_in_file).contains(line),
            "record on line {line} of {lines_in_file}: {record:?}"
        );
        match format {
            Format::Jsonl => assert!(*line > previous, "lines go back: {records:?}"),
            Format::Csv => assert!(
                *line > previous && *line >= 2,
                "rows go back or share the header's line: {records:?}"
            ),
            // Several array elements may share a line.
            Format::JsonArray => assert!(*line >= previous, "lines go back: {records:?}"),
        }
        previous = *line;
        match record {
            Ok(task) => check_task(task, format, responses),
            Err(message) => assert!(!message.is_empty()),
        }
    }

    let tasks: Vec<NewTask> = records
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().cloned())
        .collect();
    let refused = (records.len() - tasks.len()) as u64;
    let mut first: HashMap<&str, &str> = HashMap::new();
    for task in &tasks {
        first.entry(&task.external_id).or_insert(&task.content_hash);
    }
    let distinct = first.len() as u64;
    let repeated = tasks.len() as u64 - distinct;

    // A fresh batch: every distinct id is new, every bad record and repeat is an error,
    // and together they are the records read.
    let checked = check(format, bytes, responses, &no_existing);
    if records.is_empty() {
        assert_eq!((checked.new, checked.error_count), (0, 1));
        assert_eq!(checked.errors[0].message, "the file holds no tasks");
    } else {
        assert_eq!(checked.new, distinct);
        assert_eq!(checked.unchanged, 0);
        assert_eq!(checked.error_count, refused + repeated);
        assert_eq!(checked.new + checked.error_count, records.len() as u64);
    }
    assert_eq!(
        checked.errors.len() as u64,
        checked.error_count.min(MAX_REPORTED_ERRORS as u64)
    );
    assert_eq!(checked.bytes, bytes.len() as u64);

    if distinct > 0 {
        // Uploaded again: every task is unchanged.
        let existing: HashMap<String, String> = first
            .iter()
            .map(|(id, hash)| (id.to_string(), hash.to_string()))
            .collect();
        let again = check(format, bytes, responses, &existing);
        assert_eq!((again.new, again.unchanged), (0, distinct));
        assert_eq!(again.error_count, refused + repeated);
        // Uploaded over different content: every task is a conflict.
        let changed: HashMap<String, String> = first
            .keys()
            .map(|id| (id.to_string(), "0".repeat(64)))
            .collect();
        let conflicts = check(format, bytes, responses, &changed);
        assert_eq!((conflicts.new, conflicts.unchanged), (0, 0));
        assert_eq!(conflicts.error_count, records.len() as u64);
    }

    for task in &tasks {
        round_trip_jsonl(task, responses);
    }
    if format == Format::Csv && !tasks.is_empty() {
        round_trip_csv(&tasks, responses);
    }
    tasks
}

/// `import::check`, also checking what it reports as progress.
fn check(
    format: Format,
    bytes: &[u8],
    responses: Responses,
    existing: &HashMap<String, String>,
) -> import::Checked {
    let mut reported = Vec::new();
    // The app checks gold against the batch's rubric; here an empty one is refused, so
    // both ways through are taken.
    let gold = |expected: &serde_json::Value| match expected.as_object() {
        Some(map) if map.is_empty() => Err("gold must expect at least one answer".to_owned()),
        _ => Ok(()),
    };
    let checked = import::check(format, bytes, responses, gold, existing, |done| {
        reported.push(done)
    });
    assert!(
        reported.iter().all(|done| *done <= bytes.len() as u64),
        "progress past the end: {reported:?} of {}",
        bytes.len()
    );
    if !reported.is_empty() {
        assert_eq!(reported.last(), Some(&(bytes.len() as u64)));
    }
    for error in &checked.errors {
        assert!(!error.message.is_empty());
        assert!(error.line >= 1, "an error on line 0: {error:?}");
    }
    checked
}

/// Everything the importer promises about a task it accepted.
pub fn check_task(task: &NewTask, format: Format, responses: Responses) {
    let id = &task.external_id;
    assert!(!id.is_empty(), "empty id: {task:?}");
    assert_eq!(id.trim(), id, "untrimmed id: {task:?}");
    assert!(id.chars().count() <= MAX_ID_CHARS, "long id: {task:?}");
    text_ok("external_id", id);

    match &task.prompt {
        Value::String(s) => non_blank_text("prompt", s),
        Value::Array(messages) => {
            assert!(format != Format::Csv, "a CSV prompt is a string: {task:?}");
            assert!(!messages.is_empty(), "empty conversation: {task:?}");
            let mut total = 0;
            for message in messages {
                let m = message.as_object().expect("a message is an object");
                assert!(m.keys().all(|k| k == "role" || k == "content"), "{m:?}");
                let role = m.get("role").and_then(Value::as_str);
                assert!(role.is_some_and(|r| ROLES.contains(&r)), "{m:?}");
                let content = m.get("content").and_then(Value::as_str).expect("content");
                non_blank_text("prompt content", content);
                total += content.len();
            }
            assert!(total <= MAX_FIELD_BYTES);
        }
        other => panic!("prompt {other:?} accepted"),
    }

    non_blank_text("response_a", &task.response_a);
    match responses {
        Responses::Two => non_blank_text("response_b", &task.response_b),
        Responses::One => assert!(
            task.response_b.is_empty() && task.model_b.is_none(),
            "a task of one response has no second: {task:?}"
        ),
    }

    for model in [&task.model_a, &task.model_b].into_iter().flatten() {
        assert!(!model.is_empty(), "an empty model is None: {task:?}");
        assert_eq!(model.trim(), model, "untrimmed model: {task:?}");
        assert!(
            model.chars().count() <= MAX_ID_CHARS,
            "long model: {task:?}"
        );
        text_ok("model", model);
    }

    let metadata = Value::Object(task.metadata.clone());
    assert!(
        depth(&metadata) <= MAX_METADATA_DEPTH,
        "metadata too deep: {task:?}"
    );
    assert!(
        !holds_nul(&metadata),
        "NUL in metadata (PostgreSQL cannot store it): {task:?}"
    );
    let stored = serde_json::to_string(&task.metadata).expect("metadata serialises");
    assert!(stored.len() <= MAX_FIELD_BYTES);
    if format == Format::Csv {
        assert!(
            task.metadata
                .iter()
                .all(|(k, v)| !k.is_empty() && v.as_str().is_some_and(|s| !s.is_empty())),
            "CSV metadata is non-empty text: {task:?}"
        );
    }

    assert_eq!(task.content_hash.len(), 64);
    assert!(
        task.content_hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
}

fn text_ok(field: &str, text: &str) {
    assert!(text.len() <= MAX_FIELD_BYTES, "{field} over the limit");
    assert!(!text.contains('\0'), "NUL in {field}: {text:?}");
}

fn non_blank_text(field: &str, text: &str) {
    assert!(!text.trim().is_empty(), "blank {field} accepted");
    text_ok(field, text);
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// The task as a JSONL record.
fn to_json(task: &NewTask, responses: Responses) -> Value {
    match responses {
        Responses::Two => json!({
            "external_id": task.external_id,
            "prompt": task.prompt,
            "response_a": task.response_a,
            "response_b": task.response_b,
            "model_a": task.model_a,
            "model_b": task.model_b,
            "metadata": task.metadata,
        }),
        Responses::One => json!({
            "external_id": task.external_id,
            "prompt": task.prompt,
            "response": task.response_a,
            "model": task.model_a,
            "metadata": task.metadata,
        }),
    }
}

/// Written out as JSONL (and as a JSON array) and read back, a task is the same task; with
/// another id, it has the same content hash.
fn round_trip_jsonl(task: &NewTask, responses: Responses) {
    let line = to_json(task, responses).to_string();
    let read: Vec<_> = import::records(Format::Jsonl, line.as_bytes(), responses)
        .expect("JSONL is never refused whole")
        .collect();
    assert_eq!(
        read,
        vec![(1, Ok(task.clone()))],
        "JSONL round trip of {line}"
    );

    let array = format!("[{line}]");
    let read: Vec<_> = import::records(Format::JsonArray, array.as_bytes(), responses)
        .expect("an array of one task")
        .collect();
    assert_eq!(
        read,
        vec![(1, Ok(task.clone()))],
        "JSON array round trip of {array}"
    );

    let mut renamed = to_json(task, responses);
    renamed["external_id"] = json!(if task.external_id == "renamed" {
        "other"
    } else {
        "renamed"
    });
    let other = import::parse_task(&renamed, responses).expect("the same task under a new id");
    assert_eq!(
        other.content_hash, task.content_hash,
        "the hash covers the id"
    );
}

/// Tasks read from CSV, written out as CSV and read back, are the same tasks.
fn round_trip_csv(tasks: &[NewTask], responses: Responses) {
    let meta: BTreeSet<&String> = tasks.iter().flat_map(|t| t.metadata.keys()).collect();
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = match responses {
        Responses::Two => ["response_a", "response_b", "model_a", "model_b"].as_slice(),
        Responses::One => ["response", "model"].as_slice(),
    }
    .iter()
    .map(|c| (*c).to_owned())
    .collect();
    header.splice(0..0, ["external_id".to_owned(), "prompt".to_owned()]);
    header.extend(meta.iter().map(|k| format!("meta.{k}")));
    writer.write_record(&header).expect("header");
    for task in tasks {
        let mut row = vec![
            task.external_id.clone(),
            task.prompt
                .as_str()
                .expect("a CSV prompt is text")
                .to_owned(),
        ];
        row.extend(match responses {
            Responses::Two => vec![
                task.response_a.clone(),
                task.response_b.clone(),
                task.model_a.clone().unwrap_or_default(),
                task.model_b.clone().unwrap_or_default(),
            ],
            Responses::One => vec![
                task.response_a.clone(),
                task.model_a.clone().unwrap_or_default(),
            ],
        });
        row.extend(meta.iter().map(|k| {
            task.metadata
                .get(*k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        }));
        writer.write_record(&row).expect("row");
    }
    let file = writer.into_inner().expect("CSV written");
    let read: Vec<NewTask> = import::records(Format::Csv, &file, responses)
        .unwrap_or_else(|e| panic!("rewritten CSV refused: {e:?}"))
        .map(|(line, task)| task.unwrap_or_else(|e| panic!("line {line}: {e}")))
        .collect();
    assert_eq!(read, tasks, "CSV round trip");
}
