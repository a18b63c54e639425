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
mod tests;
