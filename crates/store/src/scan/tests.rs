//! A scan and sqlx read the same row type alike: rows holding every kind of column a
//! scanned row type has, NULL and not, stored by sqlx as the app stores them.

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::types::Json;
use sqlx::{ConnectOptions, SqliteConnection};
use uuid::Uuid;
use verdict_core::gold::Grade;
use verdict_core::lifecycle::{Outcome, RaterKind, SkipReason, Status};
use verdict_core::rubric::TaskAnswers;

use super::*;

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
        #[sqlx(try_from = "crate::NullableName")]
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
pub(crate) fn precise(second: u32, nanos: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 22, 13, second).unwrap()
        + chrono::Duration::nanoseconds(nanos.into())
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
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
            skip_reason: Some("too_long".parse::<SkipReason>().unwrap()),
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
pub(crate) async fn database(dir: &Path) -> (std::path::PathBuf, SqliteConnection) {
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
pub(crate) async fn scanned<T: Scanned + Send + 'static>(
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
        .bind(row.skip_reason.as_ref().map(SkipReason::as_str))
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

columns! {
    /// A numbered row, for long scans.
    #[derive(Debug)]
    struct Numbered {
        n: i64 = "s.n",
        #[sqlx(try_from = "String")]
        outcome: Outcome = "s.outcome",
    }
}

/// Rows beyond several batches come out in the order read; a row that cannot be decoded
/// ends the scan with an error after the batches before it.
#[tokio::test]
async fn a_long_scan_keeps_its_order_and_a_bad_row_ends_it() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, mut conn) = database(dir.path()).await;
    sqlx::query("CREATE TABLE seq (n INTEGER PRIMARY KEY, outcome TEXT NOT NULL)")
        .execute(&mut conn)
        .await
        .expect("table");
    let total = 3 * BATCH as i64 + 7;
    sqlx::query(
        "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $1)
         INSERT INTO seq SELECT n, CASE n % 3 WHEN 0 THEN 'rated' WHEN 1 THEN 'skipped'
                                  ELSE 'out_of_scope' END FROM c",
    )
    .bind(total)
    .execute(&mut conn)
    .await
    .expect("rows");
    let all = format!("SELECT {} FROM seq s ORDER BY s.n", Numbered::COLUMNS);
    let read = scanned::<Numbered>(&path, &all, vec![]).await;
    assert_eq!(read.len() as i64, total);
    for (i, row) in read.iter().enumerate() {
        assert_eq!(row.n, i as i64);
        let want = [Outcome::Rated, Outcome::Skipped, Outcome::OutOfScope][i % 3];
        assert_eq!(row.outcome, want, "row {i}");
    }

    let bad = BATCH as i64 + 3;
    sqlx::query("UPDATE seq SET outcome = 'bogus' WHERE n = $1")
        .bind(bad)
        .execute(&mut conn)
        .await
        .expect("bad row");
    let mut rows = scan::<Numbered>(path.clone(), all, vec![]);
    let first = rows.batch().await.expect("the first batch is whole");
    assert_eq!(first.map(|b| b.len()), Some(BATCH));
    let err = rows
        .batch()
        .await
        .expect_err("the batch holding the bad row fails");
    assert!(err.to_string().contains("bogus"), "{err}");
}
