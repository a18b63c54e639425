//! The A vs B diff: the two responses of a pair split into prose and code blocks, code
//! blocks matched by language and order (A's first python block with B's first python
//! block, ...), and each pair diffed by line with the changed words inside changed lines
//! marked. The output is plain data; the page templates render it (escaped by askama),
//! so no markup is built here.
//!
//! Task content is untrusted and may be huge, so the work is capped: a text over
//! [`MAX_DIFF_BYTES`] or [`MAX_DIFF_LINES`] is shown without a diff, and all the diffs
//! of one comparison share one deadline ([`TIME_BUDGET`]) after which `similar` settles
//! for a coarser (still correct) diff.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use similar::{ChangeTag, TextDiff};

pub mod pages;

pub fn page_router() -> axum::Router<crate::state::AppState> {
    pages::router()
}

/// A text larger than this is shown as it is, without a diff.
pub const MAX_DIFF_BYTES: usize = 128 * 1024;
/// A text of more lines than this is shown as it is, without a diff.
pub const MAX_DIFF_LINES: usize = 4000;
/// How long all the diffs of one comparison may take before they are left coarser.
pub const TIME_BUDGET: Duration = Duration::from_millis(750);
/// A fence's language is shown at most this long (it is the task author's free text).
const MAX_LANG_CHARS: usize = 40;

/// What the diff says of a text that is too large.
pub const TOO_LARGE: &str = "too large to diff; shown without a diff";

/// The same Markdown extensions the task panes render with, so blocks split the same way.
const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_TASKLISTS);

/// A fenced or indented code block of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    /// The language its fence names (see [`language`]); empty for none.
    pub lang: String,
    /// Its source, without the final newline.
    pub source: String,
}

/// A response split into its prose and its code blocks.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parts {
    /// The Markdown outside the code blocks, lines trimmed at the end and runs of blank
    /// lines folded into one (the blocks' places leave no noise in the prose diff).
    pub prose: String,
    pub blocks: Vec<CodeBlock>,
}

/// Splits Markdown into prose and code blocks, reading blocks as `render::markdown`
/// does (the fence's first word is the language; indented code has none).
pub fn split(markdown: &str) -> Parts {
    let mut prose = String::new();
    let mut blocks = Vec::new();
    // Where the source not yet copied into the prose starts.
    let mut copied = 0;
    let mut open: Option<CodeBlock> = None;
    for (event, range) in Parser::new_ext(markdown, OPTIONS).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                if let Some(before) = markdown.get(copied..range.start) {
                    prose.push_str(before);
                    prose.push('\n');
                    copied = range.end;
                }
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => language(&info),
                    CodeBlockKind::Indented => String::new(),
                };
                open = Some(CodeBlock {
                    lang,
                    source: String::new(),
                });
            }
            Event::Text(text) => {
                if let Some(block) = &mut open {
                    block.source.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(mut block) = open.take() {
                    if block.source.ends_with('\n') {
                        block.source.pop();
                    }
                    blocks.push(block);
                }
            }
            _ => {}
        }
    }
    prose.push_str(markdown.get(copied..).unwrap_or(""));
    Parts {
        prose: tidy(&prose),
        blocks,
    }
}

/// Lines trimmed at the end, runs of blank lines folded into one, none at either end.
fn tidy(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim_end) {
        if line.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(line);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out.join("\n")
}

/// The language of a fence's info string: its first word, lower-cased, with the common
/// short names folded into one, so a ```py block of A meets a ```python block of B.
pub fn language(info: &str) -> String {
    let word = info
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
        .next()
        .unwrap_or("")
        .to_lowercase();
    let folded = match word.as_str() {
        "py" | "py3" | "python3" => "python",
        "js" | "node" | "mjs" => "javascript",
        "ts" => "typescript",
        "rs" => "rust",
        "sh" | "shell" | "zsh" => "bash",
        "c++" | "cc" | "cxx" | "hpp" => "cpp",
        "golang" => "go",
        "yml" => "yaml",
        "rb" => "ruby",
        "kt" => "kotlin",
        "cs" | "c#" => "csharp",
        other => other,
    };
    folded.chars().take(MAX_LANG_CHARS).collect()
}

