//! Small SVG charts, drawn on the server. Colours and sizes are attributes (the CSP
//! allows no inline styles); every label is escaped.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::metrics::PositionBias;
use crate::metrics::agreement::Agreement;
use crate::metrics::stats::Estimate;
use verdict_core::rubric::Favours;

const PALETTE: [&str; 8] = [
    "#2357c6", "#5b8def", "#9bb4e8", "#f3d27a", "#e8a15a", "#c9563c", "#8e44ad", "#7f8c8d",
];

/// One colour per option in the answers chart, assigned in order of first appearance so
/// that an option keeps its colour on every row; the legend names each.
const OPTION_COLOURS: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#ad494a",
];

/// The text colour readable on `fill` (a `#rrggbb` colour): black or white, whichever
/// contrasts more (WCAG relative luminance).
fn ink(fill: &str) -> &'static str {
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&fill[i..i + 2], 16).unwrap_or(0)) / 255.0;
        if c <= 0.03928 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
    // Contrast with black is (l + 0.05) / 0.05, with white 1.05 / (l + 0.05).
    if (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) {
        "#000"
    } else {
        "#fff"
    }
}

/// How a legend entry draws its mark.
#[derive(Clone, Copy)]
pub enum Mark {
    Square,
    Dot,
    Tick,
    Band,
}

/// One legend entry: its mark, colour and words.
pub struct Key {
    pub mark: Mark,
    pub colour: &'static str,
    pub text: String,
}

/// Draws a legend at (`x`, `y`) within `width`, as many entries a row as fit; returns
/// the height it took. Each entry is a mark and its words, so colour is never the only
/// cue.
fn legend(svg: &mut String, keys: &[Key], x: f64, y: f64, width: f64) -> f64 {
    let (cell_w, row_h) = (150.0, 16.0);
    let per_row = ((width / cell_w).floor() as usize).max(1);
    for (i, key) in keys.iter().enumerate() {
        let (col, row) = (i % per_row, i / per_row);
        let (kx, ky) = (x + cell_w * col as f64, y + row_h * row as f64);
        let colour = key.colour;
        let mark = match key.mark {
            Mark::Square => format!(
                "<rect x=\"{kx:.1}\" y=\"{ky:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>"
            ),
            Mark::Dot => format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{colour}\"/>",
                kx + 5.0,
                ky + 5.0
            ),
            Mark::Tick => format!(
                "<rect x=\"{:.1}\" y=\"{ky:.1}\" width=\"3\" height=\"10\" fill=\"{colour}\"/>",
                kx + 3.5
            ),
            Mark::Band => format!(
                "<rect x=\"{kx:.1}\" y=\"{:.1}\" width=\"10\" height=\"6\" fill=\"{colour}\"/>",
                ky + 2.0
            ),
        };
        let _ = write!(
            svg,
            "<g class=\"legend-key\">{mark}<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#1d2733\">{}</text></g>",
            kx + 14.0,
            ky + 9.0,
            escape(&key.text)
        );
    }
    row_h * keys.len().div_ceil(per_row) as f64
}

