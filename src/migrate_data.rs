//! `verdict migrate-data`: copies every row of one verdict database into a new, empty
//! one (SQLite to PostgreSQL when a team outgrows one machine, or back), then checks that
//! each table holds as many rows as the source.
//!
//! Both databases are first brought to this build's schema, so their tables and columns
//! are the same; what each column holds is read from PostgreSQL's catalogue, so a column
//! added by a later migration is copied without a change here. A table this module does
//! not know (and so cannot place in the order of its references) stops the copy before
//! anything is written. The source is read in one snapshot and the destination written
//! in one transaction: an error leaves it empty.

use std::collections::BTreeMap;
use std::str::FromStr;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use serde_json::Value;
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::types::Json;
use sqlx::{QueryBuilder, Row};
use uuid::Uuid;

use crate::Store;

/// Every table, each after the tables it refers to.
pub const TABLES: &[&str] = &[
    "users",
    "sessions",
    "api_tokens",
    "rubrics",
    "batches",
    "batch_members",
    "tasks",
    "gold_tasks",
    "task_versions",
    // A judge's rating names its run (migration 0019): runs come before ratings.
    "judges",
    "judge_runs",
    "assignments",
    "ratings",
    "final_answers",
    "rating_history",
    "reviews",
    "audit_log",
    "login_attempts",
    "judge_calls",
    "webhooks",
    "webhook_deliveries",
    "webhook_attempts",
];

/// Tables that belong to the running instances, not to the data: migrating creates
/// them on the destination as they should start there, and they are not copied.
/// `access_epoch` only tells instances when to drop what they cached about sign-ins.
pub const NOT_COPIED: &[&str] = &["access_epoch"];

/// Columns that belong to the running instances in the same way: `ratings.changed`
/// orders changes for the metrics each instance keeps (a counter on SQLite, transaction
/// ids on PostgreSQL), and the destination fills it as the rows arrive.
pub const NOT_COPIED_COLUMNS: &[(&str, &str)] = &[("ratings", "changed")];

/// Parameters one INSERT may carry, under SQLite's limit of 32,766 (PostgreSQL's is
/// 65,535).
const MAX_PARAMETERS: usize = 30_000;

/// What a column holds, as PostgreSQL names its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Uuid,
    Text,
    Int,
    BigInt,
    Bool,
    Time,
    Json,
    Real,
}

impl Kind {
    fn of(data_type: &str) -> Option<Self> {
        Some(match data_type {
            "uuid" => Kind::Uuid,
            "text" => Kind::Text,
            "integer" => Kind::Int,
            "bigint" => Kind::BigInt,
            "boolean" => Kind::Bool,
            "timestamp with time zone" => Kind::Time,
            "jsonb" => Kind::Json,
            "double precision" => Kind::Real,
            _ => return None,
        })
    }
}

/// One value of a row, typed as its column is.
#[derive(Debug, Clone)]
enum Cell {
    Uuid(Option<Uuid>),
    Text(Option<String>),
    Int(Option<i32>),
    BigInt(Option<i64>),
    Bool(Option<bool>),
    Time(Option<DateTime<Utc>>),
    Json(Option<Value>),
    Real(Option<f64>),
}

/// A database to copy from or into, with its own connections (not the app's store).
enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Db {
    /// Opens `url` after bringing it to this build's schema.
    async fn open(url: &str, which: &str) -> anyhow::Result<Self> {
        let store = Store::connect(url)
            .await
            .with_context(|| format!("cannot open the {which} database"))?;
        store
            .migrate()
            .await
            .with_context(|| format!("cannot migrate the {which} database"))?;
        store.close().await;
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?.foreign_keys(true);
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options)
                .await?;
            Ok(Db::Sqlite(pool))
        } else {
            Ok(Db::Postgres(PgPool::connect(url).await?))
        }
    }

    async fn count(&self, table: &str) -> anyhow::Result<i64> {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let (n,): (i64,) = match self {
            Db::Sqlite(pool) => sqlx::query_as(&sql).fetch_one(pool).await?,
            Db::Postgres(pool) => sqlx::query_as(&sql).fetch_one(pool).await?,
        };
        Ok(n)
    }

    async fn close(&self) {
        match self {
            Db::Sqlite(pool) => pool.close().await,
            Db::Postgres(pool) => pool.close().await,
        }
    }
}

/// Each table's columns in order, with what they hold, from PostgreSQL's catalogue.
async fn columns(pool: &PgPool) -> anyhow::Result<BTreeMap<String, Vec<(String, Kind)>>> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT table_name::TEXT, column_name::TEXT, data_type::TEXT
         FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name <> '_sqlx_migrations'
         ORDER BY table_name, ordinal_position",
    )
    .fetch_all(pool)
    .await?;
    let mut tables: BTreeMap<String, Vec<(String, Kind)>> = BTreeMap::new();
    for (table, column, data_type) in rows {
        if NOT_COPIED_COLUMNS.contains(&(table.as_str(), column.as_str())) {
            continue;
        }
        let Some(kind) = Kind::of(&data_type) else {
            bail!("column {table}.{column} has type {data_type}, which migrate-data cannot copy");
        };
        if !NOT_COPIED.contains(&table.as_str()) {
            tables.entry(table).or_default().push((column, kind));
        }
    }
    if let Some(unknown) = tables.keys().find(|t| !TABLES.contains(&t.as_str())) {
        bail!("table {unknown} is not in migrate-data's list of tables, so nothing was copied");
    }
    Ok(tables)
}

