//! Small SVG charts, drawn on the server through the typed builder in [`svg`]: each chart
//! places shapes by number, and the builder's template writes them with every label
//! escaped. Colours and sizes are attributes (the CSP allows no inline styles).

mod svg;

use crate::metrics::PositionBias;
use crate::metrics::agreement::Agreement;
use crate::metrics::stats::{Estimate, share};
use svg::{Anchor, Circle, Colour, Rect, Shape, Svg, Text};
use verdict_core::rubric::Favours;

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
    pub colour: Colour,
    pub text: String,
}

/// Draws a legend at (`x`, `y`) within `width`: entries left to right, each as wide as
/// its words, onto a new row where the next would not fit; returns the height it took.
/// Each entry is a mark and its words, so colour is never the only cue.
fn legend(svg: &mut Svg, keys: Vec<Key>, x: f64, y: f64, width: f64) -> f64 {
    let row_h = 16.0;
    let (mut kx, mut rows) = (0.0, 1.0);
    for key in keys {
        let entry = 14.0 + text_width(&key.text, 11.0) + 16.0;
        if kx > 0.0 && kx + entry > width {
            kx = 0.0;
            rows += 1.0;
        }
        let (kx_at, ky) = (x + kx, y + row_h * (rows - 1.0));
        let mark: Shape = match key.mark {
            Mark::Square => Rect::new(kx_at, ky, 10.0, 10.0, key.colour).into(),
            Mark::Dot => Circle::new(kx_at + 5.0, ky + 5.0, 4.0, key.colour).into(),
            Mark::Tick => Rect::new(kx_at + 3.5, ky, 3.0, 10.0, key.colour).into(),
            Mark::Band => Rect::new(kx_at, ky + 2.0, 10.0, 6.0, key.colour).into(),
        };
        let words = Text::new(kx_at + 14.0, ky + 9.0, 11, key.text).fill(Colour::TEXT);
        svg.group("legend-key", vec![mark, words.into()]);
        kx += entry;
    }
    row_h * rows
}

/// One bar: its label, its count and its lean.
pub struct Bar {
    pub label: String,
    pub n: u64,
    /// The response the answer favours; `None` for a bar that is no preference.
    pub lean: Option<Favours>,
}

/// Bars of a distribution, in order: answers favouring A in blue, B in orange, ties grey.
/// A legend above says the colours; each bar has its count above it and its label under
/// it, wrapped to two lines within its width (cut short with "…" past that; its tooltip
/// has it whole), so no words overlap however many bars or long labels.
pub fn bars(title: &str, bars: &[Bar]) -> String {
    let (w, pad) = (420.0, 28.0);
    let max = bars.iter().map(|b| b.n).max().unwrap_or(0).max(1) as f64;
    let width = (w - 2.0 * pad) / bars.len().max(1) as f64;
    let mut svg = Svg::new(title);
    let colour = |lean: Option<Favours>| match lean {
        Some(Favours::A) => Colour::BLUE,
        Some(Favours::Tie) => Colour::GREY,
        Some(Favours::B) => Colour::ORANGE,
        None => Colour::LIGHT_BLUE,
    };
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
    // The plot starts under the legend and the room its counts need.
    let top = 4.0 + legend(&mut svg, keys, pad, 4.0, w - 2.0 * pad) + 16.0;
    let labels: Vec<Vec<String>> = bars
        .iter()
        .map(|b| wrapped(&b.label, width - 4.0, 11.0, 2))
        .collect();
    let label_lines = labels.iter().map(Vec::len).max().unwrap_or(1) as f64;
    let plot = 140.0;
    let base = top + plot;
    for (i, (bar, lines)) in bars.iter().zip(&labels).enumerate() {
        let height = plot * bar.n as f64 / max;
        let x = pad + width * i as f64;
        let y = base - height;
        let centre = x + width / 2.0;
        let (n, label) = (bar.n, &bar.label);
        svg.push(
            Rect::new(x + 3.0, y, width - 6.0, height, colour(bar.lean))
                .title(format!("{label}: {n}")),
        );
        svg.push(Text::new(centre, y - 4.0, 11, n.to_string()).anchor(Anchor::Middle));
        for (j, line) in lines.iter().enumerate() {
            let ly = base + 14.0 + 13.0 * j as f64;
            svg.push(Text::new(centre, ly, 11, line.as_str()).anchor(Anchor::Middle));
        }
    }
    svg.finish(w, base + 8.0 + 13.0 * label_lines + 4.0)
}