/// Code blocks of A and B matched up: the n-th block of a language in A with the n-th
/// of the same language in B. Either side is `None` for a block with no counterpart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paired<'a> {
    pub lang: &'a str,
    /// Which block of its language this is (1 for the first).
    pub ordinal: usize,
    pub a: Option<&'a CodeBlock>,
    pub b: Option<&'a CodeBlock>,
}

/// Matches blocks by language and order: A's blocks in A's order (with their
/// counterparts, if any), then B's blocks that have none, in B's order.
pub fn pair_blocks<'a>(a: &'a [CodeBlock], b: &'a [CodeBlock]) -> Vec<Paired<'a>> {
    let mut b_by_lang: HashMap<&str, Vec<&CodeBlock>> = HashMap::new();
    for block in b {
        b_by_lang.entry(&block.lang).or_default().push(block);
    }
    let mut in_a: HashMap<&str, usize> = HashMap::new();
    let mut paired = Vec::with_capacity(a.len().max(b.len()));
    for block in a {
        let seen = in_a.entry(&block.lang).or_default();
        *seen += 1;
        let other = b_by_lang
            .get(block.lang.as_str())
            .and_then(|blocks| blocks.get(*seen - 1))
            .copied();
        paired.push(Paired {
            lang: &block.lang,
            ordinal: *seen,
            a: Some(block),
            b: other,
        });
    }
    let mut in_b: HashMap<&str, usize> = HashMap::new();
    for block in b {
        let seen = in_b.entry(&block.lang).or_default();
        *seen += 1;
        if *seen > in_a.get(block.lang.as_str()).copied().unwrap_or(0) {
            paired.push(Paired {
                lang: &block.lang,
                ordinal: *seen,
                a: None,
                b: Some(block),
            });
        }
    }
    paired
}

/// How a line of a diff stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// In both.
    Same,
    /// In A only (left, or "−" in the inline layout).
    Removed,
    /// In B only (right, or "+" in the inline layout).
    Added,
}

impl Mark {
    /// The sign shown before the line, so the mark does not rest on colour alone.
    pub fn sign(&self) -> &'static str {
        match self {
            Self::Same => "",
            Self::Removed => "−",
            Self::Added => "+",
        }
    }

    /// What the sign means, for screen readers (visually hidden).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Same => "",
            Self::Removed => "only in A",
            Self::Added => "only in B",
        }
    }

    /// The CSS class of the line.
    pub fn class(&self) -> &'static str {
        match self {
            Self::Same => "same",
            Self::Removed => "removed",
            Self::Added => "added",
        }
    }
}

/// A run of text in a line; `marked` when it is what changed inside a changed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub text: String,
    pub marked: bool,
}

/// One line of a diff, with its number in A and in B (1-based; `None` on the side it is
/// not in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub mark: Mark,
    pub old: Option<usize>,
    pub new: Option<usize>,
    pub pieces: Vec<Piece>,
}

/// A row of the side-by-side layout: A's line on the left, B's on the right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub left: Option<Line>,
    pub right: Option<Line>,
}

/// How many lines a diff changed (a removed line facing an added one), added and
/// removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub changed: usize,
    pub added: usize,
    pub removed: usize,
}

impl Counts {
    /// "12 lines changed, 3 added", or "no changes".
    pub fn summary(&self) -> String {
        let mut said = Vec::new();
        if self.changed > 0 {
            said.push(format!("{} changed", lines(self.changed)));
        }
        for (n, what) in [(self.added, "added"), (self.removed, "removed")] {
            if n > 0 {
                // The first figure names its unit; the ones after it share it.
                let n = if said.is_empty() {
                    lines(n)
                } else {
                    n.to_string()
                };
                said.push(format!("{n} {what}"));
            }
        }
        if said.is_empty() {
            "no changes".into()
        } else {
            said.join(", ")
        }
    }
}

