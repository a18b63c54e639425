//! The `verdict` command itself, run as a process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use reqwest::StatusCode;

use crate::helpers::{Go, TestDb, bearer, csrf_token, db_test};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_verdict");

pub(crate) fn verdict(db: &TestDb, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "debug")
        .env("VERDICT_NO_PYODIDE_INSTALL", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run verdict");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("verdict finished")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_only_commands_that_work() {
    let help = text(&Command::new(BIN).arg("--help").output().unwrap().stdout);
    for command in [
        "serve", "migrate", "user", "token", "rubric", "import", "export", "demo",
    ] {
        assert!(help.contains(command), "{command} in:\n{help}");
    }
    let user = text(
        &Command::new(BIN)
            .args(["user", "--help"])
            .output()
            .unwrap()
            .stdout,
    );
    for sub in ["add", "list", "set-password", "deactivate", "skills"] {
        assert!(user.contains(sub), "user {sub}");
    }
    assert!(
        !user.contains("--password "),
        "a password is never taken from argv"
    );
}

#[test]
fn the_demos_help_says_it_keeps_its_own_database() {
    let help = text(
        &Command::new(BIN)
            .args(["demo", "--help"])
            .output()
            .unwrap()
            .stdout,
    );
    // As read, whatever the width it was wrapped to.
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "in a new temporary folder whose path it prints (--database-url is not used)"
        ),
        "{help}"
    );
    assert!(
        help.contains("Not used by `demo`, which keeps a database of its own"),
        "the database option says so where it is listed: {help}"
    );
}

async fn serve_guides_the_operator_and_never_logs_the_password(db: &TestDb) {
    let secret = "operator-Secret-9d2e";
    let mut server = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "debug")
        .env("VERDICT_NO_PYODIDE_INSTALL", "1")
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (port_tx, port_rx) = mpsc::channel();
    let reader = BufReader::new(server.stderr.take().unwrap());
    let sink = log.clone();
    let pump = std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            if let Some(addr) = line.split("listening on http://").nth(1) {
                let _ = port_tx.send(addr.split_whitespace().next().unwrap().to_owned());
            }
            sink.lock().unwrap().push_str(&line);
            sink.lock().unwrap().push('\n');
        }
    });
    let addr = port_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("server reports its address");
    assert!(
        log.lock()
            .unwrap()
            .contains("verdict user add --username admin --role admin"),
        "an empty database names the command that makes the first admin:\n{}",
        log.lock().unwrap()
    );

    let added = verdict(
        db,
        &[
            "user",
            "add",
            "--username",
            "root",
            "--role",
            "admin",
            "--password-stdin",
        ],
        Some(&format!("{secret}\n")),
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    assert_eq!(text(&added.stdout), "created root (admin)\n");

    let url = |path: &str| format!("http://{addr}{path}");
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for (password, status) in [
        ("not the secret!", StatusCode::UNAUTHORIZED),
        (secret, StatusCode::SEE_OTHER),
    ] {
        let page = browser.get(url("/login")).go().await.text().await.unwrap();
        let token = csrf_token(&page);
        let response = browser
            .post(url("/login"))
            .form(&[
                ("csrf_token", token.as_str()),
                ("username", "root"),
                ("password", password),
            ])
            .go()
            .await;
        assert_eq!(response.status(), status);
    }

    let token = verdict(db, &["token", "create", "--username", "root"], None);
    let printed = text(&token.stdout);
    assert!(
        token.status.success() && printed.starts_with("vdt_") && printed.lines().count() == 1,
        "only the token: {printed:?}"
    );
    let me = bearer(printed.trim()).get(url("/api/v1/me")).go().await;
    assert_eq!(me.status(), StatusCode::OK);

    let stopped = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let status = server.wait().unwrap();
    pump.join().unwrap();
    assert!(
        status.success(),
        "SIGTERM is a clean shutdown, got {status}"
    );
    let log = log.lock().unwrap().clone();
    assert!(log.contains("shutting down"), "{log}");
    let everything = format!(
        "{log}{}{}{}",
        text(&added.stderr),
        text(&token.stderr),
        printed
    );
    assert!(
        everything.contains("signed in"),
        "the debug log covers the login"
    );
    assert!(
        !everything.contains(secret),
        "the password is not in any output"
    );
}
db_test!(serve_guides_the_operator_and_never_logs_the_password: TestDb);

