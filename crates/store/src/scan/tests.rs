//! A scan and sqlx read the same row type alike: rows holding every kind of column a
//! scanned row type has, NULL and not, stored by sqlx as the app stores them.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::types::Json;
use sqlx::{ConnectOptions, SqliteConnection};
use uuid::Uuid;
use verdict_core::evidence::Evidence;
use verdict_core::gold::Grade;
use verdict_core::lifecycle::{Outcome, RaterKind, SkipReason, Status};
use verdict_core::metrics::RatingFacts;
use verdict_core::rubric::TaskAnswers;

use super::*;
use crate::store::review::{ExportRow, FactsRow};

columns! {
    /// One column of each kind a scanned row type holds, and an expression.
    #[derive(Debug, Clone, PartialEq)]
    struct Kinds {
        id: Uuid = "k.id",
        text: String = "k.text",
        maybe_text: Option<String> = "k.maybe_text",
        flag: bool = "k.flag",
        small: i32 = "k.small",
        big: i64 = "k.big",
        #[sqlx(try_from = "String")]
        outcome: Outcome = "k.outcome",
        #[sqlx(try_from = "String")]
        status: Status = "k.status",
        #[sqlx(try_from = "String")]
        rater_kind: RaterKind = "k.rater_kind",
        #[sqlx(try_from = "crate::store::NullableName")]
        skip_reason: Option<SkipReason> = "k.skip_reason",
        answers: Json<TaskAnswers> = "k.answers",
        warnings: Json<Vec<String>> = "k.warnings",
        grade: Option<Json<Grade>> = "k.grade",
        at: DateTime<Utc> = "k.at",
        maybe_at: Option<DateTime<Utc>> = "k.maybe_at",
        exclaimed: String = "k.text || '!'",
    }
}

/// A time with sub-second digits (SQLite keeps what sqlx writes, to the nanosecond).
fn precise(second: u32, nanos: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 22, 13, second).unwrap()
        + chrono::Duration::nanoseconds(nanos.into())
}

fn parse<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("json")
}

/// A row with every optional column filled, and one with every optional column NULL.
fn kinds() -> Vec<Kinds> {
    vec![
        Kinds {
            id: Uuid::new_v4(),
            text: "ünïcode ✓".to_owned(),
            maybe_text: Some("a note".to_owned()),
            flag: true,
            small: -7,
            big: 1 << 40,
            outcome: Outcome::Rated,
            status: Status::Accepted,
            rater_kind: RaterKind::Judge,
            skip_reason: Some(SkipReason::TooLong),
            answers: Json(parse(json!({"a": {"score": 3}, "preference": "b"}))),
            warnings: Json(vec!["long-answer".to_owned()]),
            grade: Some(Json(Grade {
                right: 1,
                expected: 2,
                wrong: vec!["a.score".to_owned()],
            })),
            at: precise(46, 123_456_789),
            maybe_at: Some(precise(47, 1_000)),
            exclaimed: "ünïcode ✓!".to_owned(),
        },
        Kinds {
            id: Uuid::new_v4(),
            text: String::new(),
            maybe_text: None,
            flag: false,
            small: 0,
            big: -1,
            outcome: Outcome::OutOfScope,
            status: Status::Submitted,
            rater_kind: RaterKind::Human,
            skip_reason: None,
            answers: Json(TaskAnswers::default()),
            warnings: Json(vec![]),
            grade: None,
            at: precise(0, 0),
            maybe_at: None,
            exclaimed: "!".to_owned(),
        },
    ]
}

/// A fresh database file, and a connection to it.
async fn database(dir: &Path) -> (std::path::PathBuf, SqliteConnection) {
    let path = dir.join("scan.db");
    let conn = SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        // The rows below stand alone: no batch or task for them to belong to.
        .foreign_keys(false)
        .connect()
        .await
        .expect("connect");
    (path, conn)
}

/// Every row of a scan.
async fn scanned<T: Scanned + Send + 'static>(
    path: &Path,
    sql: &str,
    params: Vec<Value>,
) -> Vec<T> {
    let mut rows = scan::<T>(path.to_owned(), sql.to_owned(), params);
    let mut all = vec![];
    while let Some(batch) = rows.batch().await.expect("scan") {
        all.extend(batch);
    }
    all
}