/// Reads column `$i` of `$row` as `$kind` says.
macro_rules! read_cell {
    ($row:expr, $i:expr, $kind:expr) => {
        match $kind {
            Kind::Uuid => Cell::Uuid($row.try_get($i)?),
            Kind::Text => Cell::Text($row.try_get($i)?),
            Kind::Int => Cell::Int($row.try_get($i)?),
            Kind::BigInt => Cell::BigInt($row.try_get($i)?),
            Kind::Bool => Cell::Bool($row.try_get($i)?),
            Kind::Time => Cell::Time($row.try_get($i)?),
            Kind::Json => Cell::Json($row.try_get::<Option<Json<Value>>, _>($i)?.map(|j| j.0)),
            Kind::Real => Cell::Real($row.try_get($i)?),
        }
    };
}

/// Binds a cell into the row of a multi-row INSERT being built.
macro_rules! bind_cell {
    ($row:expr, $cell:expr) => {
        match $cell {
            Cell::Uuid(v) => {
                $row.push_bind(v);
            }
            Cell::Text(v) => {
                $row.push_bind(v);
            }
            Cell::Int(v) => {
                $row.push_bind(v);
            }
            Cell::BigInt(v) => {
                $row.push_bind(v);
            }
            Cell::Bool(v) => {
                $row.push_bind(v);
            }
            Cell::Time(v) => {
                $row.push_bind(v);
            }
            Cell::Json(v) => {
                $row.push_bind(v.map(Json));
            }
            Cell::Real(v) => {
                $row.push_bind(v);
            }
        }
    };
}

/// Inserts `rows` of `table` through `$tx`, on the backend `$db` names.
macro_rules! insert_rows {
    ($db:ty, $tx:expr, $table:expr, $names:expr, $rows:expr) => {{
        let mut insert = QueryBuilder::<$db>::new(format!("INSERT INTO {} ({}) ", $table, $names));
        insert.push_values($rows, |mut row, cells| {
            for cell in cells {
                bind_cell!(row, cell);
            }
        });
        insert.build().execute(&mut *$tx).await?;
    }};
}

/// Copies every row of one table from `$source` (a transaction) into `$dest` (a
/// transaction), `$chunk` rows per INSERT; evaluates to how many rows were copied.
macro_rules! copy_table {
    ($source:expr, $dest_db:ty, $dest:expr, $table:expr, $columns:expr, $chunk:expr) => {{
        let names: Vec<&str> = $columns.iter().map(|(n, _)| n.as_str()).collect();
        let names = names.join(", ");
        let select = format!("SELECT {names} FROM {}", $table);
        let mut rows = sqlx::query(&select).fetch(&mut *$source);
        let mut chunk: Vec<Vec<Cell>> = Vec::with_capacity($chunk);
        let mut copied = 0u64;
        while let Some(row) = rows.try_next().await? {
            let mut cells = Vec::with_capacity($columns.len());
            for (i, (_, kind)) in $columns.iter().enumerate() {
                cells.push(read_cell!(row, i, *kind));
            }
            chunk.push(cells);
            if chunk.len() == $chunk {
                copied += chunk.len() as u64;
                insert_rows!($dest_db, $dest, $table, names, chunk.drain(..));
            }
        }
        if !chunk.is_empty() {
            copied += chunk.len() as u64;
            insert_rows!($dest_db, $dest, $table, names, chunk.drain(..));
        }
        copied
    }};
}

/// One table's rows in the source and in the destination after the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub table: &'static str,
    pub source: i64,
    pub copied: u64,
    pub destination: i64,
}

