//! Field errors: what the domain checks (the rubric's answer checks, the services' input
//! checks) say is wrong with what they were given, by field path. A plain map, so the
//! core can report them without knowing the web layer, which sends them as a 422.

use std::collections::BTreeMap;

/// Field path (e.g. `b.correctness_explanation`) to what is wrong with it.
pub type FieldErrors = BTreeMap<String, String>;