/// `text` in lines of at most `width` px at `size` px, at most `max_lines` of them, the
/// last cut short with "…" when the words do not fit.
fn wrapped(text: &str, width: f64, size: f64, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let tried = if current.is_empty() {
            word.to_owned()
        } else {
            format!("{current} {word}")
        };
        if text_width(&tried, size) <= width || current.is_empty() {
            current = tried;
        } else {
            lines.push(std::mem::replace(&mut current, word.to_owned()));
        }
    }
    lines.push(current);
    if lines.len() > max_lines {
        let rest = lines.split_off(max_lines - 1).join(" ");
        lines.push(rest);
    }
    lines.into_iter().map(|l| fitted(&l, width, size)).collect()
}

/// `line` as it is where it fits in `width`, else cut short with "…".
fn fitted(line: &str, width: f64, size: f64) -> String {
    if text_width(line, size) <= width {
        return line.to_owned();
    }
    let mut kept: Vec<char> = line.chars().collect();
    while kept.pop().is_some() {
        let cut = format!("{}…", kept.iter().collect::<String>().trim_end());
        if text_width(&cut, size) <= width {
            return cut;
        }
    }
    "…".to_owned()
}

/// One option of a question in the answers chart: its label, its count and colour.
pub struct FieldOption {
    pub label: String,
    pub n: u64,
    pub colour: Colour,
}

/// One question of the answers chart, labelled as the form labels it, its options in the
/// rubric's order.
pub struct FieldRow {
    pub label: String,
    pub options: Vec<FieldOption>,
}

/// Colours for a question's options, in order: a ramp for an ordered scale (its answers
/// outside the scale grey), else distinct colours. `scaled[i]` says whether option `i`
/// is on the ordered scale; `None` for unordered options.
pub fn field_colours(scaled: Option<&[bool]>, count: usize) -> Vec<Colour> {
    match scaled {
        Some(scaled) => {
            let on_scale = scaled.iter().filter(|s| **s).count();
            let (mut step, mut grey) = (0, 0);
            scaled
                .iter()
                .map(|on| {
                    if *on {
                        // Spread over the ramp: two options take its ends, three its
                        // ends and middle, and so on.
                        let at = if on_scale <= 1 {
                            0
                        } else {
                            step * (Colour::RAMP.len() - 1) / (on_scale - 1)
                        };
                        step += 1;
                        Colour::RAMP[at.min(Colour::RAMP.len() - 1)]
                    } else {
                        grey += 1;
                        Colour::UNSCALED[(grey - 1) % Colour::UNSCALED.len()]
                    }
                })
                .collect()
        }
        None => (0..count)
            .map(|i| Colour::OPTIONS[i % Colour::OPTIONS.len()])
            .collect(),
    }
}

/// About how wide `text` is at `size` px in the charts' sans-serif, on the wide side, so
/// that words placed by it never run into each other.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.62
}

/// One stacked bar per question: its label above it, then the bar, then its own key (a
/// mark, the option's label, its count and share for each option, wrapped to the width),
/// so that no row needs a legend shared with others and no words overlap.
pub fn stacked_fields(rows: &[FieldRow]) -> String {
    let width = 640.0;
    let (label_h, bar_h, gap) = (16.0, 16.0, 14.0);
    let mut svg = Svg::new(
        "Answers per question: the share of each option; the table below gives the numbers",
    );
    let mut y = 4.0;
    for row in rows {
        svg.push(Text::new(0.0, y + 12.0, 12, row.label.as_str()).fill(Colour::TEXT));
        y += label_h + 2.0;
        let total: u64 = row.options.iter().map(|o| o.n).sum();
        let share = |n: u64| {
            if total > 0 {
                n as f64 / total as f64
            } else {
                0.0
            }
        };
        svg.push(Rect::new(0.0, y, width, bar_h, Colour::GRID));
        let mut x = 0.0;
        for option in &row.options {
            let w = width * share(option.n);
            let percent = 100.0 * share(option.n);
            if w > 0.0 {
                svg.push(
                    Rect::new(x, y, w, bar_h, option.colour)
                        .title(format!("{}: {} ({percent:.0}%)", option.label, option.n)),
                );
            }
            x += w;
        }
        y += bar_h + 4.0;
        // The row's own key: each option's mark, label, count and share.
        let keys = row
            .options
            .iter()
            .map(|option| Key {
                mark: Mark::Square,
                colour: option.colour,
                text: format!(
                    "{} {} ({:.0}%)",
                    option.label,
                    option.n,
                    100.0 * share(option.n)
                ),
            })
            .collect();
        y += legend(&mut svg, keys, 0.0, y, width) + gap;
    }
    svg.finish(width, y)
}