#[tokio::test]
async fn a_scan_reads_every_kind_of_column_as_sqlx_does() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, mut conn) = database(dir.path()).await;
    sqlx::query(
        "CREATE TABLE kinds (n INTEGER PRIMARY KEY, id BLOB NOT NULL, text TEXT NOT NULL,
             maybe_text TEXT, flag BOOLEAN NOT NULL, small INTEGER NOT NULL, big INTEGER NOT NULL,
             outcome TEXT NOT NULL, status TEXT NOT NULL, rater_kind TEXT NOT NULL,
             skip_reason TEXT, answers TEXT NOT NULL, warnings TEXT NOT NULL, grade TEXT,
             at TEXT NOT NULL, maybe_at TEXT)",
    )
    .execute(&mut conn)
    .await
    .expect("table");
    let rows = kinds();
    for (n, row) in rows.iter().enumerate() {
        sqlx::query(
            "INSERT INTO kinds VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                                      $14, $15, $16)",
        )
        .bind(n as i64)
        .bind(row.id)
        .bind(&row.text)
        .bind(&row.maybe_text)
        .bind(row.flag)
        .bind(row.small)
        .bind(row.big)
        .bind(row.outcome.as_str())
        .bind(row.status.as_str())
        .bind(row.rater_kind.as_str())
        .bind(row.skip_reason.map(SkipReason::as_str))
        .bind(&row.answers)
        .bind(&row.warnings)
        .bind(&row.grade)
        .bind(row.at)
        .bind(row.maybe_at)
        .execute(&mut conn)
        .await
        .expect("insert");
    }

    let all = format!("SELECT {} FROM kinds k ORDER BY k.n", Kinds::COLUMNS);
    let read: Vec<Kinds> = sqlx::query_as(&all)
        .fetch_all(&mut conn)
        .await
        .expect("read");
    assert_eq!(read, rows, "sqlx reads back what it stored");
    assert_eq!(scanned::<Kinds>(&path, &all, vec![]).await, rows);

    // Parameters are bound in the form sqlx stores values in: each finds its row.
    let by = format!(
        "SELECT {} FROM kinds k WHERE k.id = $1 AND k.at = $2 AND k.maybe_text = $3",
        Kinds::COLUMNS
    );
    let first = &rows[0];
    let params = vec![
        uuid(first.id),
        time(Some(first.at)),
        text(first.maybe_text.as_deref()),
    ];
    assert_eq!(
        scanned::<Kinds>(&path, &by, params).await,
        vec![first.clone()]
    );
    let nulls = format!(
        "SELECT {} FROM kinds k WHERE $1 IS NULL AND $2 IS NULL AND k.maybe_at IS NULL",
        Kinds::COLUMNS
    );
    assert_eq!(
        scanned::<Kinds>(&path, &nulls, vec![time(None), text(None)]).await,
        vec![rows[1].clone()]
    );
}