/// Runs `verdict args` (with `stdin`), which must fail saying `message`.
fn assert_refused(db: &TestDb, args: &[&str], stdin: Option<&str>, message: &str) {
    let out = verdict(db, args, stdin);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(
        text(&out.stderr).contains(message),
        "{args:?}: {}",
        text(&out.stderr)
    );
}

async fn user_commands_refuse_bad_input_and_change_nothing(db: &TestDb) {
    let ok = verdict(
        db,
        &["user", "add", "--username", "ana", "--password-stdin"],
        Some("ana's password\n"),
    );
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert_eq!(
        text(&ok.stdout),
        "created ana (rater)\n",
        "rater is the default role"
    );

    let cases: [(&[&str], Option<&str>, &str); 7] = [
        (
            &["user", "add", "--username", "ana", "--password-stdin"],
            Some("another password\n"),
            "username is already taken",
        ),
        (
            &["user", "add", "--username", "bo", "--password-stdin"],
            Some("short\n"),
            "password must be at least 10 characters",
        ),
        (
            &[
                "user",
                "add",
                "--username",
                "margarethe.k",
                "--password-stdin",
            ],
            Some("margarethe.k1\n"),
            "password is too easy to guess (contains the username)",
        ),
        (
            &[
                "user",
                "set-password",
                "--username",
                "ana",
                "--password-stdin",
            ],
            Some("1234567890\n"),
            "password is too easy to guess",
        ),
        (
            &[
                "user",
                "add",
                "--username",
                "bo",
                "--role",
                "owner",
                "--password-stdin",
            ],
            Some("long enough pw\n"),
            "unknown role \"owner\"",
        ),
        (
            &["user", "add", "--username", "bo"],
            None,
            "no terminal to ask for the password on",
        ),
        (
            &["user", "deactivate", "--username", "nobody"],
            None,
            "no user named \"nobody\"",
        ),
    ];
    for (args, stdin, message) in cases {
        assert_refused(db, args, stdin, message);
    }
    let list = text(&verdict(db, &["user", "list"], None).stdout);
    assert_eq!(list.lines().count(), 2, "a header and ana only:\n{list}");

    let deactivated = verdict(db, &["user", "deactivate", "--username", "ana"], None);
    assert!(deactivated.status.success());
    let list = text(&verdict(db, &["user", "list"], None).stdout);
    assert!(
        list.lines().nth(1).unwrap().split_whitespace().nth(2) == Some("no"),
        "{list}"
    );
    let token = verdict(db, &["token", "create", "--username", "ana"], None);
    assert!(!token.status.success() && text(&token.stderr).contains("ana is deactivated"));
}
db_test!(user_commands_refuse_bad_input_and_change_nothing: TestDb);

async fn the_skills_command_sets_and_checks_skills(db: &TestDb) {
    let ok = verdict(
        db,
        &["user", "add", "--username", "ana", "--password-stdin"],
        Some("ana's password\n"),
    );
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let set = verdict(
        db,
        &["user", "skills", "--username", "ana", "Rust, Go"],
        None,
    );
    assert!(set.status.success(), "{}", text(&set.stderr));
    assert_eq!(text(&set.stdout), "ana's skills: go, rust\n");
    let list = text(&verdict(db, &["user", "list"], None).stdout);
    assert!(
        list.lines().nth(1).is_some_and(|l| l.ends_with("go, rust")),
        "{list}"
    );
    for (args, message) in [
        (
            ["user", "skills", "--username", "ana", "go, ,x"],
            "skills a skill is empty",
        ),
        (
            ["user", "skills", "--username", "nobody", "go"],
            "no user named \"nobody\"",
        ),
    ] {
        assert_refused(db, &args, None, message);
    }
    let list = text(&verdict(db, &["user", "list"], None).stdout);
    assert!(list.contains("go, rust"), "unchanged: {list}");
    let cleared = verdict(db, &["user", "skills", "--username", "ana", ""], None);
    assert_eq!(text(&cleared.stdout), "ana has no skills now\n");
}
db_test!(the_skills_command_sets_and_checks_skills: TestDb);