/// Percent agreement per question with its 95% (Wilson) interval, and alpha as a mark.
pub fn agreement(agreement: &[(String, Agreement)]) -> String {
    let (bar_w, row_h) = (420.0, 24.0);
    // The label column is as wide as the longest label, within bounds; a longer label
    // is cut short with "…".
    let longest = agreement
        .iter()
        .map(|(label, _)| text_width(label, 12.0))
        .fold(0.0, f64::max);
    let label_w = (longest + 10.0).clamp(140.0, 300.0);
    let width = label_w + bar_w + 10.0;
    let keys = vec![
        Key {
            mark: Mark::Dot,
            colour: Colour::BLUE,
            text: "percent agreement".into(),
        },
        Key {
            mark: Mark::Band,
            colour: Colour::PALE_BLUE,
            text: "its 95% interval".into(),
        },
        Key {
            mark: Mark::Tick,
            colour: Colour::RED,
            text: "Krippendorff's alpha".into(),
        },
    ];
    let mut svg = Svg::new("Agreement per question; the table below gives the numbers");
    let top = legend(&mut svg, keys, label_w, 4.0, bar_w) + 6.0;
    let h = top + row_h * agreement.len() as f64 + 24.0;
    for (i, (label, a)) in agreement.iter().enumerate() {
        let y = top + i as f64 * row_h + 6.0;
        svg.push(Text::new(
            0.0,
            y + 12.0,
            12,
            fitted(label, label_w - 6.0, 12.0),
        ));
        svg.push(Rect::new(label_w, y + 8.0, bar_w, 2.0, Colour::TRACK));
        if let Some(p) = a.percent_agreement {
            if let Some(ci) = share((p * a.pairs as f64).round() as u64, a.pairs) {
                svg.push(
                    Rect::new(
                        label_w + bar_w * ci.low,
                        y + 6.0,
                        bar_w * (ci.high - ci.low),
                        6.0,
                        Colour::PALE_BLUE,
                    )
                    .title(format!(
                        "95% interval {:.0}%-{:.0}%",
                        100.0 * ci.low,
                        100.0 * ci.high
                    )),
                );
            }
            svg.push(
                Circle::new(label_w + bar_w * p, y + 9.0, 4.0, Colour::BLUE).title(format!(
                    "agreement {:.0}% of {} pairs",
                    100.0 * p,
                    a.pairs
                )),
            );
        }
        if let Some(alpha) = a.krippendorff_alpha {
            let x = label_w + bar_w * alpha.clamp(0.0, 1.0);
            svg.push(
                Rect::new(x - 1.5, y + 2.0, 3.0, 14.0, Colour::RED)
                    .title(format!("alpha {alpha:.3}")),
            );
        }
    }
    svg.push(Text::new(label_w, h - 4.0, 10, "0"));
    svg.push(Text::new(label_w + bar_w, h - 4.0, 10, "1").anchor(Anchor::End));
    svg.finish(width, h)
}

