//! Small SVG charts, drawn on the server. Colours and sizes are attributes (the CSP
//! allows no inline styles); every label is escaped.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::metrics::agreement::Agreement;
use crate::metrics::{PositionBias, SxsSummary};

const PALETTE: [&str; 8] = [
    "#2357c6", "#5b8def", "#9bb4e8", "#f3d27a", "#e8a15a", "#c9563c", "#8e44ad", "#7f8c8d",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Bars of the 1-7 side-by-side distribution, A's side in blue, B's in orange.
pub fn histogram(sxs: &SxsSummary) -> String {
    let (w, h, pad) = (420.0, 200.0, 28.0);
    let max = sxs.distribution.values().copied().max().unwrap_or(0).max(1) as f64;
    let bar = (w - 2.0 * pad) / 7.0;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"Side-by-side scores\">"
    );
    for score in 1..=7 {
        let n = sxs
            .distribution
            .get(&score.to_string())
            .copied()
            .unwrap_or(0);
        let height = (h - 2.0 * pad) * n as f64 / max;
        let x = pad + bar * (score - 1) as f64;
        let y = h - pad - height;
        let colour = match score {
            1..=3 => PALETTE[0],
            4 => PALETTE[7],
            _ => PALETTE[4],
        };
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"{colour}\"><title>{score}: {n}</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{n}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\">{score}</text>",
            x + 3.0,
            bar - 6.0,
            x + bar / 2.0,
            y - 4.0,
            x + bar / 2.0,
            h - pad + 16.0
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One stacked bar per question: the share of each option.
pub fn stacked_fields(fields: &BTreeMap<String, BTreeMap<String, u64>>) -> String {
    let (label_w, bar_w, row_h) = (190.0, 420.0, 26.0);
    let rows: Vec<_> = fields.iter().filter(|(k, _)| *k != "sxs").collect();
    let h = row_h * rows.len() as f64 + 10.0;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {} {h}\" role=\"img\" aria-label=\"Answers per question\">",
        label_w + bar_w + 10.0
    );
    for (i, (path, options)) in rows.iter().enumerate() {
        let y = i as f64 * row_h + 5.0;
        let total: u64 = options.values().sum();
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            y + 15.0,
            escape(path)
        );
        let mut x = label_w;
        for (j, (option, n)) in options.iter().enumerate() {
            let width = if total > 0 {
                bar_w * *n as f64 / total as f64
            } else {
                0.0
            };
            let share = if total > 0 {
                100.0 * *n as f64 / total as f64
            } else {
                0.0
            };
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {n} ({share:.0}%)</title></rect>",
                row_h - 6.0,
                PALETTE[j % PALETTE.len()],
                escape(option)
            );
            if width > 60.0 {
                let _ = write!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#fff\">{} {share:.0}%</text>",
                    x + 4.0,
                    y + 14.0,
                    escape(option)
                );
            }
            x += width;
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Percent agreement per question with its 95% (Wilson) interval, and alpha as a mark.
pub fn agreement(agreement: &BTreeMap<String, Agreement>) -> String {
    let (label_w, bar_w, row_h) = (190.0, 420.0, 24.0);
    let h = row_h * agreement.len() as f64 + 24.0;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {} {h}\" role=\"img\" aria-label=\"Agreement per question\">",
        label_w + bar_w + 10.0
    );
    for (i, (path, a)) in agreement.iter().enumerate() {
        let y = i as f64 * row_h + 6.0;
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            y + 12.0,
            escape(path)
        );
        let _ = write!(
            svg,
            "<rect x=\"{label_w}\" y=\"{:.1}\" width=\"{bar_w}\" height=\"2\" fill=\"#dfe3e8\"/>",
            y + 8.0
        );
        if let Some(p) = a.percent_agreement {
            let ci = crate::metrics::stats::share((p * a.pairs as f64).round() as u64, a.pairs);
            if let Some(ci) = ci {
                let _ = write!(
                    svg,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"6\" fill=\"#9bb4e8\"><title>95% interval {:.0}%-{:.0}%</title></rect>",
                    label_w + bar_w * ci.low,
                    y + 6.0,
                    bar_w * (ci.high - ci.low),
                    100.0 * ci.low,
                    100.0 * ci.high
                );
            }
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#2357c6\"><title>agreement {:.0}% of {} pairs</title></circle>",
                label_w + bar_w * p,
                y + 9.0,
                100.0 * p,
                a.pairs
            );
        }
        if let Some(alpha) = a.krippendorff_alpha {
            let x = label_w + bar_w * alpha.clamp(0.0, 1.0);
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"14\" fill=\"#c9563c\"><title>alpha {alpha:.3}</title></rect>",
                x - 1.5,
                y + 2.0
            );
        }
    }
    let _ = write!(
        svg,
        "<text x=\"{label_w}\" y=\"{:.1}\" font-size=\"10\">0</text><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">1</text>",
        h - 4.0,
        label_w + bar_w,
        h - 4.0
    );
    svg.push_str("</svg>");
    svg
}

/// The mean canonical score when A was shown first, and when B was.
pub fn position_bias(bias: &PositionBias) -> String {
    let (w, h) = (420.0, 90.0);
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"Position bias\">"
    );
    let scale = |s: f64| 120.0 + (w - 140.0) * (s - 1.0) / 6.0;
    let _ = write!(
        svg,
        "<rect x=\"120\" y=\"40\" width=\"{:.1}\" height=\"2\" fill=\"#dfe3e8\"/>",
        w - 140.0
    );
    for (i, (label, side)) in [
        ("A shown first", &bias.not_swapped),
        ("B shown first", &bias.swapped),
    ]
    .iter()
    .enumerate()
    {
        let y = 25.0 + 30.0 * i as f64;
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{y:.1}\" font-size=\"12\">{label} (n={})</text>",
            side.n
        );
        if let Some(mean) = side.mean {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{}\"><title>mean {mean:.2}</title></circle>",
                scale(mean),
                y - 4.0,
                PALETTE[i * 4]
            );
        }
    }
    for s in 1..=7 {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{s}</text>",
            scale(s as f64),
            h - 4.0
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_in_charts() {
        let mut fields = BTreeMap::new();
        fields.insert(
            "a.<script>".to_owned(),
            BTreeMap::from([("<b>x</b>".to_owned(), 3u64)]),
        );
        let svg = stacked_fields(&fields);
        assert!(!svg.contains("<script>") && !svg.contains("<b>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"));
        assert!(!svg.contains("style="), "no inline styles");
    }
}
