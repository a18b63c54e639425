//! The code under fuzzing and the checks the targets share.
//!
//! The fuzzed modules are verdict-core's own (`verdict_core::import`,
//! `verdict_core::render`): the core depends on no web, runtime or database crate, so
//! `cargo fuzz build` compiles it with coverage instrumentation in a fraction of what the
//! whole app would take.

pub use verdict_core::{import, render};

pub mod html;
pub mod tasks;
