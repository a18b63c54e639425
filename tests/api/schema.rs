//! The two migration sets describe the same schema: the same columns, indexes, foreign
//! keys, CHECK constraints and triggers, each compared in a form both backends share.

mod sql;

use std::collections::{BTreeMap, BTreeSet};

use verdict::store::Backend;

use crate::helpers::{Fixture, TestDb};

/// What both backends must agree on, one line per fact: every column with its type (in the
/// portable names of migrations/README.md) and whether it may be null; every index and
/// unique constraint by table and columns, and the rows a partial one covers; every foreign
/// key with its actions; every CHECK constraint by table and expression; every trigger by
/// table, timing, event, condition and what it writes.
type Schema = BTreeSet<String>;

/// A schema as read, with the CHECK constraints, partial indexes' conditions and triggers
/// the comparison could not read (each with why): those would compare as raw text, so they
/// fail the test instead.
#[derive(Default)]
struct Read {
    schema: Schema,
    unread: Vec<String>,
}

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

async fn sqlite_schema(db: &TestDb) -> Read {
    db.store().await.close().await;
    let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
    let columns: Vec<(String, String, String, bool)> = sqlx::query_as(
        "SELECT m.name, p.name, p.type, p.\"notnull\" FROM sqlite_master m, pragma_table_info(m.name) p
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != '_sqlx_migrations'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // Indexes with the columns they cover, unique ones (constraints included) marked, and
    // the CREATE INDEX text of a partial one, whose WHERE is read from it.
    let indexes: Vec<(String, String, bool, String, Option<String>)> = sqlx::query_as(
        "SELECT m.name, l.name, l.\"unique\", group_concat(i.name, ','),
                (SELECT s.sql FROM sqlite_master s WHERE s.type = 'index' AND s.name = l.name
                   AND l.partial)
         FROM sqlite_master m, pragma_index_list(m.name) l, pragma_index_info(l.name) i
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != '_sqlx_migrations'
           AND l.origin != 'pk'
         GROUP BY m.name, l.name, l.\"unique\"",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // A reference without a column names the referenced table's primary key.
    let foreign_keys: Vec<(String, i64, String, String, String, String, String)> = sqlx::query_as(
        "SELECT m.name, f.id, f.\"from\", f.\"table\",
                COALESCE(f.\"to\", (SELECT p.name FROM pragma_table_info(f.\"table\") p
                                    WHERE p.pk = 1)),
                f.on_delete, f.on_update
         FROM sqlite_master m, pragma_foreign_key_list(m.name) f
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'
         ORDER BY m.name, f.id, f.seq",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // SQLite keeps each table's CREATE TABLE text, with added columns appended to it: its
    // CHECK constraints are read from there.
    let creates: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master
         WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != '_sqlx_migrations'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let triggers: Vec<(String, String)> =
        sqlx::query_as("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
            .fetch_all(&pool)
            .await
            .unwrap();
    pool.close().await;
    // SQLite reports a column's type as declared; time and JSON columns are TEXT there,
    // so they are told apart by what PostgreSQL declares for the same column below.
    let mut read = Read::default();
    for (table, column, declared, not_null) in columns {
        let kind = portable(&declared);
        read.schema.insert(format!(
            "{table}.{column}: {kind}, {}",
            nullability(not_null)
        ));
    }
    for (table, name, unique, columns, create) in indexes {
        let Some(create) = create else {
            read.schema
                .insert(index_line(&table, unique, &columns, None));
            continue;
        };
        let predicate = sql::tokens(&create).and_then(|tokens| {
            let at = tokens
                .iter()
                .rposition(|t| matches!(t, sql::Token::Word(w) if w == "where"))
                .ok_or("a partial index without WHERE")?;
            sql::expression(&tokens[at + 1..])
        });
        match predicate {
            Ok(predicate) => {
                let line = index_line(&table, unique, &columns, Some(&predicate));
                read.schema.insert(line);
            }
            Err(why) => read
                .unread
                .push(format!("SQLite index {name}: {why}: {create}")),
        }
    }
    let mut keys: BTreeMap<(String, i64), ForeignKey> = BTreeMap::new();
    for (table, id, from, target, to, on_delete, on_update) in foreign_keys {
        let key = keys
            .entry((table.clone(), id))
            .or_insert_with(|| ForeignKey {
                table,
                target: target.to_lowercase(),
                on_delete,
                on_update,
                ..ForeignKey::default()
            });
        key.columns.push(from);
        key.target_columns.push(to);
    }
    read.schema.extend(keys.values().map(ForeignKey::line));
    for (table, create) in creates {
        let checks = sql::tokens(&create).and_then(|tokens| sql::checks(&tokens));
        match checks {
            Ok(checks) => {
                for check in checks {
                    read.check(&table, sql::expression(&check), || {
                        check
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(" ")
                    });
                }
            }
            Err(why) => read.unread.push(format!("SQLite {table}: {why}")),
        }
    }
    for (name, text) in triggers {
        let lines = sql::trigger(&text).and_then(|head| {
            let writes = sql::writes(&head.table, &head.body)?;
            Ok(trigger_lines(&head, &writes))
        });
        match lines {
            Ok(lines) => read.schema.extend(lines),
            Err(why) => read
                .unread
                .push(format!("SQLite trigger {name}: {why}: {text}")),
        }
    }
    read
}

async fn postgres_schema(db: &TestDb) -> Read {
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
    let indexes: Vec<(String, bool, String, Option<String>)> = sqlx::query_as(
        "SELECT t.relname::text, ix.indisunique,
                string_agg(a.attname::text, ',' ORDER BY k.n),
                pg_get_expr(ix.indpred, ix.indrelid)
         FROM pg_index ix
         JOIN pg_class t ON t.oid = ix.indrelid
         JOIN pg_namespace ns ON ns.oid = t.relnamespace
         CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, n)
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
         WHERE ns.nspname = 'public' AND NOT ix.indisprimary AND t.relname != '_sqlx_migrations'
         GROUP BY t.relname, ix.indexrelid, ix.indisunique, pg_get_expr(ix.indpred, ix.indrelid)",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // Each key's columns in their order, with the actions as PostgreSQL's one-letter codes.
    let foreign_keys: Vec<(String, String, String, String, String, String)> = sqlx::query_as(
        "SELECT t.relname::text, string_agg(a.attname::text, ',' ORDER BY k.n),
                r.relname::text, string_agg(ra.attname::text, ',' ORDER BY k.n),
                f.confdeltype::text, f.confupdtype::text
         FROM pg_constraint f
         JOIN pg_class t ON t.oid = f.conrelid
         JOIN pg_namespace ns ON ns.oid = t.relnamespace
         JOIN pg_class r ON r.oid = f.confrelid
         CROSS JOIN LATERAL unnest(f.conkey, f.confkey) WITH ORDINALITY AS k(attnum, refnum, n)
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
         JOIN pg_attribute ra ON ra.attrelid = r.oid AND ra.attnum = k.refnum
         WHERE f.contype = 'f' AND ns.nspname = 'public'
         GROUP BY f.oid, t.relname, r.relname, f.confdeltype, f.confupdtype",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let checks: Vec<(String, String)> = sqlx::query_as(
        "SELECT t.relname::text, pg_get_constraintdef(c.oid)
         FROM pg_constraint c
         JOIN pg_class t ON t.oid = c.conrelid
         JOIN pg_namespace ns ON ns.oid = t.relnamespace
         WHERE c.contype = 'c' AND ns.nspname = 'public'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // Foreign keys run through internal triggers of their own: only the declared ones.
    let triggers: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT tg.tgname::text, pg_get_triggerdef(tg.oid), p.prosrc
         FROM pg_trigger tg
         JOIN pg_class t ON t.oid = tg.tgrelid
         JOIN pg_namespace ns ON ns.oid = t.relnamespace
         JOIN pg_proc p ON p.oid = tg.tgfoid
         WHERE NOT tg.tgisinternal AND ns.nspname = 'public'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    let mut read = Read::default();
    for (table, column, declared, nullable) in columns {
        // In SQLite these are TEXT: compare them as text there.
        let kind = match portable(&declared) {
            "time (TEXT in SQLite)" | "json (TEXT in SQLite)" => "text",
            other => other,
        };
        read.schema.insert(format!(
            "{table}.{column}: {kind}, {}",
            nullability(nullable == "NO")
        ));
    }
    for (table, unique, columns, predicate) in indexes {
        let Some(predicate) = predicate else {
            read.schema
                .insert(index_line(&table, unique, &columns, None));
            continue;
        };
        match sql::tokens(&predicate).and_then(|tokens| sql::expression(&tokens)) {
            Ok(parsed) => {
                let line = index_line(&table, unique, &columns, Some(&parsed));
                read.schema.insert(line);
            }
            Err(why) => read.unread.push(format!(
                "PostgreSQL index on {table} WHERE {predicate}: {why}"
            )),
        }
    }
    for (table, columns, target, target_columns, on_delete, on_update) in foreign_keys {
        let key = ForeignKey {
            table,
            columns: columns.split(',').map(str::to_owned).collect(),
            target,
            target_columns: target_columns.split(',').map(str::to_owned).collect(),
            on_delete: pg_action(&on_delete).into(),
            on_update: pg_action(&on_update).into(),
        };
        read.schema.insert(key.line());
    }
    for (table, definition) in checks {
        // `CHECK (<expression>)`, perhaps followed by NOT VALID or NO INHERIT, which make
        // it unreadable here on purpose: SQLite has neither.
        let expression = sql::tokens(&definition).and_then(|tokens| match tokens.as_slice() {
            [sql::Token::Word(check), rest @ ..] if check == "check" => sql::expression(rest),
            _ => Err("not a CHECK".into()),
        });
        read.check(&table, expression, || definition.clone());
    }
    for (name, definition, source) in triggers {
        let lines = sql::trigger(&definition).and_then(|head| {
            let writes = sql::writes(&head.table, &sql::tokens(&source)?)?;
            Ok(trigger_lines(&head, &writes))
        });
        match lines {
            Ok(lines) => read.schema.extend(lines),
            Err(why) => read
                .unread
                .push(format!("PostgreSQL trigger {name}: {why}: {definition}")),
        }
    }
    read
}

impl Read {
    fn check(
        &mut self,
        table: &str,
        expression: Result<sql::Expr, String>,
        text: impl Fn() -> String,
    ) {
        match expression {
            Ok(expression) => {
                self.schema.insert(format!("{table}: CHECK {expression}"));
            }
            Err(why) => self
                .unread
                .push(format!("{table}: CHECK {}: {why}", text())),
        }
    }
}

#[derive(Default)]
struct ForeignKey {
    table: String,
    columns: Vec<String>,
    target: String,
    target_columns: Vec<String>,
    on_delete: String,
    on_update: String,
}

impl ForeignKey {
    fn line(&self) -> String {
        format!(
            "{}: foreign key ({}) -> {} ({}) ON DELETE {} ON UPDATE {}",
            self.table,
            self.columns.join(", "),
            self.target,
            self.target_columns.join(", "),
            self.on_delete,
            self.on_update
        )
    }
}

/// PostgreSQL's code for a referential action, in SQLite's words.
fn pg_action(code: &str) -> &'static str {
    match code {
        "a" => "NO ACTION",
        "r" => "RESTRICT",
        "c" => "CASCADE",
        "n" => "SET NULL",
        "d" => "SET DEFAULT",
        _ => "unknown",
    }
}

/// One line per event: SQLite has one trigger per event where PostgreSQL may have one for
/// several (`AFTER UPDATE OR DELETE`), which is the same rule.
fn trigger_lines(head: &sql::TriggerHead, writes: &BTreeSet<String>) -> Vec<String> {
    let deferred = if head.deferred {
        ", deferred to commit"
    } else {
        ""
    };
    let when = head
        .when
        .as_ref()
        .map(|condition| format!(" WHEN {condition}"))
        .unwrap_or_default();
    let writes = writes.iter().cloned().collect::<Vec<_>>().join(", ");
    head.events
        .iter()
        .map(|event| {
            format!(
                "{}: trigger {} {event}{deferred} FOR EACH {}{when} writes {writes}",
                head.table, head.timing, head.each
            )
        })
        .collect()
}

/// Where the backends differ by necessity or by design, the lines of one stand for the
/// lines of the other, for the reason given. Every line must be there: a mapping that no
/// longer matches fails the test rather than hiding a change.
struct Mapping {
    why: &'static str,
    sqlite: &'static [&'static str],
    postgres: &'static [&'static str],
}

const MAPPINGS: &[Mapping] = &[
    Mapping {
        why: "0011: PostgreSQL fills the copied facts into the new row before it is stored; \
              a SQLite trigger cannot change NEW, so it updates the row just stored",
        sqlite: &[
            "ratings: trigger AFTER INSERT FOR EACH ROW writes ratings.external_id, \
             ratings.gold, ratings.len_a, ratings.len_b, ratings.model_a, ratings.model_b, \
             ratings.swapped",
        ],
        postgres: &[
            "ratings: trigger BEFORE INSERT FOR EACH ROW writes ratings.external_id, \
             ratings.gold, ratings.len_a, ratings.len_b, ratings.model_a, ratings.model_b, \
             ratings.swapped",
        ],
    },
    Mapping {
        why: "0013, by design: SQLite orders rating changes by a counter of its own, moved \
              on every insert and update (the trigger's own update leaves `changed` moved, so \
              it does not count twice); PostgreSQL records the transaction id, on insert \
              through the column's default, so it needs neither the counter nor an insert \
              trigger",
        sqlite: &[
            "rating_clock.value: integer, not null",
            "ratings: trigger AFTER INSERT FOR EACH ROW writes rating_clock.value, \
             ratings.changed",
            "ratings: trigger AFTER UPDATE FOR EACH ROW WHEN (new.changed = old.changed) \
             writes rating_clock.value, ratings.changed",
        ],
        postgres: &["ratings: trigger BEFORE UPDATE FOR EACH ROW writes ratings.changed"],
    },
];

/// PostgreSQL defers the triggers that move the access epoch to the commit (0010), so that
/// moving it is the last lock a transaction takes and ending a user's sessions cannot
/// deadlock with a request saving one of them. SQLite has one writer at a time, which
/// cannot deadlock, and no deferred triggers: its epoch triggers run at once. Only a
/// trigger that writes nothing but the epoch compares without its deferral.
fn epoch_undeferred(line: &str) -> String {
    if line.ends_with(" writes access_epoch.version") {
        line.replacen(", deferred to commit", "", 1)
    } else {
        line.to_owned()
    }
}

/// Applies the declared mappings, and says which of their lines are missing.
fn mapped(sqlite: &mut Schema, postgres: &mut Schema) -> Vec<String> {
    *postgres = postgres.iter().map(|line| epoch_undeferred(line)).collect();
    let mut stale = Vec::new();
    for mapping in MAPPINGS {
        for (schema, lines, backend) in [
            (&mut *sqlite, mapping.sqlite, "SQLite"),
            (&mut *postgres, mapping.postgres, "PostgreSQL"),
        ] {
            for line in lines {
                if !schema.remove(*line) {
                    stale.push(format!("{backend} has no {line:?} ({})", mapping.why));
                }
            }
        }
    }
    stale
}

fn nullability(not_null: bool) -> &'static str {
    if not_null { "not null" } else { "nullable" }
}

