//! The code under fuzzing and the checks the targets share.
//!
//! Why `#[path]` modules rather than a dependency on the `verdict` library: the library
//! pulls in axum, sqlx, tokio, argon2 and the rest, and `cargo fuzz build` compiles all of
//! it with coverage instrumentation. On the project's 2-core machines that build alone
//! took longer than CI's fuzz budget (see README.md for the timings), while the two modules
//! fuzzed here use only external crates (no `crate::` items), so compiling their source
//! files straight into this crate fuzzes exactly the app's code for a fraction of the
//! build. If either module ever needs `crate::` items, move that part out or switch the
//! targets to `verdict = { path = ".." }`.

#[path = "../../src/render/mod.rs"]
pub mod render;

#[path = "../../src/import.rs"]
pub mod import;

pub mod html;
pub mod tasks;
