//! Tests of `diff`.

use super::*;

fn block(lang: &str, source: &str) -> CodeBlock {
    CodeBlock {
        lang: lang.into(),
        source: source.into(),
    }
}

fn later() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

/// A line's text, with changed runs in [brackets].
fn shown(line: &Line) -> String {
    line.pieces
        .iter()
        .map(|p| {
            if p.marked {
                format!("[{}]", p.text)
            } else {
                p.text.clone()
            }
        })
        .collect()
}

#[test]
fn markdown_splits_into_prose_and_blocks_with_their_languages() {
    let parts = split(
        "Intro line.\n\n```Python title=x\nprint(1)\n```\n\nMiddle.\n\n\n\n    indented()\n\nEnd.  \n",
    );
    assert_eq!(
        parts.blocks,
        vec![block("python", "print(1)"), block("", "indented()")]
    );
    assert_eq!(parts.prose, "Intro line.\n\nMiddle.\n\nEnd.");
}

#[test]
fn short_language_names_meet_their_long_ones() {
    assert_eq!(language("py"), "python");
    assert_eq!(language("JS {highlight}"), "javascript");
    assert_eq!(language("rust,ignore"), "rust");
    assert_eq!(language(""), "");
    assert_eq!(language(&"x".repeat(500)).len(), MAX_LANG_CHARS);
}

#[test]
fn blocks_match_by_language_and_order() {
    let a = [
        block("python", "a1"),
        block("bash", "a-sh"),
        block("python", "a2"),
        block("python", "a3"),
    ];
    let b = [
        block("python", "b1"),
        block("rust", "b-rs"),
        block("python", "b2"),
    ];
    let paired: Vec<(String, Option<&str>, Option<&str>)> = pair_blocks(&a, &b)
        .into_iter()
        .map(|p| {
            (
                block_name(p.lang, p.ordinal),
                p.a.map(|c| c.source.as_str()),
                p.b.map(|c| c.source.as_str()),
            )
        })
        .collect();
    assert_eq!(
        paired,
        vec![
            ("python block 1".into(), Some("a1"), Some("b1")),
            ("bash block 1".into(), Some("a-sh"), None),
            ("python block 2".into(), Some("a2"), Some("b2")),
            ("python block 3".into(), Some("a3"), None),
            ("rust block 1".into(), None, Some("b-rs")),
        ]
    );
}

#[test]
fn b_blocks_beyond_as_count_are_only_in_b() {
    let a = [block("go", "x")];
    let b = [block("go", "x"), block("go", "y"), block("", "z")];
    let paired = pair_blocks(&a, &b);
    assert_eq!(paired.len(), 3);
    assert_eq!((paired[1].ordinal, paired[1].a.is_none()), (2, true));
    assert_eq!(
        block_name(paired[2].lang, paired[2].ordinal),
        "code block 1 (no language)"
    );
}

#[test]
fn a_changed_line_faces_its_replacement_with_the_changed_words_marked() {
    let diffed = diff(
        "def f(x):\n    return x * 2\nprint(f(3))",
        "def f(x):\n    return x * 3\nprint(f(3))\nprint('done')",
        later(),
    );
    assert_eq!(
        diffed.counts,
        Counts {
            changed: 1,
            added: 1,
            removed: 0
        }
    );
    assert_eq!(diffed.counts.summary(), "1 line changed, 1 added");
    let changed = &diffed.rows[1];
    let (left, right) = (
        changed.left.as_ref().unwrap(),
        changed.right.as_ref().unwrap(),
    );
    assert_eq!((left.mark, left.old), (Mark::Removed, Some(2)));
    assert_eq!((right.mark, right.new), (Mark::Added, Some(2)));
    assert_eq!(shown(left), "    return x * [2]");
    assert_eq!(shown(right), "    return x * [3]");
    let last = diffed.rows.last().unwrap();
    assert!(last.left.is_none());
    assert_eq!(shown(last.right.as_ref().unwrap()), "print('done')");
    // Inline: the unchanged line, then the removed line before its replacement.
    let marks: Vec<Mark> = diffed.lines.iter().map(|l| l.mark).collect();
    assert_eq!(
        marks,
        [
            Mark::Same,
            Mark::Removed,
            Mark::Added,
            Mark::Same,
            Mark::Added
        ]
    );
}

#[test]
fn an_added_line_does_not_push_its_neighbours_out_of_line() {
    let diffed = diff(
        "for i in range(x):\n    return total * alpha_value",
        "for i in range(x + 1):\n    print(total)\n    return total * beta_value",
        later(),
    );
    let rows: Vec<(String, String)> = diffed
        .rows
        .iter()
        .map(|r| {
            let side = |l: &Option<Line>| l.as_ref().map(shown).unwrap_or_default();
            (side(&r.left), side(&r.right))
        })
        .collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[1].0, "", "{rows:?}");
    assert!(rows[1].1.contains("print(total)"), "{rows:?}");
    assert!(rows[2].0.contains("alpha_value") && rows[2].1.contains("beta_value"));
    assert_eq!(diffed.counts.summary(), "2 lines changed, 1 added");
}

#[test]
fn unlike_lines_face_each_other_in_order() {
    let faced = face(&["one", "two"], &["alpha beta", "gamma", "delta"], later());
    assert_eq!(
        faced,
        vec![(Some(0), Some(0)), (Some(1), Some(1)), (None, Some(2))]
    );
}