/// The colour of each option of `rows`, in order of first appearance.
pub fn option_colours<'a>(
    rows: impl IntoIterator<Item = &'a BTreeMap<String, u64>>,
) -> Vec<(String, &'static str)> {
    let mut seen: Vec<(String, &'static str)> = Vec::new();
    for options in rows {
        for option in options.keys() {
            if !seen.iter().any(|(o, _)| o == option) {
                let colour = OPTION_COLOURS[seen.len() % OPTION_COLOURS.len()];
                seen.push((option.clone(), colour));
            }
        }
    }
    seen
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One bar: its label, its count and its lean.
pub struct Bar {
    pub label: String,
    pub n: u64,
    /// The response the answer favours; `None` for a bar that is no preference.
    pub lean: Option<Favours>,
}

/// Bars of a distribution, in order: answers favouring A in blue, B in orange, ties grey.
/// Each bar is labelled under it and its count above it, and a legend says the colours.
pub fn bars(title: &str, bars: &[Bar]) -> String {
    let (w, h, pad) = (420.0, 210.0, 28.0);
    let max = bars.iter().map(|b| b.n).max().unwrap_or(0).max(1) as f64;
    let width = (w - 2.0 * pad) / bars.len().max(1) as f64;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\">",
        escape(title)
    );
    let colour = |lean: Option<Favours>| match lean {
        Some(Favours::A) => PALETTE[0],
        Some(Favours::Tie) => PALETTE[7],
        Some(Favours::B) => PALETTE[4],
        None => PALETTE[1],
    };
    for (i, bar) in bars.iter().enumerate() {
        let height = (h - 2.0 * pad - 12.0) * bar.n as f64 / max;
        let x = pad + width * i as f64;
        let y = h - pad - height;
        let (n, label) = (bar.n, escape(&bar.label));
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"{}\"><title>{label}: {n}</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{n}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{label}</text>",
            x + 3.0,
            width - 6.0,
            colour(bar.lean),
            x + width / 2.0,
            y - 4.0,
            x + width / 2.0,
            h - pad + 16.0
        );
    }
    let mut keys: Vec<Key> = [
        (Favours::A, "A better"),
        (Favours::Tie, "about the same"),
        (Favours::B, "B better"),
    ]
    .into_iter()
    .filter(|(f, _)| bars.iter().any(|b| b.lean == Some(*f)))
    .map(|(lean, text)| Key {
        mark: Mark::Square,
        colour: colour(Some(lean)),
        text: text.into(),
    })
    .collect();
    if bars.iter().any(|b| b.lean.is_none()) {
        keys.push(Key {
            mark: Mark::Square,
            colour: colour(None),
            text: "ratings per answer".into(),
        });
    }
    legend(&mut svg, &keys, pad, 4.0, w - 2.0 * pad);
    svg.push_str("</svg>");
    svg
}