/// Copies everything from `from` into `to` (which must hold no rows yet), reporting each
/// table as it is done, and checks the counts. Refuses two SQLite databases: a copy of
/// the file (`verdict backup`) does that better.
pub async fn run(
    from: &str,
    to: &str,
    mut report: impl FnMut(&Counted),
) -> anyhow::Result<Vec<Counted>> {
    if from == to {
        bail!("--from and --to name the same database");
    }
    let source = Db::open(from, "source").await?;
    let dest = Db::open(to, "destination").await?;
    let catalogue = match (&source, &dest) {
        (_, Db::Postgres(pool)) | (Db::Postgres(pool), _) => columns(pool).await?,
        (Db::Sqlite(_), Db::Sqlite(_)) => bail!(
            "both databases are SQLite: copy the file instead, with `verdict backup --to FILE`"
        ),
    };
    for table in TABLES {
        if !catalogue.contains_key(*table) {
            bail!("table {table} is missing from the databases' schema");
        }
        // Migrating installed the built-in rubrics (no one created them); they are
        // replaced by the source's.
        let rows = if *table == "rubrics" {
            let built_in = i64::try_from(verdict_core::rubric::built_in().len()).unwrap_or(0);
            let added = dest.count("rubrics WHERE created_by IS NOT NULL").await?;
            added + (dest.count("rubrics").await? - built_in).max(0)
        } else {
            dest.count(table).await?
        };
        if rows > 0 {
            bail!(
                "the destination already holds data ({rows} rows in {table}): migrate into a \
                 new, empty database"
            );
        }
    }
    let copied = copy(&source, &dest, &catalogue).await?;
    let mut counted = Vec::new();
    for (table, source_rows, copied) in copied {
        let one = Counted {
            table,
            source: source_rows,
            copied,
            destination: dest.count(table).await?,
        };
        report(&one);
        counted.push(one);
    }
    source.close().await;
    dest.close().await;
    let differ: Vec<String> = counted
        .iter()
        .filter(|c| c.destination != c.source || u64::try_from(c.source).ok() != Some(c.copied))
        .map(|c| {
            format!(
                "{}: {} in the source, {} now",
                c.table, c.source, c.destination
            )
        })
        .collect();
    if !differ.is_empty() {
        bail!("the copy does not match the source: {}", differ.join("; "));
    }
    Ok(counted)
}

/// Copies every table in order from `$read` (a read transaction) into `$write` (a
/// transaction of the `$db` backend), after clearing the built-in rubrics that migrating
/// installed there (the source's own are copied instead); pushes each table's source
/// count and rows copied onto `$done`, then commits.
macro_rules! copy_all {
    ($read:expr, $db:ty, $write:expr, $catalogue:expr, $done:expr) => {{
        sqlx::query("DELETE FROM rubrics")
            .execute(&mut *$write)
            .await?;
        for table in TABLES {
            let columns = &$catalogue[*table];
            let chunk = (MAX_PARAMETERS / columns.len()).max(1);
            let (n,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&mut *$read)
                .await?;
            let copied = copy_table!($read, $db, $write, table, columns, chunk);
            $done.push((*table, n, copied));
        }
        $write.commit().await?;
        $read.rollback().await?;
    }};
}

/// Copies every table in order, in one read snapshot of the source and one transaction
/// of the destination. Returns each table's source count (in the snapshot) and rows
/// copied.
async fn copy(
    source: &Db,
    dest: &Db,
    catalogue: &BTreeMap<String, Vec<(String, Kind)>>,
) -> anyhow::Result<Vec<(&'static str, i64, u64)>> {
    let mut done = Vec::new();
    // PostgreSQL reads in one snapshot only when asked; a SQLite read transaction is one.
    let snapshot = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";
    match (source, dest) {
        (Db::Sqlite(from), Db::Postgres(to)) => {
            let mut read = from.begin().await?;
            let mut write = to.begin().await?;
            copy_all!(read, sqlx::Postgres, write, catalogue, done);
        }
        (Db::Postgres(from), Db::Sqlite(to)) => {
            let mut read = from.begin().await?;
            sqlx::query(snapshot).execute(&mut *read).await?;
            let mut write = to.begin().await?;
            copy_all!(read, sqlx::Sqlite, write, catalogue, done);
        }
        (Db::Postgres(from), Db::Postgres(to)) => {
            let mut read = from.begin().await?;
            sqlx::query(snapshot).execute(&mut *read).await?;
            let mut write = to.begin().await?;
            copy_all!(read, sqlx::Postgres, write, catalogue, done);
        }
        (Db::Sqlite(_), Db::Sqlite(_)) => unreachable!("refused by run"),
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_of_the_migrations_is_listed_once() {
        let mut created = Vec::new();
        for file in
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres")).unwrap()
        {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("CREATE TABLE ") {
                    created.push(rest.split_whitespace().next().unwrap().to_owned());
                }
            }
        }
        created.sort();
        let mut listed: Vec<String> = TABLES
            .iter()
            .chain(NOT_COPIED)
            .map(|t| (*t).to_owned())
            .collect();
        listed.sort();
        assert_eq!(created, listed);
    }

    #[test]
    fn each_table_comes_after_the_tables_it_refers_to() {
        for file in
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres")).unwrap()
        {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            let mut table: Option<&str> = None;
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("CREATE TABLE ") {
                    table = rest.split_whitespace().next();
                } else if let Some(rest) = line.strip_prefix("ALTER TABLE ") {
                    table = rest.split_whitespace().next();
                }
                let Some((_, after)) = line.split_once("REFERENCES ") else {
                    continue;
                };
                let target = after.split_whitespace().next().unwrap();
                let at = |name: &str| TABLES.iter().position(|t| *t == name).unwrap();
                let this = table.expect("a reference inside a table");
                assert!(
                    at(target) <= at(this),
                    "{this} refers to {target}, which must come first"
                );
            }
        }
    }
}
