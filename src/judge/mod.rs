//! LLM judges in the app: the domain (what a judge is asked, how its reply is read) is
//! the core's [`verdict_core::judge`]; the call to a judge's endpoint is here.

pub use verdict_core::judge::*;

pub mod endpoint;