#[test]
fn prose_marks_the_words_that_changed() {
    let sections = compare(
        "The loop runs in linear time and uses no memory.",
        "The loop runs in quadratic time and uses no memory.",
    );
    assert_eq!(sections.len(), 1);
    assert_eq!(sections[0].heading, "Prose");
    assert_eq!(sections[0].summary, "1 line changed");
    let lines = &sections[0].diff.as_ref().unwrap().lines;
    assert_eq!(
        shown(&lines[0]),
        "The loop runs in [linear] time and uses no memory."
    );
    assert_eq!(
        shown(&lines[1]),
        "The loop runs in [quadratic] time and uses no memory."
    );
}

#[test]
fn identical_texts_have_no_changes() {
    let diffed = diff("a\nb", "a\nb", later());
    assert_eq!(diffed.counts.summary(), "no changes");
    assert!(diffed.rows.iter().all(|r| r.left == r.right));
    assert_eq!(
        Counts {
            changed: 0,
            added: 2,
            removed: 3
        }
        .summary(),
        "2 lines added, 3 removed"
    );
}

#[test]
fn sections_name_unmatched_blocks_and_number_their_anchors() {
    let sections = compare(
        "Use this:\n\n```py\nx = 1\n```\n",
        "```rust\nlet x = 1;\n```\n\n```python\nx = 2\n```\n",
    );
    let named: Vec<(&str, &str, &str)> = sections
        .iter()
        .map(|s| (s.id.as_str(), s.heading.as_str(), s.summary.as_str()))
        .collect();
    assert_eq!(
        named,
        vec![
            ("section-1", "Prose", "1 line removed"),
            ("section-2", "python block 1", "1 line changed"),
            ("section-3", "rust block 1", "only in B"),
        ]
    );
    let only_b = &sections[2];
    assert!(only_b.diff.is_none() && only_b.plain_a.is_none());
    assert_eq!(only_b.plain_b.as_ref().unwrap().text, "let x = 1;");
}

#[test]
fn a_text_over_the_cap_is_shown_without_a_diff() {
    let huge: String = (0..MAX_DIFF_LINES + 1)
        .map(|i| format!("x = {i}\n"))
        .collect();
    let a = format!("```python\n{huge}```\n");
    let b = "```python\nx = 1\n```\n";
    let sections = compare(&a, b);
    assert_eq!(sections[0].summary, TOO_LARGE);
    assert!(sections[0].diff.is_none());
    let plain = sections[0].plain_a.as_ref().unwrap();
    assert_eq!(plain.gutter.lines().count(), MAX_DIFF_LINES + 1);
    assert_eq!(sections[0].plain_b.as_ref().unwrap().text, "x = 1");
    // A megabyte on one line is over the byte cap.
    let long_line = "y".repeat(MAX_DIFF_BYTES + 1);
    assert_eq!(compare(&long_line, "y")[0].summary, TOO_LARGE);
}

/// The sections template alone, as the page includes it.
#[derive(askama::Template)]
#[template(path = "diff/sections.html")]
struct Fragment {
    sections: Vec<Section>,
    view: View,
}

#[test]
fn hostile_text_is_escaped_in_both_layouts() {
    let a =
        "Run <script>alert(1)</script> now.\n\n```<img>\nx = \"'&\"\n```\n\n```py\nonly_a()\n```\n";
    let b = "Run <script>alert(2)</script> now.\n\n```<img>\nx = \"'&amp;\"\n```\n";
    let sections = compare(a, b);
    assert_eq!(sections[1].heading, "<img> block 1");
    for view in [View::Side, View::Inline] {
        let html = askama::Template::render(&Fragment {
            sections: sections.clone(),
            view,
        })
        .unwrap();
        assert!(
            !html.contains("<script") && !html.contains("<img"),
            "{html}"
        );
        assert!(html.contains("&#60;script&#62;alert("), "{html}");
        assert!(html.contains("&#60;img&#62; block 1"), "{html}");
        assert!(!html.contains("\"'&"), "{html}");
        assert!(html.contains("&#34;&#39;&#38;"), "{html}");
        // Changed words are marked, and the signs say what colour says.
        assert!(html.contains("<del>"), "{html}");
        assert!(html.contains("<ins>"), "{html}");
        assert!(html.contains("only in A"), "{html}");
    }
}

#[test]
fn the_view_is_side_or_inline() {
    assert_eq!(View::parse(None), Ok(View::Side));
    assert_eq!(View::parse(Some("side")), Ok(View::Side));
    assert_eq!(View::parse(Some("inline")), Ok(View::Inline));
    assert_eq!(
        View::parse(Some("<b>")),
        Err("view must be side or inline, not \"<b>\"".to_owned())
    );
}

#[test]
fn the_worst_inputs_under_the_caps_finish_within_the_budget() {
    let half = MAX_DIFF_LINES / 2 - 2;
    let distinct = |tag: &str| -> String {
        (0..half)
            .map(|i| format!("{tag}{i} {}\n", i * 7 % 13))
            .collect()
    };
    let long_line = "word ".repeat(MAX_DIFF_BYTES / 5 - 10);
    let short_lines: String = (0..MAX_FACING_PAIRS)
        .map(|i| format!("word {i}\n"))
        .collect();
    let cases = [
        // Every line different, in two runs that cross.
        (
            format!("{}\n\n{}", distinct("a"), distinct("b")),
            format!("{}\n\n{}", distinct("b"), distinct("a")),
        ),
        // One line at the byte cap against as many short lines as may face it.
        (
            format!("```\n{long_line}\n```"),
            format!("```\n{short_lines}```"),
        ),
    ];
    for (a, b) in cases {
        let started = Instant::now();
        let sections = compare(&a, &b);
        assert!(
            started.elapsed() < TIME_BUDGET + Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(sections[0].diff.is_some(), "{}", sections[0].summary);
    }
}