async fn import_reads_a_file_and_reports_every_bad_line(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("tasks.jsonl");
    std::fs::write(&good, crate::helpers::tasks_jsonl(4)).unwrap();
    let path = good.to_str().unwrap();
    let out = verdict(
        db,
        &["import", "--name", "cli batch", "--overlap", "2", path],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("cli batch: 4 tasks added, 0 unchanged ("),
        "{}",
        text(&out.stdout)
    );
    let again = verdict(db, &["import", "--name", "cli batch", path], None);
    assert!(text(&again.stdout).starts_with("cli batch: 0 tasks added, 4 unchanged"));

    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "external_id,prompt,response_a,response_b\nx1,p,A,B\nx2,,A,B\nx3,p,A\n",
    )
    .unwrap();
    let out = verdict(
        db,
        &["import", "--name", "csv batch", bad.to_str().unwrap()],
        None,
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("2 records are invalid; nothing was imported"),
        "{stderr}"
    );
    assert!(stderr.contains("line 3: prompt is empty"), "{stderr}");
    assert!(
        stderr.contains("line 4: has 3 fields, the header has 4"),
        "{stderr}"
    );
    let unknown = verdict(
        db,
        &[
            "import",
            "--name",
            "x",
            dir.path().join("tasks.txt").to_str().unwrap(),
        ],
        None,
    );
    assert!(text(&unknown.stderr).contains("cannot tell the format from the file name"));

    let store = db.store().await;
    let batch = store
        .batch_by_name("cli batch")
        .await
        .unwrap()
        .expect("imported");
    assert_eq!(
        (
            batch.overlap,
            store.task_hashes(batch.id).await.unwrap().len()
        ),
        (2, 4)
    );
    assert!(
        store.batch_by_name("csv batch").await.unwrap().is_none(),
        "nothing stored"
    );
    store.close().await;
}
db_test!(import_reads_a_file_and_reports_every_bad_line: TestDb);