fn lines(n: usize) -> String {
    if n == 1 {
        "1 line".into()
    } else {
        format!("{n} lines")
    }
}

/// A diff of two texts, in both layouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diffed {
    /// Side by side.
    pub rows: Vec<Row>,
    /// Inline: removed lines before the added ones that replace them.
    pub lines: Vec<Line>,
    pub counts: Counts,
    /// The deadline passed: the diff is correct but may mark more than it must.
    pub coarse: bool,
}

/// Diffs `a` and `b` by line; a removed line facing the added line that replaces it
/// has the words that changed between them marked. Gives up refining at `deadline`.
pub fn diff(a: &str, b: &str, deadline: Instant) -> Diffed {
    // A last line without its line break would differ from the same line with one.
    let (a, b) = (with_final_newline(a), with_final_newline(b));
    let text = TextDiff::configure()
        .deadline(deadline)
        .diff_lines(a.as_ref(), b.as_ref());
    let mut out = Diffed {
        rows: Vec::new(),
        lines: Vec::new(),
        counts: Counts::default(),
        coarse: false,
    };
    for op in text.ops() {
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        for change in text.iter_changes(op) {
            let value = change.value().trim_end_matches(['\n', '\r']);
            let line = Line {
                mark: Mark::Same,
                old: change.old_index().map(|i| i + 1),
                new: change.new_index().map(|i| i + 1),
                pieces: plain(value),
            };
            match change.tag() {
                ChangeTag::Equal => {
                    out.rows.push(Row {
                        left: Some(line.clone()),
                        right: Some(line.clone()),
                    });
                    out.lines.push(line);
                }
                ChangeTag::Delete => removed.push((
                    value,
                    Line {
                        mark: Mark::Removed,
                        ..line
                    },
                )),
                ChangeTag::Insert => added.push((
                    value,
                    Line {
                        mark: Mark::Added,
                        ..line
                    },
                )),
            }
        }
        let old: Vec<&str> = removed.iter().map(|(text, _)| *text).collect();
        let new: Vec<&str> = added.iter().map(|(text, _)| *text).collect();
        let faced = face(&old, &new, deadline);
        for pair in &faced {
            if let (Some(i), Some(k)) = *pair {
                let (left, right) = mark_words(old[i], new[k], deadline);
                removed[i].1.pieces = left;
                added[k].1.pieces = right;
            }
        }
        for (left, right) in faced {
            match (left, right) {
                (Some(_), Some(_)) => out.counts.changed += 1,
                (Some(_), None) => out.counts.removed += 1,
                (None, _) => out.counts.added += 1,
            }
            out.rows.push(Row {
                left: left.map(|i| removed[i].1.clone()),
                right: right.map(|k| added[k].1.clone()),
            });
        }
        out.lines.extend(removed.into_iter().map(|(_, line)| line));
        out.lines.extend(added.into_iter().map(|(_, line)| line));
    }
    out.coarse = Instant::now() > deadline;
    out
}

/// At most this many pairs of lines of one change are compared to line them up.
const MAX_FACING_PAIRS: usize = 2500;
/// Lines longer than this are not compared to line them up (each comparison reads both
/// lines whole, and there may be thousands).
const MAX_FACING_LINE_BYTES: usize = 4096;
/// Lines at least this alike (0 to 1, by words) face each other and have their changed
/// words marked; less alike, a line is simply replaced.
const MIN_LIKENESS: f32 = 0.5;

