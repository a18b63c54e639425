//! Committed migrations never change. `migrations/checksums.lock` holds each migration's
//! SHA-384, the digest sqlx keeps in `_sqlx_migrations.checksum` and compares at start-up:
//! an edited migration would make every database migrated before the edit refuse to
//! start. The lock is in `sha384sum`'s format, so `sha384sum --check` reads it too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha384};
use verdict::store::Backend;

use crate::helpers::{Fixture, TestDb};

/// The two migration sets, as folders of `migrations/`.
const SETS: [&str; 2] = ["postgres", "sqlite"];

fn migrations_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations")
}

/// The lock's digests (hex) by file, as `set/name.sql`.
fn lock() -> BTreeMap<String, String> {
    let path = migrations_dir().join("checksums.lock");
    let text = std::fs::read_to_string(&path).expect("migrations/checksums.lock");
    let mut lock = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let (digest, file) = line.split_once("  ").unwrap_or_else(|| {
            panic!(
                "migrations/checksums.lock line {}: not `<sha384 hex>  <set>/<file>`: {line:?}",
                n + 1
            )
        });
        assert!(
            digest.len() == 96 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "migrations/checksums.lock line {}: {digest:?} is not a SHA-384 in hex",
            n + 1
        );
        let earlier = lock.insert(file.to_owned(), digest.to_ascii_lowercase());
        assert!(
            earlier.is_none(),
            "migrations/checksums.lock lists {file} twice (line {})",
            n + 1
        );
    }
    lock
}

/// The files sqlx embeds from one set (it reads every `*.sql` file of the folder).
fn migration_files(set: &str) -> BTreeSet<String> {
    std::fs::read_dir(migrations_dir().join(set))
        .expect("migration folder")
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".sql"))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

fn sha384_hex(bytes: &[u8]) -> String {
    hex(&Sha384::digest(bytes))
}

/// The migration's version, as sqlx reads it from the file name.
fn version(file: &str) -> i64 {
    let (number, _) = file
        .split_once('_')
        .unwrap_or_else(|| panic!("{file}: a migration is named <number>_<name>.sql"));
    number
        .parse()
        .unwrap_or_else(|_| panic!("{file}: a migration is named <number>_<name>.sql"))
}

/// Every committed migration's text, by `set/name.sql`.
fn committed() -> BTreeMap<String, Vec<u8>> {
    SETS.iter()
        .flat_map(|set| {
            migration_files(set)
                .into_iter()
                .map(move |file| format!("{set}/{file}"))
        })
        .map(|key| {
            let text = std::fs::read(migrations_dir().join(&key)).unwrap();
            (key, text)
        })
        .collect()
}

/// What is wrong between the lock and the migration files, one paragraph per kind, naming
/// each file; empty when they agree.
fn lock_problems(lock: &BTreeMap<String, String>, files: &BTreeMap<String, Vec<u8>>) -> String {
    let mut problems = String::new();
    let mut unlisted = Vec::new();
    for (key, text) in files {
        let digest = sha384_hex(text);
        match lock.get(key) {
            None => unlisted.push(format!("{digest}  {key}")),
            Some(locked) if *locked != digest => {
                let _ = writeln!(
                    problems,
                    "migrations/{key} differs from the text locked in migrations/checksums.lock. \
                     A committed migration is never edited (sqlx would refuse to start on every \
                     database migrated before the edit): restore its committed text and make \
                     the change in a new migration pair."
                );
            }
            Some(_) => {}
        }
    }
    for key in lock.keys().filter(|key| !files.contains_key(*key)) {
        let _ = writeln!(
            problems,
            "migrations/{key} is in migrations/checksums.lock but gone: a committed migration \
             stays (databases have applied it); restore it."
        );
    }
    if !unlisted.is_empty() {
        let _ = writeln!(
            problems,
            "not in migrations/checksums.lock: if these are new migrations, add these lines at \
             its end (a line already there never changes):\n{}",
            unlisted.join("\n")
        );
    }
    problems
}

#[test]
fn every_committed_migration_is_locked_and_unchanged() {
    let problems = lock_problems(&lock(), &committed());
    assert!(problems.is_empty(), "{problems}");
}