async fn export_writes_a_batch_to_a_file_or_standard_output(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tasks.jsonl");
    std::fs::write(&file, crate::helpers::tasks_jsonl(2)).unwrap();
    assert!(
        verdict(
            db,
            &["import", "--name", "out", file.to_str().unwrap()],
            None
        )
        .status
        .success()
    );
    let empty = verdict(db, &["export", "--batch", "out"], None);
    assert!(empty.status.success(), "{}", text(&empty.stderr));
    let header = text(&empty.stdout);
    assert!(
        header.starts_with(
            "rating_id,batch,external_id,rater,rater_kind,outcome,status,counts_in_metrics"
        ),
        "{header}"
    );
    assert_eq!(header.lines().count(), 1, "no ratings yet: the header only");
    let counted = verdict(db, &["export", "--batch", "out", "--counted"], None);
    assert!(counted.status.success(), "{}", text(&counted.stderr));
    assert_eq!(text(&counted.stdout), header);
    let target = dir.path().join("out.jsonl");
    let to_file = verdict(
        db,
        &[
            "export",
            "--batch",
            "out",
            "--format",
            "jsonl",
            "--output",
            target.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        text(&to_file.stderr).contains("0 ratings written to"),
        "{}",
        text(&to_file.stderr)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
    let bad = verdict(
        db,
        &[
            "export", "--batch", "out", "--format", "xml", "--status", "maybe",
        ],
        None,
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("format: unknown format \"xml\""),
        "{}",
        text(&bad.stderr)
    );
    let missing = verdict(db, &["export", "--batch", "nope"], None);
    assert!(text(&missing.stderr).contains("no batch named \"nope\""));
}
db_test!(export_writes_a_batch_to_a_file_or_standard_output: TestDb);

/// Defect 14 of issue 11: what the command line does to accounts, tokens and batches is
/// in the audit log as the API's would be, with `cli` as the actor.
async fn the_command_line_writes_the_audit_log(db: &TestDb) {
    let add = verdict(
        db,
        &[
            "user",
            "add",
            "--username",
            "ines",
            "--role",
            "lead",
            "--password-stdin",
        ],
        Some("a sturdy passphrase for ines\n"),
    );
    assert!(add.status.success(), "{}", text(&add.stderr));
    let reset = verdict(
        db,
        &[
            "user",
            "set-password",
            "--username",
            "ines",
            "--password-stdin",
        ],
        Some("another sturdy passphrase for ines\n"),
    );
    assert!(reset.status.success(), "{}", text(&reset.stderr));
    let token = verdict(
        db,
        &["token", "create", "--username", "ines", "--name", "ci"],
        None,
    );
    assert!(token.status.success(), "{}", text(&token.stderr));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tasks.jsonl");
    std::fs::write(&file, crate::helpers::tasks_jsonl(2)).unwrap();
    let import = verdict(
        db,
        &["import", "--name", "audited", file.to_str().unwrap()],
        None,
    );
    assert!(import.status.success(), "{}", text(&import.stderr));
    let off = verdict(db, &["user", "deactivate", "--username", "ines"], None);
    assert!(off.status.success(), "{}", text(&off.stderr));

    let store = db.store().await;
    let mut entries = store.audit_entries(None, None, 100).await.unwrap().items;
    store.close().await;
    entries.reverse();
    let seen: Vec<(Option<String>, String, Option<String>)> = entries
        .iter()
        .map(|e| (e.actor.clone(), e.action.clone(), e.target.clone()))
        .collect();
    let cli = |action: &str, target: &str| {
        (
            Some("cli".to_owned()),
            action.to_owned(),
            Some(target.to_owned()),
        )
    };
    assert_eq!(
        seen,
        vec![
            cli("user.create", "ines"),
            cli("user.update", "ines"),
            cli("token.create", "ines"),
            cli("batch.upload", "audited"),
            cli("user.update", "ines"),
        ]
    );
    assert_eq!(
        entries[4].detail.0["after"]["active"], false,
        "deactivated: active before and after"
    );
    assert_eq!(entries[4].detail.0["before"]["active"], true);
    assert_eq!(entries[3].detail.0["created"], 2);
}
db_test!(the_command_line_writes_the_audit_log: TestDb);

async fn rubric_commands_add_list_and_show_documents(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rubric.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(include_str!("../../rubrics/pairwise-aspects.json")).unwrap();
    doc["name"] = "six-aspects".into();
    doc["questions"][2]["answer"]["options"][0]["value"] = "b".into();
    doc["questions"][4]["metrics"]["role"] = "ordinal".into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let path = file.to_str().unwrap();
    let out = verdict(db, &["rubric", "add", path], None);
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(said.contains("the rubric document breaks"), "{said}");
    assert!(
        said.contains("questions[2].answer.options[2].value: \"b\" is offered twice"),
        "{said}"
    );
    assert!(said.contains("questions[4].metrics"), "{said}");
    assert!(!text(&verdict(db, &["rubric", "list"], None).stdout).contains("six-aspects"));

    doc["questions"][2]["answer"]["options"][0]["value"] = "a".into();
    doc["questions"][4]["metrics"]["role"] = "preference".into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = verdict(db, &["rubric", "add", path], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "added six-aspects version 1\n");
    let again = verdict(db, &["rubric", "add", path], None);
    assert_eq!(
        text(&again.stdout),
        "six-aspects version 1 is already this document; nothing changed\n"
    );
    let list = text(&verdict(db, &["rubric", "list"], None).stdout);
    assert!(list.contains("blackhat\tversions 1\t"), "{list}");
    assert!(
        list.contains("six-aspects\tversions 1\tTwo answers compared on six aspects\n"),
        "{list}"
    );
    let shown = verdict(db, &["rubric", "show", "six-aspects"], None);
    let read_back: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(read_back, doc, "the document comes back as it was added");
    let missing = verdict(
        db,
        &["rubric", "show", "six-aspects", "--version", "2"],
        None,
    );
    assert!(text(&missing.stderr).contains("rubric \"six-aspects\" has no version 2"));
    let store = db.store().await;
    let entries = store
        .audit_entries(Some("rubric.add"), None, 50)
        .await
        .unwrap()
        .items;
    assert_eq!(entries.len(), 1, "one addition, one entry");
    assert_eq!(entries[0].target.as_deref(), Some("six-aspects"));
    assert_eq!(entries[0].actor.as_deref(), Some("cli"));
}
db_test!(rubric_commands_add_list_and_show_documents: TestDb);

/// Issue 26: `verdict import` writes its audit entry in the transaction that adds the
/// tasks, so the tasks and the entry are both there or both absent, whenever the import
/// stops. The database refusing the entry stands in for the process killed between the
/// two: nothing of the import may be left.
async fn an_import_and_its_audit_entry_are_one_transaction(db: &TestDb) {
    let ok = verdict(db, &["migrate"], None);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let (refuse, allow): (&[&str], &str) = match db.backend {
        verdict::store::Backend::Sqlite => (
            &[
                "CREATE TRIGGER refuse_upload_entry BEFORE INSERT ON audit_log
               WHEN NEW.action = 'batch.upload'
               BEGIN SELECT RAISE(ABORT, 'audit log unavailable'); END",
            ],
            "DROP TRIGGER refuse_upload_entry",
        ),
        verdict::store::Backend::Postgres => (
            &[
                "CREATE FUNCTION refuse_upload_entry() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN RAISE EXCEPTION 'audit log unavailable'; END $$",
                "CREATE TRIGGER refuse_upload_entry BEFORE INSERT ON audit_log FOR EACH ROW
                 WHEN (NEW.action = 'batch.upload') EXECUTE FUNCTION refuse_upload_entry()",
            ],
            "DROP TRIGGER refuse_upload_entry ON audit_log",
        ),
    };
    for sql in refuse {
        db.execute(sql).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tasks.jsonl");
    std::fs::write(&file, crate::helpers::tasks_jsonl(30)).unwrap();
    let import = || {
        verdict(
            db,
            &["import", "--name", "audited", file.to_str().unwrap()],
            None,
        )
    };
    let tasks = "SELECT COUNT(*) FROM tasks";
    let entries = "SELECT COUNT(*) FROM audit_log WHERE action = 'batch.upload'";

    let refused = import();
    assert!(
        !refused.status.success(),
        "the failed import says so: {}",
        text(&refused.stdout)
    );
    assert_eq!(
        (db.count(tasks).await, db.count(entries).await),
        (0, 0),
        "neither the tasks nor the entry"
    );

    db.execute(allow).await;
    let done = import();
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(
        (db.count(tasks).await, db.count(entries).await),
        (30, 1),
        "the tasks and their entry"
    );
}
db_test!(an_import_and_its_audit_entry_are_one_transaction: TestDb);

/// Issue 28: tasks added to a batch of a custom rubric need not name it; they take the
/// batch's rubric and version, and naming another is refused.
async fn an_import_into_a_custom_rubric_batch_takes_its_rubric(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let rubric = dir.path().join("code-check.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(include_str!("../../rubrics/blackhat.json")).unwrap();
    doc["name"] = "code-check".into();
    std::fs::write(&rubric, doc.to_string()).unwrap();
    let out = verdict(db, &["rubric", "add", rubric.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = dir.path().join("first.jsonl");
    std::fs::write(&first, crate::helpers::tasks_jsonl(2)).unwrap();
    let more = dir.path().join("more.jsonl");
    std::fs::write(&more, crate::helpers::tasks_jsonl_from(3, 2)).unwrap();
    let made = verdict(
        db,
        &[
            "import",
            "--name",
            "cc1",
            "--rubric",
            "code-check",
            first.to_str().unwrap(),
        ],
        None,
    );
    assert!(made.status.success(), "{}", text(&made.stderr));
    // A new version of the rubric: the batch keeps the one it was made with.
    doc["title"] = "Code check, second version".into();
    std::fs::write(&rubric, doc.to_string()).unwrap();
    assert!(
        verdict(db, &["rubric", "add", rubric.to_str().unwrap()], None)
            .status
            .success()
    );
    let added = verdict(
        db,
        &["import", "--name", "cc1", more.to_str().unwrap()],
        None,
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    assert!(
        text(&added.stdout).starts_with("cc1: 2 tasks added, 0 unchanged"),
        "{}",
        text(&added.stdout)
    );
    let other = verdict(
        db,
        &[
            "import",
            "--name",
            "cc1",
            "--rubric",
            "blackhat",
            more.to_str().unwrap(),
        ],
        None,
    );
    assert!(!other.status.success());
    assert!(
        text(&other.stderr).contains("rubric: batch \"cc1\" uses the code-check rubric"),
        "{}",
        text(&other.stderr)
    );
    let store = db.store().await;
    let batch = store.batch_by_name("cc1").await.unwrap().unwrap();
    assert_eq!(
        (batch.rubric.as_str(), batch.rubric_version),
        ("code-check", 1)
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM tasks").await,
        4,
        "the refused import stored nothing"
    );
}
db_test!(an_import_into_a_custom_rubric_batch_takes_its_rubric: TestDb);