/// One stacked bar per question (but those in `apart`, charted on their own): the share
/// of each option, each option in its own colour on every row, named in the legend.
pub fn stacked_fields(fields: &BTreeMap<String, BTreeMap<String, u64>>, apart: &[&str]) -> String {
    let (label_w, bar_w, row_h) = (190.0, 420.0, 26.0);
    let width = label_w + bar_w + 10.0;
    let rows: Vec<_> = fields
        .iter()
        .filter(|(k, _)| !apart.contains(&k.as_str()))
        .collect();
    let colours = option_colours(rows.iter().map(|(_, options)| *options));
    let keys: Vec<Key> = colours
        .iter()
        .map(|(option, colour)| Key {
            mark: Mark::Square,
            colour,
            text: option.clone(),
        })
        .collect();
    let mut body = String::new();
    let top = legend(&mut body, &keys, 0.0, 4.0, width) + 10.0;
    let h = top + row_h * rows.len() as f64 + 10.0;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {width} {h}\" role=\"img\" aria-label=\"Answers per question: the share of each option; the table below gives the numbers\">"
    );
    svg.push_str(&body);
    for (i, (path, options)) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h + 5.0;
        let total: u64 = options.values().sum();
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            y + 15.0,
            escape(path)
        );
        let mut x = label_w;
        for (option, n) in options.iter() {
            let share = if total > 0 {
                *n as f64 / total as f64
            } else {
                0.0
            };
            let width = bar_w * share;
            let fill = colours
                .iter()
                .find(|(o, _)| o == option)
                .map_or(OPTION_COLOURS[0], |(_, c)| c);
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"{fill}\"><title>{}: {n} ({:.0}%)</title></rect>",
                row_h - 6.0,
                escape(option),
                100.0 * share
            );
            if width > 60.0 {
                let _ = write!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{}\">{} {:.0}%</text>",
                    x + 4.0,
                    y + 14.0,
                    ink(fill),
                    escape(option),
                    100.0 * share
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
    let width = label_w + bar_w + 10.0;
    let keys = [
        Key {
            mark: Mark::Dot,
            colour: "#2357c6",
            text: "percent agreement".into(),
        },
        Key {
            mark: Mark::Band,
            colour: "#9bb4e8",
            text: "its 95% interval".into(),
        },
        Key {
            mark: Mark::Tick,
            colour: "#c9563c",
            text: "Krippendorff's alpha".into(),
        },
    ];
    let mut body = String::new();
    let top = legend(&mut body, &keys, label_w, 4.0, bar_w) + 6.0;
    let h = top + row_h * agreement.len() as f64 + 24.0;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {width} {h}\" role=\"img\" aria-label=\"Agreement per question; the table below gives the numbers\">"
    );
    svg.push_str(&body);
    for (i, (path, a)) in agreement.iter().enumerate() {
        let y = top + i as f64 * row_h + 6.0;
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

/// The lean to the response shown first: on a scale from `min` to `max`, the mean
/// canonical score when A was shown first and when B was; otherwise the share of
/// decisive answers that favoured the response shown first, against the half of no lean.
pub fn position_bias(bias: &PositionBias, min: i64, max: i64) -> String {
    let (w, h) = (420.0, 90.0);
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {w} {}\" role=\"img\" aria-label=\"Position bias\">",
        h + 22.0
    );
    let _ = write!(
        svg,
        "<rect x=\"120\" y=\"40\" width=\"{:.1}\" height=\"2\" fill=\"#dfe3e8\"/>",
        w - 140.0
    );
    match bias {
        PositionBias::Scale {
            not_swapped,
            swapped,
            ..
        } => {
            let span = (max - min).max(1) as f64;
            let scale = |s: f64| 120.0 + (w - 140.0) * (s - min as f64) / span;
            for (i, (label, side)) in [("A shown first", not_swapped), ("B shown first", swapped)]
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
            for s in min..=max {
                let _ = write!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{s}</text>",
                    scale(s as f64),
                    h - 4.0
                );
            }
        }
        PositionBias::Shares {
            decisive,
            shown_first,
        } => {
            let at = |share: f64| 120.0 + (w - 140.0) * share;
            let _ = write!(
                svg,
                "<text x=\"0\" y=\"45\" font-size=\"12\">shown first wins (n={decisive})</text>\
                 <rect x=\"{:.1}\" y=\"30\" width=\"1\" height=\"22\" fill=\"#7f8c8d\"><title>no lean</title></rect>",
                at(0.5)
            );
            if let Some(e) = shown_first {
                let _ = write!(
                    svg,
                    "<rect x=\"{:.1}\" y=\"38\" width=\"{:.1}\" height=\"6\" fill=\"#9bb4e8\"><title>95% interval {:.0}%-{:.0}%</title></rect>\
                     <circle cx=\"{:.1}\" cy=\"41\" r=\"5\" fill=\"{}\"><title>{:.0}%</title></circle>",
                    at(e.low),
                    at(e.high) - at(e.low),
                    100.0 * e.low,
                    100.0 * e.high,
                    at(e.value),
                    PALETTE[0],
                    100.0 * e.value
                );
            }
            for (share, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
                let _ = write!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{label}</text>",
                    at(share),
                    h - 4.0
                );
            }
        }
    }
    let keys = match bias {
        PositionBias::Scale { .. } => vec![
            Key {
                mark: Mark::Dot,
                colour: PALETTE[0],
                text: "mean, A shown first".into(),
            },
            Key {
                mark: Mark::Dot,
                colour: PALETTE[4],
                text: "mean, B shown first".into(),
            },
        ],
        PositionBias::Shares { .. } => vec![
            Key {
                mark: Mark::Dot,
                colour: PALETTE[0],
                text: "share to the first shown".into(),
            },
            Key {
                mark: Mark::Band,
                colour: "#9bb4e8",
                text: "its 95% interval".into(),
            },
            Key {
                mark: Mark::Tick,
                colour: "#7f8c8d",
                text: "no lean (50%)".into(),
            },
        ],
    };
    legend(&mut svg, &keys, 0.0, h + 6.0, w);
    svg.push_str("</svg>");
    svg
}

