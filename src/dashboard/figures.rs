//! How the batch page words a figure: shares, coefficients and their intervals, with a
//! dash for one there is none of.

use crate::metrics::judges::Lean;
use crate::metrics::stats::Estimate;

/// A share as a page shows it: `75%`, or a dash when there is none.
pub(super) fn percent(share: &Option<f64>) -> String {
    share.map_or_else(|| "—".into(), |x| format!("{:.0}%", x * 100.0))
}

/// A coefficient (kappa, Spearman) as a page shows it: `0.62`, or a dash.
pub(super) fn coefficient(value: &Option<f64>) -> String {
    value.map_or_else(|| "—".into(), |x| format!("{x:.2}"))
}

/// A share with its 95% interval: `62% (48–75%)`, or a dash.
pub(super) fn estimate(share: &Option<Estimate>) -> String {
    share.map_or_else(
        || "—".into(),
        |e| {
            format!(
                "{:.0}% ({:.0}–{:.0}%)",
                e.value * 100.0,
                e.low * 100.0,
                e.high * 100.0
            )
        },
    )
}

/// A lean as the page shows it: `60% (31–83%) of 5`, or `— of 3` below the answers a
/// share needs.
pub(super) fn lean(lean: &Option<Lean>) -> String {
    lean.as_ref().map_or_else(
        || "—".into(),
        |l| format!("{} of {}", estimate(&l.share), l.n),
    )
}

/// A coefficient with its interval: `1.10 (-0.25 to 2.45)`, or a dash.
pub(super) fn coefficient_with_interval(e: &Option<Estimate>) -> String {
    e.map_or_else(
        || "—".into(),
        |e| format!("{:.2} ({:.2} to {:.2})", e.value, e.low, e.high),
    )
}