/// The lean to the response shown first: on a scale from `min` to `max`, the mean
/// canonical score when A was shown first and when B was; otherwise the share of
/// decisive answers that favoured the response shown first, against the half of no lean.
pub fn position_bias(bias: &PositionBias, min: i64, max: i64) -> String {
    let (w, h) = (420.0, 90.0);
    let mut svg = Svg::new("Position bias");
    svg.push(Rect::new(120.0, 40.0, w - 140.0, 2.0, Colour::TRACK));
    let keys = match bias {
        PositionBias::Scale {
            not_swapped,
            swapped,
            ..
        } => {
            let span = (max - min).max(1) as f64;
            let scale = |s: f64| 120.0 + (w - 140.0) * (s - min as f64) / span;
            let sides = [
                ("A shown first", not_swapped, Colour::BLUE),
                ("B shown first", swapped, Colour::ORANGE),
            ];
            for (i, (label, side, colour)) in sides.into_iter().enumerate() {
                let y = 25.0 + 30.0 * i as f64;
                svg.push(Text::new(0.0, y, 12, format!("{label} (n={})", side.n)));
                if let Some(mean) = side.mean {
                    svg.push(
                        Circle::new(scale(mean), y - 4.0, 5.0, colour)
                            .title(format!("mean {mean:.2}")),
                    );
                }
            }
            for s in min..=max {
                svg.push(
                    Text::new(scale(s as f64), h - 4.0, 10, s.to_string()).anchor(Anchor::Middle),
                );
            }
            vec![
                Key {
                    mark: Mark::Dot,
                    colour: Colour::BLUE,
                    text: "mean, A shown first".into(),
                },
                Key {
                    mark: Mark::Dot,
                    colour: Colour::ORANGE,
                    text: "mean, B shown first".into(),
                },
            ]
        }
        PositionBias::Shares {
            decisive,
            shown_first,
        } => {
            let at = |share: f64| 120.0 + (w - 140.0) * share;
            svg.push(Text::new(
                0.0,
                45.0,
                12,
                format!("shown first wins (n={decisive})"),
            ));
            svg.push(Rect::new(at(0.5), 30.0, 1.0, 22.0, Colour::GREY).title("no lean"));
            if let Some(e) = shown_first {
                svg.push(
                    Rect::new(
                        at(e.low),
                        38.0,
                        at(e.high) - at(e.low),
                        6.0,
                        Colour::PALE_BLUE,
                    )
                    .title(format!(
                        "95% interval {:.0}%-{:.0}%",
                        100.0 * e.low,
                        100.0 * e.high
                    )),
                );
                svg.push(
                    Circle::new(at(e.value), 41.0, 5.0, Colour::BLUE)
                        .title(format!("{:.0}%", 100.0 * e.value)),
                );
            }
            for (share, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
                svg.push(Text::new(at(share), h - 4.0, 10, label).anchor(Anchor::Middle));
            }
            vec![
                Key {
                    mark: Mark::Dot,
                    colour: Colour::BLUE,
                    text: "share to the first shown".into(),
                },
                Key {
                    mark: Mark::Band,
                    colour: Colour::PALE_BLUE,
                    text: "its 95% interval".into(),
                },
                Key {
                    mark: Mark::Tick,
                    colour: Colour::GREY,
                    text: "no lean (50%)".into(),
                },
            ]
        }
    };
    let keys_h = legend(&mut svg, keys, 0.0, h + 6.0, w);
    svg.finish(w, h + 6.0 + keys_h + 2.0)
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
    let (judge_colour, human_colour) = (Colour::BLUE, Colour::GREY);
    let keys = vec![
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
    let mut svg = Svg::new(format!(
        "Judge {judge}: agreement with the raters' consensus beside the raters' agreement \
         with each other, per question; the table above gives the numbers"
    ));
    let top = legend(&mut svg, keys, label_w, 4.0, bar_w) + 8.0;
    let h = top + row_h * rows.len() as f64 + 20.0;
    for (i, row) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let label = &row.label;
        svg.push(Text::new(0.0, y + 14.0, 12, label.as_str()));
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
                    let percent = 100.0 * share;
                    svg.push(
                        Rect::new(label_w, by, w, bar_h, colour)
                            .title(format!("{label}, {who}: {percent:.0}% of {n} pairs")),
                    );
                    svg.push(Text::new(
                        label_w + w + 4.0,
                        by + bar_h - 1.0,
                        10,
                        format!("{percent:.0}%"),
                    ));
                }
                None => svg.push(
                    Text::new(
                        label_w + 4.0,
                        by + bar_h - 1.0,
                        10,
                        format!("{who}: no pairs"),
                    )
                    .fill(Colour::MUTED),
                ),
            }
        }
    }
    let axis = h - 6.0;
    svg.push(Text::new(label_w, axis, 10, "0%"));
    svg.push(Text::new(label_w + bar_w, axis, 10, "100%").anchor(Anchor::End));
    svg.finish(width, h)
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
    let (dot, pooled, band, line) = (Colour::BLUE, Colour::RED, Colour::PALE_BLUE, Colour::MUTED);
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
    let mut svg = Svg::new(format!("{title}; the table above gives the numbers"));
    let top = legend(&mut svg, keys, 0.0, 4.0, width) + 8.0;
    let at = |v: f64| label_w + bar_w * (v / scale.max).clamp(0.0, 1.0);
    let bottom = top + row_h * rows.len() as f64;
    let show = scale.format;
    for &tick in &scale.ticks {
        svg.push(Rect::new(at(tick), top, 1.0, bottom - top, Colour::GRID));
        svg.push(Text::new(at(tick), bottom + 14.0, 10, show(tick)).anchor(Anchor::Middle));
    }
    if let Some((value, meaning)) = scale.reference {
        svg.push(Rect::new(at(value) - 1.0, top, 2.0, bottom - top, line).title(meaning));
    }
    for (i, row) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h + row_h / 2.0;
        let (label, n) = (&row.label, row.n);
        svg.push(Text::new(0.0, y + 4.0, 12, label.as_str()));
        let Some(e) = row.estimate else {
            svg.push(
                Text::new(label_w + 4.0, y + 4.0, 10, format!("no estimate (n={n})"))
                    .fill(Colour::MUTED),
            );
            continue;
        };
        if e.high > e.low {
            svg.push(
                Rect::new(
                    at(e.low),
                    y - 3.0,
                    (at(e.high) - at(e.low)).max(1.0),
                    6.0,
                    band,
                )
                .title(format!(
                    "{label}: 95% interval {}–{}",
                    show(e.low),
                    show(e.high)
                )),
            );
        }
        svg.push(
            Circle::new(at(e.value), y, 5.0, if row.pooled { pooled } else { dot })
                .title(format!("{label}: {} (n={n})", show(e.value))),
        );
    }
    svg.finish(width, top + row_h * rows.len() as f64 + 22.0)
}

#[cfg(test)]
mod tests;