/// The check above catches each way a lock and its files can part, and names the file.
#[test]
fn the_lock_check_names_a_changed_a_gone_and_an_unlisted_migration() {
    let text = |sql: &str| sql.as_bytes().to_vec();
    let locked_files = BTreeMap::from([
        (
            "postgres/0001_schema.sql".to_owned(),
            text("CREATE TABLE t (id UUID);\n"),
        ),
        (
            "sqlite/0001_schema.sql".to_owned(),
            text("CREATE TABLE t (id BLOB);\n"),
        ),
    ]);
    let lock: BTreeMap<String, String> = locked_files
        .iter()
        .map(|(key, text)| (key.clone(), sha384_hex(text)))
        .collect();
    assert_eq!(lock_problems(&lock, &locked_files), "");

    let mut files = locked_files;
    files.get_mut("sqlite/0001_schema.sql").unwrap().push(b'\n');
    files.remove("postgres/0001_schema.sql");
    files.insert("postgres/0002_new.sql".into(), text("SELECT 1;\n"));
    let problems = lock_problems(&lock, &files);
    assert!(
        problems.contains("migrations/sqlite/0001_schema.sql differs from the text locked"),
        "{problems}"
    );
    assert!(
        problems.contains(
            "migrations/postgres/0001_schema.sql is in migrations/checksums.lock but gone"
        ),
        "{problems}"
    );
    let line = format!("{}  postgres/0002_new.sql", sha384_hex(b"SELECT 1;\n"));
    assert!(
        problems.contains(&format!(
            "add these lines at its end (a line already there never changes):\n{line}"
        )),
        "{problems}"
    );
    assert_eq!(problems.lines().count(), 4, "nothing else: {problems}");
}

#[test]
fn both_sets_hold_the_same_migrations() {
    let [postgres, sqlite] = SETS.map(migration_files);
    let only_pg: Vec<_> = postgres.difference(&sqlite).collect();
    let only_sqlite: Vec<_> = sqlite.difference(&postgres).collect();
    assert!(
        only_pg.is_empty() && only_sqlite.is_empty(),
        "every migration is a pair with the same number and name in both folders; only in \
         migrations/postgres: {only_pg:?}; only in migrations/sqlite: {only_sqlite:?}"
    );
    let mut seen = BTreeMap::new();
    for file in &sqlite {
        if let Some(other) = seen.insert(version(file), file) {
            panic!("{other} and {file} share a number: each migration has its own");
        }
    }
}

/// The lock holds what sqlx itself records: after a fresh database is migrated, each row of
/// `_sqlx_migrations` carries the locked digest of the file of its version and name.
#[tokio::test]
async fn the_lock_holds_the_checksums_sqlx_records() {
    let lock = lock();
    for (backend, set) in [(Backend::Sqlite, "sqlite"), (Backend::Postgres, "postgres")] {
        let Some(db) = TestDb::setup(backend).await else {
            continue;
        };
        db.store().await.close().await;
        let sql = "SELECT version, description, checksum FROM _sqlx_migrations ORDER BY version";
        let applied: Vec<(i64, String, Vec<u8>)> = match backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
                let rows = sqlx::query_as(sql).fetch_all(&pool).await.unwrap();
                pool.close().await;
                rows
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
                let rows = sqlx::query_as(sql).fetch_all(&pool).await.unwrap();
                pool.close().await;
                rows
            }
        };
        db.teardown().await;
        // sqlx's description is the file name after the number, `_` read as a space.
        let recorded: BTreeMap<i64, (String, String)> = applied
            .into_iter()
            .map(|(version, description, checksum)| (version, (description, hex(&checksum))))
            .collect();
        let locked: BTreeMap<i64, (String, String)> = lock
            .iter()
            .filter_map(|(key, digest)| {
                let file = key.strip_prefix(set)?.strip_prefix('/')?;
                let (_, name) = file.split_once('_')?;
                let description = name.trim_end_matches(".sql").replace('_', " ");
                Some((version(file), (description, digest.clone())))
            })
            .collect();
        assert_eq!(
            recorded, locked,
            "{set}: the migrations sqlx applied to a fresh database, by version, with their \
             descriptions and checksums, are the locked ones"
        );
    }
}
