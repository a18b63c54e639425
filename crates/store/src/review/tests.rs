//! The review module's scanned row types read alike through a scan and through sqlx, on
//! the real schema.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::types::Json;
use uuid::Uuid;
use verdict_core::evidence::Evidence;
use verdict_core::gold::Grade;
use verdict_core::lifecycle::{Outcome, RaterKind, Status};
use verdict_core::metrics::RatingFacts;

use super::{ExportRow, FactsRow};
use crate::scan::tests::{database, parse, precise, scanned};
use crate::scan::uuid;

#[tokio::test]
async fn the_store_scans_export_rows_and_rating_facts_as_sqlx_reads_them() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, mut conn) = database(dir.path()).await;
    sqlx::migrate!("../../migrations/sqlite")
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
        .bind(Some("other"))
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
