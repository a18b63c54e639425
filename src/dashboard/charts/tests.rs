//! Tests of `charts`.

use super::*;

#[test]
fn text_on_a_colour_is_the_ink_that_contrasts_more() {
    assert_eq!(ink("#ffffff"), Colour::BLACK);
    assert_eq!(ink("#1f77b4"), Colour::WHITE);
    assert_eq!(ink("#bcbd22"), Colour::BLACK);
}

#[test]
fn an_option_has_one_colour_on_every_row() {
    let rows = [
        BTreeMap::from([("no".to_owned(), 1u64), ("yes".to_owned(), 2)]),
        BTreeMap::from([("maybe".to_owned(), 1u64), ("yes".to_owned(), 1)]),
    ];
    let colours = option_colours(&rows);
    let names: Vec<&str> = colours.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(names, ["no", "yes", "maybe"]);
    let distinct: std::collections::BTreeSet<&str> = colours.iter().map(|(_, c)| c.hex()).collect();
    assert_eq!(distinct.len(), 3);
    let svg = stacked_fields(
        &BTreeMap::from([("a".into(), rows[0].clone()), ("b".into(), rows[1].clone())]),
        &[],
    );
    let yes = colours[1].1;
    assert_eq!(
        svg.matches(&format!("fill=\"{yes}\"><title>yes:")).count(),
        2,
        "{svg}"
    );
    assert!(
        svg.contains(&format!("fill=\"{yes}\"/><text")),
        "in the legend: {svg}"
    );
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
    let mut fields = BTreeMap::new();
    fields.insert(
        "a.<script>".to_owned(),
        BTreeMap::from([("<b>x</b>".to_owned(), 3u64)]),
    );
    let svg = stacked_fields(&fields, &[]);
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

    let fields = BTreeMap::from([(
        HOSTILE.to_owned(),
        BTreeMap::from([(HOSTILE.to_owned(), 3u64)]),
    )]);
    // The question, the option in the legend, its tooltip and its words on the bar.
    only_escaped(&stacked_fields(&fields, &[]), 4, "stacked fields");

    let agreements = BTreeMap::from([(
        HOSTILE.to_owned(),
        Agreement {
            level: crate::metrics::agreement::Level::Nominal,
            krippendorff_alpha: Some(0.5),
            units: 2,
            pairs: 4,
            percent_agreement: Some(0.75),
        },
    )]);
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
