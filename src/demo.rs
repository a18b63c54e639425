//! `verdict demo`: a server on a fresh database, with demo accounts and a batch of
//! realistic tasks for each built-in rubric, for trying verdict out in a minute.

use anyhow::Context;
use tokio::net::TcpListener;

use crate::auth::Role;
use crate::services::accounts::{self, NewUser};
use crate::services::batches::settings::SettingsChange;
use crate::services::batches::{self, UploadParams};
use crate::store::batches::Imported;
use crate::{AppState, Config, Store};
use verdict_core::import::Format;
use verdict_core::rubric::Classification;

/// Twelve coding prompts with two answers each, written for verdict: the blackhat batch
/// and the six-aspect batch.
const TASKS: &[u8] = include_bytes!("../demo/tasks.jsonl");

/// Six coding prompts with one answer each, written for verdict: the additive 0-5 batch.
const SINGLE_TASKS: &[u8] = include_bytes!("../demo/single.jsonl");

/// A demo batch: its name, rubric and tasks (JSONL), two raters a task, and whether A
/// and B are shown in a random order (a rubric that judges one response has no sides).
struct DemoBatch {
    name: &'static str,
    rubric: &'static str,
    tasks: &'static [u8],
    randomize: Option<bool>,
}

/// The batch of each built-in rubric other than blackhat. They are made before the
/// blackhat batch, so that one, the newest, is listed first.
const OTHER_BATCHES: [DemoBatch; 2] = [
    DemoBatch {
        name: "Demo: one answer scored 0-5",
        rubric: "additive-5",
        tasks: SINGLE_TASKS,
        randomize: None,
    },
    DemoBatch {
        name: "Demo: answers compared on six aspects",
        rubric: "pairwise-aspects",
        tasks: TASKS,
        randomize: Some(true),
    },
];

const BLACKHAT_BATCH: DemoBatch = DemoBatch {
    name: "Demo: coding answers",
    rubric: "blackhat",
    tasks: TASKS,
    randomize: Some(true),
};

const ACCOUNTS: [(&str, Role); 4] = [
    ("admin", Role::Admin),
    ("lead", Role::Lead),
    ("rater1", Role::Rater),
    ("rater2", Role::Rater),
];

/// Starts the demo and serves until Ctrl-C or SIGTERM.
pub async fn run(bind: &str, pyodide_dir: std::path::PathBuf) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("verdict-demo-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let url = format!("sqlite://{}", dir.join("verdict.db").display());
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    let config = Config {
        pyodide_dir,
        ..Config::default()
    };
    let state = AppState::new(store.clone(), config);
    let listener = TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind}; try --bind 127.0.0.1:0"))?;
    let addr = listener.local_addr()?;

    let mut credentials = Vec::new();
    for (username, role) in ACCOUNTS {
        let password = crate::auth::tokens::generate()[4..20].to_owned();
        let new = NewUser::parse(Some(username), Some(role.as_str()), Some(&password))
            .map_err(|e| anyhow::anyhow!("demo account: {e:?}"))?;
        accounts::create_user(state.store(), state.hasher(), new, None)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        credentials.push((username, role, password));
    }
    let mut others = Vec::new();
    for batch in &OTHER_BATCHES {
        others.push(demo_batch(&state, batch).await?);
    }
    let imported = demo_batch(&state, &BLACKHAT_BATCH).await?;
    let question = |key: &str, label: &str, multiple: bool, options: &[&str]| Classification {
        key: key.into(),
        label: label.into(),
        multiple,
        required: true,
        options: options.iter().map(|o| o.to_string()).collect(),
    };
    let settings = SettingsChange {
        classifications: Some(vec![
            question(
                "language",
                "Programming language",
                false,
                &[
                    "python",
                    "rust",
                    "javascript",
                    "typescript",
                    "sql",
                    "go",
                    "bash",
                    "java",
                    "c",
                    "dockerfile",
                    "none",
                ],
            ),
            question(
                "kind",
                "What the prompt asks for",
                true,
                &[
                    "bug fix",
                    "feature",
                    "explanation",
                    "refactor",
                    "data",
                    "devops",
                    "other",
                ],
            ),
        ]),
        ..SettingsChange::default()
    };
    batches::settings::update(state.store(), imported.batch.id, settings, None)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;

    println!("\nverdict demo is running at http://{addr}\n");
    println!("  {:<8} {:<6} password", "username", "role");
    for (username, role, password) in &credentials {
        println!("  {username:<8} {:<6} {password}", role.as_str());
    }
    println!(
        "\nSign in as rater1 and take the next task of \"{}\" ({} tasks, 2 raters each).",
        imported.batch.name, imported.created
    );
    for other in &others {
        println!(
            "Also open: \"{}\" ({} tasks, rubric {}).",
            other.batch.name, other.created, other.batch.rubric
        );
    }
    println!(
        "The database lives in {} and is yours to delete. Ctrl-C stops the demo.\n",
        dir.display()
    );
    crate::serve(listener, state, crate::shutdown_signal()).await?;
    Ok(())
}

/// Makes `batch` and imports its tasks.
async fn demo_batch(state: &AppState, batch: &DemoBatch) -> anyhow::Result<Imported> {
    let params = UploadParams {
        name: Some(batch.name.into()),
        rubric: Some(batch.rubric.into()),
        overlap: Some(2),
        max_overlap: None,
        escalate: None,
        randomize: batch.randomize,
        raters_see_external_ids: None,
        route_by: None,
        routing: None,
    };
    let new = batches::new_batch(state.store(), &params, None)
        .await
        .map_err(|e| anyhow::anyhow!("demo batch {}: {e:?}", batch.name))?;
    batches::import(
        state.store(),
        new,
        Format::Jsonl,
        batch.tasks.into(),
        |_| {},
        None,
    )
    .await
    .map_err(|e| anyhow::anyhow!("demo batch {}: {e:?}", batch.name))
}
