//! Metrics in the app: the figures are folded by the core ([`verdict_core::metrics`]);
//! the API serving them is here. What is kept between reads is
//! [`crate::heavy::live`], which the app state holds.

pub use verdict_core::metrics::*;

pub mod api;
