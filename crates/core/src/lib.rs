//! verdict's domain core: the rules of rating as plain values and functions.
//!
//! The entities (users, batches, tasks, assignments, ratings) and the transitions
//! between their states, each a method that either names the step to take or returns a
//! refusal; rubric documents and the rule engine that checks answers against them, gold
//! grading, metrics folded from ratings, what an LLM judge is asked and
//! how its reply is read, and batch files read into tasks. Nothing here knows about the
//! web, the async runtime or the database: the store persists what this crate decides,
//! and the app serves it.
#![forbid(unsafe_code)]

pub mod access;
pub mod assignment;
pub mod batch;
pub mod evidence;
pub mod fields;
pub mod gold;
pub mod import;
pub mod judge;
pub mod lifecycle;
pub mod metrics;
pub mod overlap;
pub mod qualification;
pub mod rating;
pub mod render;
pub mod report;
pub mod role;
pub mod routing;
pub mod rubric;
pub mod settings;
pub mod sign_in;
pub mod stall;
pub mod submission;
pub mod task;
pub mod user;
pub mod webhook;