/// An index by table and columns, and for a partial index the rows it covers.
fn index_line(table: &str, unique: bool, columns: &str, rows: Option<&sql::Expr>) -> String {
    let kind = if unique { "unique index" } else { "index" };
    let rows = rows.map(|e| format!(" WHERE {e}")).unwrap_or_default();
    format!("{table}: {kind} on ({columns}){rows}")
}

/// The differences between the two sets, one per line, or nothing when they agree.
fn disagreement(sqlite: &Schema, postgres: &Schema, stale: &[String]) -> Option<String> {
    let only_sqlite: Vec<_> = sqlite.difference(postgres).collect();
    let only_pg: Vec<_> = postgres.difference(sqlite).collect();
    if only_sqlite.is_empty() && only_pg.is_empty() && stale.is_empty() {
        return None;
    }
    let list = |lines: &[&String]| {
        lines
            .iter()
            .map(|line| format!("\n    {line}"))
            .collect::<String>()
    };
    let mut message = String::from(
        "the two migration sets disagree (a committed migration is never edited: fix it with \
         a new migration pair)",
    );
    if !only_sqlite.is_empty() {
        message += &format!("\n  only in SQLite:{}", list(&only_sqlite));
    }
    if !only_pg.is_empty() {
        message += &format!("\n  only in PostgreSQL:{}", list(&only_pg));
    }
    if !stale.is_empty() {
        let stale: Vec<&String> = stale.iter().collect();
        message += &format!(
            "\n  declared differences (MAPPINGS in tests/api/schema.rs) that no longer \
             match:{}",
            list(&stale)
        );
    }
    Some(message)
}