/// Which removed line faces which added line in the side-by-side layout, as the rows
/// of one change (indexes into `removed` and `added`, in order). A removed line faces
/// the first still-free added line most like it, if any is alike enough; the lines
/// between two such pairs face each other in order. So an inserted line does not push
/// every line after it out of line with its counterpart.
fn face(
    removed: &[&str],
    added: &[&str],
    deadline: Instant,
) -> Vec<(Option<usize>, Option<usize>)> {
    let mut anchors = Vec::new();
    if removed.len() * added.len() <= MAX_FACING_PAIRS {
        let mut free = 0;
        let comparable = |line: &str| line.len() <= MAX_FACING_LINE_BYTES;
        for (i, line) in removed.iter().enumerate() {
            // Past the deadline, the rest simply face each other in order.
            if !comparable(line) || Instant::now() > deadline {
                continue;
            }
            let best = (free..added.len())
                .filter(|k| comparable(added[*k]))
                .map(|k| (k, likeness(line, added[k], deadline)))
                .filter(|(_, ratio)| *ratio >= MIN_LIKENESS)
                .fold(None, |best: Option<(usize, f32)>, (k, ratio)| match best {
                    Some((_, top)) if top >= ratio => best,
                    _ => Some((k, ratio)),
                });
            if let Some((k, _)) = best {
                anchors.push((i, k));
                free = k + 1;
            }
        }
    }
    let mut rows = Vec::new();
    let (mut i0, mut k0) = (0, 0);
    for (i, k) in anchors.into_iter().chain([(removed.len(), added.len())]) {
        for n in 0..(i - i0).max(k - k0) {
            rows.push((
                (i0 + n < i).then_some(i0 + n),
                (k0 + n < k).then_some(k0 + n),
            ));
        }
        if i < removed.len() {
            rows.push((Some(i), Some(k)));
        }
        (i0, k0) = (i + 1, k + 1);
    }
    rows
}

fn word_diff<'a>(a: &'a str, b: &'a str, deadline: Instant) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .deadline(deadline)
        .diff_unicode_words(a, b)
}

/// How alike two lines are, 0 to 1, by their words.
fn likeness(a: &str, b: &str, deadline: Instant) -> f32 {
    word_diff(a, b, deadline).ratio()
}

/// The pieces of a removed line and of the added line it faces, with the words that
/// differ marked (nothing marked when the lines are too unlike for marks to help).
fn mark_words(a: &str, b: &str, deadline: Instant) -> (Vec<Piece>, Vec<Piece>) {
    let words = word_diff(a, b, deadline);
    if words.ratio() < MIN_LIKENESS {
        return (plain(a), plain(b));
    }
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for change in words.iter_all_changes() {
        let value = change.value();
        match change.tag() {
            ChangeTag::Equal => {
                push(&mut left, value, false);
                push(&mut right, value, false);
            }
            ChangeTag::Delete => push(&mut left, value, true),
            ChangeTag::Insert => push(&mut right, value, true),
        }
    }
    (left, right)
}

/// A line as one unmarked piece (none for an empty line).
fn plain(text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    push(&mut pieces, text, false);
    pieces
}

/// Adds a run to a line's pieces, joined to the last one when it has the same mark.
fn push(pieces: &mut Vec<Piece>, text: &str, marked: bool) {
    if text.is_empty() {
        return;
    }
    match pieces.last_mut() {
        Some(last) if last.marked == marked => last.text.push_str(text),
        _ => pieces.push(Piece {
            text: text.to_owned(),
            marked,
        }),
    }
}

fn with_final_newline(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_empty() || text.ends_with('\n') {
        text.into()
    } else {
        format!("{text}\n").into()
    }
}

/// A text shown as it is: its lines' numbers and the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plain {
    /// "1\n2\n...", one number per line of `text`.
    pub gutter: String,
    pub text: String,
}

impl Plain {
    fn of(text: &str) -> Self {
        let count = text.lines().count().max(1);
        Self {
            gutter: (1..=count).map(|n| format!("{n}\n")).collect(),
            text: text.to_owned(),
        }
    }
}

