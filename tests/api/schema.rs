//! The two migration sets describe the same schema.

use std::collections::BTreeSet;

use verdict::store::Backend;

use crate::helpers::{Fixture, TestDb};

/// What both backends must agree on: every column with its type (in the portable names of
/// migrations/README.md) and whether it may be null, and every index and unique
/// constraint by table and columns.
type Schema = BTreeSet<String>;

/// The portable name of a column type, from either backend's spelling.
fn portable(declared: &str) -> &'static str {
    match declared.to_ascii_lowercase().as_str() {
        "blob" | "uuid" => "uuid",
        "text" | "character varying" => "text",
        "timestamp with time zone" => "time (TEXT in SQLite)",
        "jsonb" => "json (TEXT in SQLite)",
        "integer" | "bigint" | "smallint" => "integer",
        "boolean" => "boolean",
        _ => "other",
    }
}

async fn sqlite_schema(db: &TestDb) -> Schema {
    db.store().await.close().await;
    let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
    let columns: Vec<(String, String, String, bool)> = sqlx::query_as(
        "SELECT m.name, p.name, p.type, p.\"notnull\" FROM sqlite_master m, pragma_table_info(m.name) p
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != '_sqlx_migrations'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // Indexes with the columns they cover, unique ones (constraints included) marked.
    let indexes: Vec<(String, String, bool, String)> = sqlx::query_as(
        "SELECT m.name, l.name, l.\"unique\", group_concat(i.name, ',')
         FROM sqlite_master m, pragma_index_list(m.name) l, pragma_index_info(l.name) i
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != '_sqlx_migrations'
           AND l.origin != 'pk'
         GROUP BY m.name, l.name, l.\"unique\"",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    // SQLite reports a column's type as declared; time and JSON columns are TEXT there,
    // so they are told apart by what PostgreSQL declares for the same column below.
    let mut schema = Schema::new();
    for (table, column, declared, not_null) in columns {
        let kind = portable(&declared);
        schema.insert(format!(
            "{table}.{column}: {kind}, {}",
            nullability(not_null)
        ));
    }
    for (table, _, unique, columns) in indexes {
        schema.insert(index_line(&table, unique, &columns));
    }
    schema
}

async fn postgres_schema(db: &TestDb) -> Schema {
    db.store().await.close().await;
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let columns: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text
         FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name != '_sqlx_migrations'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let indexes: Vec<(String, bool, String)> = sqlx::query_as(
        "SELECT t.relname::text, ix.indisunique,
                string_agg(a.attname::text, ',' ORDER BY k.n)
         FROM pg_index ix
         JOIN pg_class t ON t.oid = ix.indrelid
         JOIN pg_namespace ns ON ns.oid = t.relnamespace
         CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, n)
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
         WHERE ns.nspname = 'public' AND NOT ix.indisprimary AND t.relname != '_sqlx_migrations'
         GROUP BY t.relname, ix.indexrelid, ix.indisunique",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    let mut schema = Schema::new();
    for (table, column, declared, nullable) in columns {
        // In SQLite these are TEXT: compare them as text there.
        let kind = match portable(&declared) {
            "time (TEXT in SQLite)" | "json (TEXT in SQLite)" => "text",
            other => other,
        };
        schema.insert(format!(
            "{table}.{column}: {kind}, {}",
            nullability(nullable == "NO")
        ));
    }
    for (table, unique, columns) in indexes {
        schema.insert(index_line(&table, unique, &columns));
    }
    schema
}

fn nullability(not_null: bool) -> &'static str {
    if not_null { "not null" } else { "nullable" }
}

fn index_line(table: &str, unique: bool, columns: &str) -> String {
    let kind = if unique { "unique index" } else { "index" };
    format!("{table}: {kind} on ({columns})")
}

#[tokio::test]
async fn both_migration_sets_yield_the_same_schema() {
    let sqlite = TestDb::setup(Backend::Sqlite).await.unwrap();
    let lite = sqlite_schema(&sqlite).await;
    sqlite.teardown().await;
    let tables: BTreeSet<&str> = lite
        .iter()
        .filter_map(|line| line.split_once('.').map(|(t, _)| t))
        .collect();
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
    let pg = postgres_schema(&postgres).await;
    postgres.teardown().await;
    // The one difference by design: SQLite orders rating changes by a counter of its own
    // (migrations/sqlite/0013_rating_changes.sql); PostgreSQL uses transaction ids.
    let only_sqlite: Vec<_> = lite
        .difference(&pg)
        .filter(|line| *line != "rating_clock.value: integer, not null")
        .collect();
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