#[tokio::test]
async fn both_migration_sets_yield_the_same_schema() {
    let sqlite = TestDb::setup(Backend::Sqlite).await.unwrap();
    let Read {
        schema: mut lite,
        unread: lite_unread,
    } = sqlite_schema(&sqlite).await;
    sqlite.teardown().await;
    assert!(
        lite_unread.is_empty(),
        "the comparison cannot read these (teach tests/api/schema/sql.rs):\n{}",
        lite_unread.join("\n")
    );
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
    // Each kind of fact is read at all (an empty read would compare equal).
    for kind in [": foreign key (", ": CHECK (", ": trigger ", ") WHERE ("] {
        assert!(
            lite.iter().any(|line| line.contains(kind)),
            "SQLite schema has lines with {kind:?}"
        );
    }
    let Some(postgres) = TestDb::setup(Backend::Postgres).await else {
        return;
    };
    let Read {
        schema: mut pg,
        unread: pg_unread,
    } = postgres_schema(&postgres).await;
    postgres.teardown().await;
    assert!(
        pg_unread.is_empty(),
        "the comparison cannot read these (teach tests/api/schema/sql.rs):\n{}",
        pg_unread.join("\n")
    );
    let stale = mapped(&mut lite, &mut pg);
    if let Some(message) = disagreement(&lite, &pg, &stale) {
        panic!("{message}");
    }
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
