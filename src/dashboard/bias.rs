//! The batch page's rater bias section: a table row for the batch and each rater, each
//! rater's straight-lined questions, and a chart per figure.

use super::charts;
use super::figures::{coefficient_with_interval, estimate, lean};
use crate::metrics::Metrics;
use crate::metrics::bias::{Bias, LengthControlled, RaterBias};
use crate::metrics::judges::Lean;
use crate::metrics::stats::Estimate;
use verdict_core::rubric::{self, Rubric};

/// The rater bias figures as the batch page shows them: a table row for the batch and
/// each rater, a row per rater and question for straight-lining, and the charts.
pub(super) struct BiasView {
    /// The batch's row first, then each rater's.
    pub(super) rows: Vec<BiasRow>,
    /// Whether the rubric asks a preference (else only time and straight-lining).
    pub(super) preference: bool,
    /// Per rater and question: rater, question label, most common answer, its share
    /// and n, and whether it is straight-lined.
    pub(super) answers: Vec<(String, String, String, String, u64, bool)>,
    /// Each chart's heading and SVG, drawn by `charts` from numbers and escaped labels.
    pub(super) charts: Vec<(&'static str, String)>,
}

/// One row of the rater bias table, each figure as the page words it.
pub(super) struct BiasRow {
    pub(super) label: String,
    pub(super) pooled: bool,
    pub(super) rated: u64,
    pub(super) position: String,
    pub(super) length: String,
    pub(super) prefers_b: String,
    pub(super) length_controlled: String,
    pub(super) coefficient: String,
    pub(super) median_time: String,
    pub(super) over_guidance: String,
    pub(super) straight_lined: String,
}

/// The rater bias section of `metrics`, its straight-lined questions labelled from
/// `rubric`.
pub(super) fn bias_view(metrics: &Metrics, rubric: &Rubric) -> BiasView {
    let bias = &metrics.bias;
    let b = &bias.batch;
    let label_of = |path: &str| rubric::answer_label(rubric, path);
    let mut rows = vec![BiasRow {
        label: "All raters".into(),
        pooled: true,
        rated: b.rated,
        position: lean(&b.position),
        length: lean(&b.length),
        prefers_b: estimate(&b.length_controlled.as_ref().and_then(|l| l.prefers_b)),
        length_controlled: estimate(&b.length_controlled.as_ref().and_then(|l| l.share)),
        coefficient: coefficient_with_interval(
            &b.length_controlled
                .as_ref()
                .and_then(|l| l.length_coefficient),
        ),
        median_time: b
            .time
            .median_s
            .map_or_else(|| "—".into(), |t| crate::web::clock(t.round() as i32)),
        over_guidance: estimate(&b.time.over_guidance),
        straight_lined: format!(
            "{} of {} raters with 5 or more",
            b.straight_lining.raters_flagged, b.straight_lining.raters_checked
        ),
    }];
    let mut answers = Vec::new();
    for r in &bias.raters {
        let lc = r.length_controlled.as_ref();
        rows.push(BiasRow {
            label: r.rater.clone(),
            pooled: false,
            rated: r.rated,
            position: lean(&r.position),
            length: lean(&r.length),
            prefers_b: estimate(&lc.and_then(|l| l.prefers_b)),
            length_controlled: estimate(&lc.and_then(|l| l.share)),
            coefficient: coefficient_with_interval(&lc.and_then(|l| l.length_coefficient)),
            median_time: r
                .time
                .median_s
                .map_or_else(|| "—".into(), |t| crate::web::clock(t.round() as i32)),
            over_guidance: estimate(&r.time.over_guidance),
            straight_lined: if r.straight_lining.straight_lined.is_empty() {
                "none".into()
            } else {
                r.straight_lining
                    .straight_lined
                    .iter()
                    .map(|p| label_of(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
        let questions = rubric::labelled_in_order(
            rubric,
            r.straight_lining
                .questions
                .iter()
                .map(|(p, a)| (p.clone(), a.clone())),
        );
        for (label, a) in questions {
            answers.push((
                r.rater.clone(),
                label,
                a.answer.clone(),
                estimate(&a.share),
                a.n,
                a.straight,
            ));
        }
    }
    BiasView {
        preference: b.position.is_some(),
        charts: bias_charts(bias),
        rows,
        answers,
    }
}

/// The charts of the rater bias section: each figure per rater, the batch's first.
fn bias_charts(bias: &Bias) -> Vec<(&'static str, String)> {
    let b = &bias.batch;
    let dots = |pick: &dyn Fn(&RaterBias) -> (Option<Estimate>, u64),
                pooled: (Option<Estimate>, u64)| {
        let mut rows = vec![charts::DotRow {
            label: "All raters".into(),
            estimate: pooled.0,
            n: pooled.1,
            pooled: true,
        }];
        rows.extend(bias.raters.iter().map(|r| {
            let (estimate, n) = pick(r);
            charts::DotRow {
                label: r.rater.clone(),
                estimate,
                n,
                pooled: false,
            }
        }));
        rows
    };
    let of_lean = |l: &Option<Lean>| l.as_ref().map_or((None, 0), |l| (l.share, l.n));
    let of_lc = |l: &Option<LengthControlled>| l.as_ref().map_or((None, 0), |l| (l.share, l.n));
    let even = charts::DotScale::shares(Some((0.5, "no lean (50%)")));
    let mut out = Vec::new();
    if b.position.is_some() {
        out.push((
            "Lean to the response shown first",
            charts::dot_intervals(
                "Lean to the response shown first, per rater",
                "share to the first shown",
                &dots(&|r| of_lean(&r.position), of_lean(&b.position)),
                &even,
            ),
        ));
        out.push((
            "Lean to the longer response",
            charts::dot_intervals(
                "Lean to the longer response, per rater",
                "share to the longer",
                &dots(&|r| of_lean(&r.length), of_lean(&b.length)),
                &even,
            ),
        ));
        out.push((
            "Preference for B at equal length",
            charts::dot_intervals(
                "Length-controlled preference for B, per rater",
                "share for B",
                &dots(
                    &|r| of_lc(&r.length_controlled),
                    of_lc(&b.length_controlled),
                ),
                &even,
            ),
        ));
    }
    let medians = bias
        .raters
        .iter()
        .filter_map(|r| r.time.median_s)
        .chain(b.time.median_s);
    let point = |t: Option<f64>| {
        t.map(|value| Estimate {
            value,
            low: value,
            high: value,
        })
    };
    out.push((
        "Median time against the guidance",
        charts::dot_intervals(
            "Median active time per rater against the 30-minute guidance",
            "median active time",
            &dots(
                &|r| (point(r.time.median_s), r.time.n),
                (point(b.time.median_s), b.time.n),
            ),
            &charts::DotScale::minutes(medians, f64::from(bias.guidance_s)),
        ),
    ));
    out.push((
        "Ratings over 30 minutes",
        charts::dot_intervals(
            "Share of ratings over the 30-minute guidance, per rater",
            "share over 30 minutes",
            &dots(
                &|r| (r.time.over_guidance, r.time.n),
                (b.time.over_guidance, b.time.n),
            ),
            &charts::DotScale::shares(None),
        ),
    ));
    // Per rater, the question they most often gave one answer to: 100% on 5 or more
    // tasks is straight-lining.
    let rows: Vec<charts::DotRow> = bias
        .raters
        .iter()
        .map(|r| {
            let most = r
                .straight_lining
                .questions
                .values()
                .filter(|a| a.share.is_some())
                .max_by(|x, y| {
                    let share =
                        |a: &crate::metrics::bias::RepeatedAnswer| a.share.map_or(0.0, |e| e.value);
                    share(x).total_cmp(&share(y))
                });
            charts::DotRow {
                label: r.rater.clone(),
                estimate: most.and_then(|a| a.share),
                n: most.map_or(r.rated, |a| a.n),
                pooled: false,
            }
        })
        .collect();
    out.push((
        "Straight-lining",
        charts::dot_intervals(
            "Per rater, the largest share of one answer to one question",
            "largest share",
            &rows,
            &charts::DotScale::shares(Some((1.0, "the same answer every time"))),
        ),
    ));
    out
}
