//! Metrics in the app: the figures are folded by the core ([`verdict_core::metrics`]);
//! what is kept between reads is here.

pub use verdict_core::metrics::*;

pub mod live;