/// One question of a judge beside the raters: the judge's agreement with the raters'
/// consensus and the raters' agreement with each other, each over `n` pairs.
pub struct JudgeRow {
    pub label: String,
    pub judge: Option<f64>,
    pub judge_n: usize,
    pub human: Option<f64>,
    pub human_n: usize,
}

/// Two horizontal bars per question: how often the judge gives the raters' consensus,
/// and how often two raters give the same answer (the ceiling a judge can be expected
/// to reach). A question without pairs has no bar and says so.
pub fn judge_agreement(judge: &str, rows: &[JudgeRow]) -> String {
    let (label_w, bar_w, bar_h, row_h) = (190.0, 380.0, 9.0, 30.0);
    let width = label_w + bar_w + 50.0;
    let (judge_colour, human_colour) = (PALETTE[0], PALETTE[7]);
    let keys = [
        Key {
            mark: Mark::Square,
            colour: judge_colour,
            text: "judge vs consensus".into(),
        },
        Key {
            mark: Mark::Square,
            colour: human_colour,
            text: "raters (ceiling)".into(),
        },
    ];
    let mut body = String::new();
    let top = legend(&mut body, &keys, label_w, 4.0, bar_w) + 8.0;
    let h = top + row_h * rows.len() as f64 + 20.0;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {width} {h}\" role=\"img\" aria-label=\"{}\">",
        escape(&format!(
            "Judge {judge}: agreement with the raters' consensus beside the raters' agreement \
             with each other, per question; the table above gives the numbers"
        ))
    );
    svg.push_str(&body);
    for (i, row) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let label = escape(&row.label);
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{label}</text>",
            y + 14.0
        );
        for (j, (who, share, n, colour)) in [
            ("judge", row.judge, row.judge_n, judge_colour),
            ("raters", row.human, row.human_n, human_colour),
        ]
        .into_iter()
        .enumerate()
        {
            let by = y + 2.0 + j as f64 * (bar_h + 2.0);
            match share {
                Some(share) => {
                    let w = bar_w * share.clamp(0.0, 1.0);
                    let _ = write!(
                        svg,
                        "<rect x=\"{label_w}\" y=\"{by:.1}\" width=\"{w:.1}\" height=\"{bar_h}\" fill=\"{colour}\"><title>{label}, {who}: {:.0}% of {n} pairs</title></rect>\
                         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{:.0}%</text>",
                        100.0 * share,
                        label_w + w + 4.0,
                        by + bar_h - 1.0,
                        100.0 * share
                    );
                }
                None => {
                    let _ = write!(
                        svg,
                        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#5d6675\">{who}: no pairs</text>",
                        label_w + 4.0,
                        by + bar_h - 1.0
                    );
                }
            }
        }
    }
    let axis = h - 6.0;
    let _ = write!(
        svg,
        "<text x=\"{label_w}\" y=\"{axis:.1}\" font-size=\"10\">0%</text><text x=\"{:.1}\" y=\"{axis:.1}\" font-size=\"10\" text-anchor=\"end\">100%</text>",
        label_w + bar_w
    );
    svg.push_str("</svg>");
    svg
}

/// One row of a dot-and-interval chart: whose figure it is, the figure with its 95%
/// interval (none when there is no estimate: too few answers, or no fit), and how many
/// answers it rests on.
pub struct DotRow {
    pub label: String,
    pub estimate: Option<Estimate>,
    pub n: u64,
    /// The batch's own row (all raters pooled), drawn in its own colour.
    pub pooled: bool,
}