/// One part of the comparison: the prose, or one code block of A against its match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The anchor of its heading ("section-1", ...): never task content.
    pub id: String,
    /// "Prose", "python block 1", "code block 2 (no language)".
    pub heading: String,
    /// "3 lines changed, 1 added", "only in A", or why there is no diff.
    pub summary: String,
    /// The diff, when both sides have this part and it is small enough to diff.
    pub diff: Option<Diffed>,
    /// Otherwise each side's text as it is (`None`: that side has no such part).
    pub plain_a: Option<Plain>,
    pub plain_b: Option<Plain>,
}

/// Compares two responses: their prose (when either has any), then each code block of
/// A against its match in B, then B's blocks with no match in A.
pub fn compare(a: &str, b: &str) -> Vec<Section> {
    let deadline = Instant::now() + TIME_BUDGET;
    let (a, b) = (split(a), split(b));
    let mut sections = Vec::new();
    if !(a.prose.is_empty() && b.prose.is_empty()) {
        sections.push(section(
            "Prose".into(),
            Some(&a.prose),
            Some(&b.prose),
            deadline,
        ));
    }
    for paired in pair_blocks(&a.blocks, &b.blocks) {
        sections.push(section(
            block_name(paired.lang, paired.ordinal),
            paired.a.map(|c| c.source.as_str()),
            paired.b.map(|c| c.source.as_str()),
            deadline,
        ));
    }
    for (i, section) in sections.iter_mut().enumerate() {
        section.id = format!("section-{}", i + 1);
    }
    sections
}

/// "python block 2", or "code block 1 (no language)".
pub fn block_name(lang: &str, ordinal: usize) -> String {
    if lang.is_empty() {
        format!("code block {ordinal} (no language)")
    } else {
        format!("{lang} block {ordinal}")
    }
}

/// Whether a text is small enough to diff.
fn diffable(text: &str) -> bool {
    text.len() <= MAX_DIFF_BYTES && text.lines().count() <= MAX_DIFF_LINES
}

fn section(heading: String, a: Option<&str>, b: Option<&str>, deadline: Instant) -> Section {
    let (summary, diff) = match (a, b) {
        (Some(a), Some(b)) if diffable(a) && diffable(b) => {
            let diffed = diff(a, b, deadline);
            let mut summary = diffed.counts.summary();
            if diffed.coarse {
                summary
                    .push_str(" (the diff took too long to refine; it may mark more than changed)");
            }
            (summary, Some(diffed))
        }
        (Some(_), Some(_)) => (TOO_LARGE.to_owned(), None),
        (Some(_), None) => ("only in A".to_owned(), None),
        (None, _) => ("only in B".to_owned(), None),
    };
    let plain = |text: Option<&str>| diff.is_none().then(|| text.map(Plain::of)).flatten();
    Section {
        id: String::new(),
        heading,
        summary,
        plain_a: plain(a),
        plain_b: plain(b),
        diff,
    }
}

/// The layout of the diff page, chosen by a link (`?view=side` or `?view=inline`), so
/// it works without JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Two columns, A on the left and B on the right (the default).
    Side,
    /// One column, removed lines before the added ones that replace them.
    Inline,
}

impl View {
    /// Reads the `view` parameter: absent is `side`; anything but the two is refused
    /// with the reason.
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value {
            None | Some("side") => Ok(Self::Side),
            Some("inline") => Ok(Self::Inline),
            Some(other) => Err(format!(
                "view must be side or inline, not {:?}",
                other.chars().take(40).collect::<String>()
            )),
        }
    }

    pub fn is_side(&self) -> bool {
        *self == Self::Side
    }
}

#[cfg(test)]
mod tests {
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
        let a = "Run <script>alert(1)</script> now.\n\n```<img>\nx = \"'&\"\n```\n\n```py\nonly_a()\n```\n";
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
}
