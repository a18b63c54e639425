//! Tests of `charts`.

use super::*;

#[test]
fn long_bar_labels_wrap_to_two_lines_and_are_cut_past_them() {
    assert_eq!(wrapped("B better", 60.0, 11.0, 2), ["B better"]);
    let cut = wrapped("A is much better", 60.0, 11.0, 2);
    assert_eq!(cut.len(), 2, "{cut:?}");
    assert_eq!(cut[0], "A is");
    assert!(
        cut[1].starts_with("much") && cut[1].ends_with('…'),
        "{cut:?}"
    );
    for line in wrapped("Response A is a great deal better than B", 50.0, 11.0, 2) {
        assert!(text_width(&line, 11.0) <= 50.0, "{line}");
    }
    assert_eq!(wrapped("Tie", 60.0, 11.0, 2), ["Tie"]);
}

/// A question of the answers chart with these options and counts, coloured as `scaled`.
fn row(label: &str, options: &[(&str, u64)], scaled: Option<&[bool]>) -> FieldRow {
    let colours = field_colours(scaled, options.len());
    FieldRow {
        label: label.into(),
        options: options
            .iter()
            .zip(colours)
            .map(|((label, n), colour)| FieldOption {
                label: (*label).into(),
                n: *n,
                colour,
            })
            .collect(),
    }
}

#[test]
fn ordered_options_take_a_ramp_from_dark_to_light_and_the_rest_grey() {
    let scaled = [true, true, true, false];
    let colours = field_colours(Some(&scaled), 4);
    assert_eq!(
        colours,
        [
            Colour::RAMP[0],
            Colour::RAMP[2],
            Colour::RAMP[5],
            Colour::UNSCALED[0]
        ]
    );
    assert_eq!(
        field_colours(Some(&[true, true]), 2),
        [Colour::RAMP[0], Colour::RAMP[5]]
    );
    // Unordered options: distinct colours.
    let nominal = field_colours(None, 3);
    let distinct: std::collections::BTreeSet<&str> = nominal.iter().map(|c| c.hex()).collect();
    assert_eq!(distinct.len(), 3);
}

#[test]
fn each_question_has_its_own_key_with_labels_counts_and_shares() {
    let rows = [
        row(
            "Correctness (A)",
            &[("No issues", 3), ("Minor issues", 1), ("Major issues", 0)],
            Some(&[true, true, true]),
        ),
        row("Language", &[("python", 2), ("rust", 2)], None),
    ];
    let svg = stacked_fields(&rows);
    assert!(svg.contains(">Correctness (A)</text>"), "{svg}");
    assert!(svg.contains(">No issues 3 (75%)</text>"), "{svg}");
    assert!(
        svg.contains(">Major issues 0 (0%)</text>"),
        "an option nobody chose is in the key"
    );
    assert!(svg.contains(">rust 2 (50%)</text>"), "{svg}");
    // The first option's segment in its ramp colour, with its tooltip.
    assert!(
        svg.contains(&format!(
            "fill=\"{}\"><title>No issues: 3 (75%)",
            Colour::RAMP[0]
        )),
        "{svg}"
    );
    assert!(!svg.contains("style="), "no inline styles");
}

#[test]
fn a_long_key_wraps_onto_more_lines_and_the_chart_grows_with_it() {
    let short = stacked_fields(&[row("Q", &[("a", 1), ("b", 1)], None)]);
    let many: Vec<(String, u64)> = (0..12)
        .map(|i| (format!("an option with a long label {i}"), 1))
        .collect();
    let options: Vec<(&str, u64)> = many.iter().map(|(l, n)| (l.as_str(), *n)).collect();
    let long = stacked_fields(&[row("Q", &options, None)]);
    let height = |svg: &str| -> f64 {
        let at = svg.find("viewBox=\"").unwrap() + 9;
        svg[at..].split(['"', ' ']).nth(3).unwrap().parse().unwrap()
    };
    assert!(height(&long) > height(&short) + 4.0 * 16.0, "{long}");
}

#[test]
fn a_judge_is_drawn_beside_the_raters_with_escaped_labels() {
    let rows = [
        JudgeRow {
            label: "<b>Helpfulness</b>".into(),
            judge: Some(0.75),
            judge_n: 4,
            human: Some(0.5),
            human_n: 8,
        },
        JudgeRow {
            label: "Clarity".into(),
            judge: None,
            judge_n: 0,
            human: Some(1.0),
            human_n: 2,
        },
    ];
    let svg = judge_agreement("j<script>", &rows);
    assert!(!svg.contains("<b>") && !svg.contains("<script>"), "{svg}");
    assert!(svg.contains("&#60;b&#62;Helpfulness&#60;/b&#62;, judge: 75% of 4 pairs"));
    assert!(svg.contains("raters: 50% of 8 pairs"));
    assert!(
        svg.contains("judge: no pairs"),
        "a question without pairs says so"
    );
    assert!(svg.contains("raters (ceiling)"), "a legend in words");
    assert!(!svg.contains("style="), "no inline styles");
}