/// The axis of a dot-and-interval chart: from 0 to `max`, with `ticks`, a `reference`
/// line (its value and what it means) and how a value reads (`75%`, `31 min`).
pub struct DotScale {
    pub max: f64,
    pub ticks: Vec<f64>,
    pub reference: Option<(f64, &'static str)>,
    pub format: fn(f64) -> String,
}

impl DotScale {
    /// Shares, from 0% to 100%, with a line at `reference` when given.
    pub fn shares(reference: Option<(f64, &'static str)>) -> Self {
        Self {
            max: 1.0,
            ticks: vec![0.0, 0.25, 0.5, 0.75, 1.0],
            reference,
            format: |x| format!("{:.0}%", 100.0 * x),
        }
    }

    /// Seconds, shown in minutes, up to a little past the largest of `values` and never
    /// less than 45 minutes, with the guidance's line at `guidance_s`.
    pub fn minutes(values: impl IntoIterator<Item = f64>, guidance_s: f64) -> Self {
        let largest = values.into_iter().fold(guidance_s * 1.5, f64::max);
        let step = if largest > 7200.0 { 1800.0 } else { 600.0 };
        let max = (largest / step).ceil() * step;
        Self {
            max,
            ticks: (0..=(max / step) as usize)
                .map(|i| i as f64 * step)
                .collect(),
            reference: Some((guidance_s, "30-minute guidance")),
            format: |s| format!("{:.0} min", s / 60.0),
        }
    }
}

/// One dot per row with its 95% interval as a band, on a common axis with a reference
/// line; a row without a figure says so, with its n. `what` names the dot in the legend.
pub fn dot_intervals(title: &str, what: &str, rows: &[DotRow], scale: &DotScale) -> String {
    let (label_w, bar_w, row_h) = (170.0, 400.0, 24.0);
    let width = label_w + bar_w + 30.0;
    let (dot, pooled, band, line) = (PALETTE[0], PALETTE[5], "#9bb4e8", "#5d6675");
    let mut keys = vec![
        Key {
            mark: Mark::Dot,
            colour: dot,
            text: what.to_owned(),
        },
        Key {
            mark: Mark::Band,
            colour: band,
            text: "its 95% interval".into(),
        },
    ];
    if rows.iter().any(|r| r.pooled) {
        keys.push(Key {
            mark: Mark::Dot,
            colour: pooled,
            text: "all raters".into(),
        });
    }
    if let Some((_, meaning)) = scale.reference {
        keys.push(Key {
            mark: Mark::Tick,
            colour: line,
            text: meaning.into(),
        });
    }
    let mut body = String::new();
    let top = legend(&mut body, &keys, 0.0, 4.0, width) + 8.0;
    let h = top + row_h * rows.len() as f64 + 22.0;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {width} {h:.1}\" role=\"img\" aria-label=\"{}\">",
        escape(&format!("{title}; the table above gives the numbers"))
    );
    svg.push_str(&body);
    let at = |v: f64| label_w + bar_w * (v / scale.max).clamp(0.0, 1.0);
    let bottom = top + row_h * rows.len() as f64;
    for &tick in &scale.ticks {
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"1\" height=\"{:.1}\" fill=\"#eef0f3\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            at(tick),
            bottom - top,
            at(tick),
            bottom + 14.0,
            escape(&(scale.format)(tick))
        );
    }
    if let Some((value, meaning)) = scale.reference {
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"2\" height=\"{:.1}\" fill=\"{line}\"><title>{}</title></rect>",
            at(value) - 1.0,
            bottom - top,
            escape(meaning)
        );
    }
    for (i, row) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h + row_h / 2.0;
        let label = escape(&row.label);
        let n = row.n;
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{label}</text>",
            y + 4.0
        );
        let Some(e) = row.estimate else {
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#5d6675\">no estimate (n={n})</text>",
                label_w + 4.0,
                y + 4.0
            );
            continue;
        };
        let show = scale.format;
        if e.high > e.low {
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"6\" fill=\"{band}\"><title>{label}: 95% interval {}–{}</title></rect>",
                at(e.low),
                y - 3.0,
                (at(e.high) - at(e.low)).max(1.0),
                escape(&show(e.low)),
                escape(&show(e.high))
            );
        }
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{}\"><title>{label}: {} (n={n})</title></circle>",
            at(e.value),
            if row.pooled { pooled } else { dot },
            escape(&show(e.value))
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests;
