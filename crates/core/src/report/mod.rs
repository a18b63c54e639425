//! Reports for programme leads: the team's hours ([`hours`]) and the work-quality flags
//! a lead can act on ([`flags`]), as plain functions over finished ratings.

pub mod flags;
pub mod hours;