#[tokio::test]
async fn the_store_scans_export_rows_and_rating_facts_as_sqlx_reads_them() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, mut conn) = database(dir.path()).await;
    sqlx::migrate!("migrations/sqlite")
        .run(&mut conn)
        .await
        .expect("migrate");
    // The ratings below stand alone, without an assignment or task to copy their facts
    // from (migration 0011): they are written as they are.
    sqlx::query("DROP TRIGGER ratings_copy_facts")
        .execute(&mut conn)
        .await
        .expect("trigger");
    let (rater, batch) = (Uuid::new_v4(), Uuid::new_v4());
    let at = precise(46, 123_456_789);
    sqlx::query(
        "INSERT INTO users (id, username, password_hash, role, created_at, password_changed_at)
         VALUES ($1, 'rater', '', 'rater', $2, $2)",
    )
    .bind(rater)
    .bind(at)
    .execute(&mut conn)
    .await
    .expect("user");
    sqlx::query(
        "INSERT INTO batches (id, name, rubric, created_at, updated_at)
         VALUES ($1, 'batch', 'pairwise', $2, $2)",
    )
    .bind(batch)
    .bind(at)
    .execute(&mut conn)
    .await
    .expect("batch");
    let evidence: Evidence = parse(json!({
        "runs": [{"side": "a", "block": 1, "language": "python", "status": "passed"}]
    }));
    let grade = Grade {
        right: 2,
        expected: 2,
        wrong: vec![],
    };
    let fields = BTreeMap::from([("a.score".to_owned(), "too kind".to_owned())]);
    let insert = "INSERT INTO ratings (id, assignment_id, task_id, batch_id, rater_id, outcome,
                      status, answers, skip_reason, note, time_spent_s, version, created_at,
                      updated_at, submitted_at, reviewed_at, review_comment, rater_kind,
                      confirmed_warnings, evidence, review_fields, gold_grade, review_first,
                      swapped, external_id, model_a, model_b, len_a, len_b, gold)
                  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14, $15,
                          $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29)";
    // Every optional column filled: a judge's rating of a gold task, with evidence (not in
    // the figures).
    sqlx::query(insert)
        .bind(Uuid::new_v4())
        .bind(Uuid::new_v4())
        .bind(Uuid::new_v4())
        .bind(batch)
        .bind(rater)
        .bind(Outcome::Rated.as_str())
        .bind(Status::Accepted.as_str())
        .bind(Json(json!({"a": {"score": 4}, "explanation": "ünïcode"})))
        .bind(Some(SkipReason::Other.as_str()))
        .bind(Some("a note"))
        .bind(95)
        .bind(3)
        .bind(at)
        .bind(Some(precise(50, 7)))
        .bind(Some(precise(59, 999_999_999)))
        .bind(Some("fine"))
        .bind(RaterKind::Judge.as_str())
        .bind(Json(["long-answer"]))
        .bind(Some(Json(&evidence)))
        .bind(Json(&fields))
        .bind(Some(Json(&grade)))
        .bind(true)
        .bind(true)
        .bind("task-1")
        .bind(Some("model-x"))
        .bind(Some("model-y"))
        .bind(1200_i64)
        .bind(3400_i64)
        .bind(true)
        .execute(&mut conn)
        .await
        .expect("full rating");
    // Every optional column NULL: a person's skip (in the figures).
    sqlx::query(insert)
        .bind(Uuid::new_v4())
        .bind(Uuid::new_v4())
        .bind(Uuid::new_v4())
        .bind(batch)
        .bind(rater)
        .bind(Outcome::Skipped.as_str())
        .bind(Status::Submitted.as_str())
        .bind(Json(json!({})))
        .bind(None::<&str>)
        .bind(None::<&str>)
        .bind(0)
        .bind(1)
        .bind(precise(1, 0))
        .bind(None::<DateTime<Utc>>)
        .bind(None::<DateTime<Utc>>)
        .bind(None::<&str>)
        .bind(RaterKind::Human.as_str())
        .bind(Json(Vec::<String>::new()))
        .bind(None::<Json<Evidence>>)
        .bind(Json(BTreeMap::<String, String>::new()))
        .bind(None::<Json<Grade>>)
        .bind(false)
        .bind(false)
        .bind("")
        .bind(None::<&str>)
        .bind(None::<&str>)
        .bind(0_i64)
        .bind(0_i64)
        .bind(false)
        .execute(&mut conn)
        .await
        .expect("sparse rating");

    let export = format!(
        "SELECT {} FROM ratings r JOIN batches b ON b.id = r.batch_id
         JOIN users u ON u.id = r.rater_id WHERE r.batch_id = $1 ORDER BY r.submitted_at",
        ExportRow::COLUMNS
    );
    let read: Vec<ExportRow> = sqlx::query_as(&export)
        .bind(batch)
        .fetch_all(&mut conn)
        .await
        .expect("read");
    let from_scan: Vec<ExportRow> = scanned(&path, &export, vec![uuid(batch)]).await;
    assert_eq!(read.len(), 2);
    assert_eq!(format!("{from_scan:?}"), format!("{read:?}"));
    assert_eq!(
        from_scan[1].evidence.as_ref().map(|e| &e.0),
        Some(&evidence)
    );
    assert_eq!(from_scan[1].submitted_at, Some(precise(50, 7)));

    let facts = format!(
        "SELECT {} FROM ratings r JOIN users u ON u.id = r.rater_id WHERE r.batch_id = $1
         ORDER BY r.created_at",
        FactsRow::COLUMNS
    );
    let read: Vec<FactsRow> = sqlx::query_as(&facts)
        .bind(batch)
        .fetch_all(&mut conn)
        .await
        .expect("read");
    let read: Vec<RatingFacts> = read.into_iter().map(RatingFacts::from).collect();
    let from_scan: Vec<FactsRow> = scanned(&path, &facts, vec![uuid(batch)]).await;
    let from_scan: Vec<RatingFacts> = from_scan.into_iter().map(RatingFacts::from).collect();
    assert_eq!(format!("{from_scan:?}"), format!("{read:?}"));
    let counted: Vec<bool> = from_scan.iter().map(|f| f.counted).collect();
    assert_eq!(
        counted,
        [true, false],
        "the skip first, then the judge's rating"
    );
}
