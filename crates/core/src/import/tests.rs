//! Tests of `import`.

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
            "unknown field \"responseA\" (a task has external_id, prompt, response_a, response_b, model_a, model_b, metadata, gold, gold_explanation)"
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
    let csv = "external_id,prompt,response,model,meta.language\ns1,Sum a list.,sum(xs),m1,python\n";
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

/// `check_each` hands on the tasks that pass, in file order, new and unchanged alike,
/// until a record fails; it counts and reports the same as `check`.
#[test]
fn each_task_that_passes_is_handed_on_until_one_fails() {
    let unchanged = parse_task(&task("2"), Responses::Two).unwrap();
    let existing = HashMap::from([("2".to_owned(), unchanged.content_hash)]);
    let mut handed = Vec::new();
    let file = lines(&[task("1"), task("2"), task("3")]);
    let checked = check_each(
        Format::Jsonl,
        file.as_bytes(),
        Responses::Two,
        any_gold,
        &existing,
        |_| {},
        |t| handed.push(t.external_id),
    );
    assert_eq!(
        (checked.new, checked.unchanged, checked.error_count),
        (2, 1, 0)
    );
    assert_eq!(handed, ["1", "2", "3"]);
    handed.clear();
    let file = lines(&[task("1"), json!({"external_id": "x"}), task("3"), task("1")]);
    let checked = check_each(
        Format::Jsonl,
        file.as_bytes(),
        Responses::Two,
        any_gold,
        &HashMap::new(),
        |_| {},
        |t| handed.push(t.external_id),
    );
    assert_eq!((checked.new, checked.error_count), (2, 2));
    assert_eq!(handed, ["1"], "nothing after the first bad record");
    let again = check_all(Format::Jsonl, file.as_bytes());
    assert_eq!((again.new, again.error_count), (2, 2));
}
