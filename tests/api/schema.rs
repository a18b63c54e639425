//! The two migration sets describe the same schema.

use std::collections::BTreeSet;

use verdict::store::Backend;

use crate::helpers::{Fixture, TestDb};

type Columns = BTreeSet<(String, String)>;

async fn sqlite_columns(db: &TestDb) -> Columns {
    db.store().await.close().await;
    let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != '_sqlx_migrations'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows.into_iter().collect()
}

async fn postgres_columns(db: &TestDb) -> Columns {
    db.store().await.close().await;
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name != '_sqlx_migrations'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows.into_iter().collect()
}

#[tokio::test]
async fn both_migration_sets_yield_the_same_tables_and_columns() {
    let sqlite = TestDb::setup(Backend::Sqlite).await.unwrap();
    let lite = sqlite_columns(&sqlite).await;
    sqlite.teardown().await;
    let tables: BTreeSet<&str> = lite.iter().map(|(t, _)| t.as_str()).collect();
    for table in [
        "users",
        "sessions",
        "api_tokens",
        "batches",
        "batch_members",
        "tasks",
        "assignments",
        "ratings",
        "rating_history",
        "reviews",
        "audit_log",
        "login_attempts",
    ] {
        assert!(tables.contains(table), "SQLite schema has {table}");
    }
    let Some(postgres) = TestDb::setup(Backend::Postgres).await else {
        return;
    };
    let pg = postgres_columns(&postgres).await;
    postgres.teardown().await;
    let only_sqlite: Vec<_> = lite.difference(&pg).collect();
    let only_pg: Vec<_> = pg.difference(&lite).collect();
    assert!(
        only_sqlite.is_empty() && only_pg.is_empty(),
        "only in SQLite: {only_sqlite:?}; only in PostgreSQL: {only_pg:?}"
    );
}

#[tokio::test]
async fn migrating_twice_is_harmless() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = TestDb::setup(backend).await else {
            continue;
        };
        let store = db.store().await;
        store.migrate().await.expect("second run is a no-op");
        store.close().await;
        db.teardown().await;
    }
}