#[test]
fn labels_are_escaped_in_charts() {
    let svg = stacked_fields(&[row("a.<script>", &[("<b>x</b>", 3)], None)]);
    assert!(!svg.contains("<script>") && !svg.contains("<b>"), "{svg}");
    assert!(svg.contains("&#60;script&#62;"));
    assert!(!svg.contains("style="), "no inline styles");
}
#[test]
fn dots_sit_on_their_share_with_a_band_and_rows_without_a_figure_say_so() {
    let rows = [
        DotRow {
            label: "All raters".into(),
            estimate: Some(Estimate {
                value: 0.5,
                low: 0.25,
                high: 0.75,
            }),
            n: 12,
            pooled: true,
        },
        DotRow {
            label: "<i>ana</i>".into(),
            estimate: None,
            n: 3,
            pooled: false,
        },
    ];
    let svg = dot_intervals(
        "Lean",
        "share",
        &rows,
        &DotScale::shares(Some((0.5, "no lean"))),
    );
    // The axis runs from x = 170 over 400: 50% at 370, the band from 270 to 470.
    assert!(svg.contains("<circle cx=\"370.0\""), "{svg}");
    assert!(svg.contains("<rect x=\"270.0\""), "{svg}");
    assert!(svg.contains("width=\"200.0\" height=\"6.0\""), "{svg}");
    assert!(svg.contains("no estimate (n=3)"));
    assert!(svg.contains("&#60;i&#62;ana&#60;/i&#62;") && !svg.contains("<i>"));
    assert!(svg.contains("no lean") && svg.contains("all raters"));
    assert!(!svg.contains("style="), "no inline styles");
    let minutes = DotScale::minutes([600.0, 3000.0], 1800.0);
    assert_eq!((minutes.max, minutes.ticks.len()), (3000.0, 6));
    assert_eq!((minutes.format)(1800.0), "30 min");
}

/// A label that would close the `<text>` it sits in, open a script, end an attribute
/// and start an entity, were it not escaped.
const HOSTILE: &str = "</text><script>alert(1)</script>\" & x";
/// The same label as askama's HTML escaping writes it.
const ESCAPED: &str = "&#60;/text&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#34; &#38; x";

/// `svg` holds the hostile label only escaped, in `places` places.
fn only_escaped(svg: &str, places: usize, chart: &str) {
    assert!(
        !svg.contains("<script") && !svg.contains(HOSTILE),
        "{chart}: {svg}"
    );
    assert!(
        !svg.contains("\" &"),
        "{chart}: no attribute ends early: {svg}"
    );
    assert_eq!(svg.matches(ESCAPED).count(), places, "{chart}: {svg}");
}

#[test]
fn a_hostile_label_is_escaped_in_every_chart_that_draws_labels() {
    let bar = Bar {
        label: HOSTILE.into(),
        n: 2,
        lean: Some(Favours::A),
    };
    // The name, the bar's tooltip and its label under it.
    only_escaped(&bars(HOSTILE, &[bar]), 3, "bars");

    // The question, the option in its key and its tooltip.
    only_escaped(
        &stacked_fields(&[row(HOSTILE, &[(HOSTILE, 3)], None)]),
        3,
        "stacked fields",
    );

    let agreements = [(
        HOSTILE.to_owned(),
        Agreement {
            level: crate::metrics::agreement::Level::Nominal,
            krippendorff_alpha: Some(0.5),
            units: 2,
            pairs: 4,
            percent_agreement: Some(0.75),
        },
    )];
    // The question.
    only_escaped(&agreement(&agreements), 1, "agreement");

    let row = JudgeRow {
        label: HOSTILE.into(),
        judge: Some(0.5),
        judge_n: 2,
        human: Some(1.0),
        human_n: 2,
    };
    // The name (with the judge's), the question and the tooltip of each bar.
    only_escaped(&judge_agreement(HOSTILE, &[row]), 4, "judge");

    let row = DotRow {
        label: HOSTILE.into(),
        estimate: Some(Estimate {
            value: 0.5,
            low: 0.25,
            high: 0.75,
        }),
        n: 4,
        pooled: false,
    };
    // The name, the dot in the legend, the row, and the band's and the dot's tooltips.
    let svg = dot_intervals(HOSTILE, HOSTILE, &[row], &DotScale::shares(None));
    only_escaped(&svg, 5, "dots");
}
