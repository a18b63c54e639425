//! The answer table a lead reads: one row per question, one column per answer set (the
//! rating under review, or every rater of a task), options by their labels, rows nobody
//! answered left out, and answers that differ from the others of their row marked.

use serde_json::Value;

use super::disagreement;
use super::queue::value_text;
use verdict_core::rubric::{
    Answers, Classification, Rubric, ShownAnswers, Slot, Subject, TaskAnswers,
};

/// One column of the table: a set of answers, and whether its explanations were written
/// with the pair the other way round from how the column reads.
pub struct Column<'a> {
    answers: &'a Answers,
    turned: bool,
}

impl<'a> Column<'a> {
    /// A rating in the task's own order, from an assignment that showed the pair
    /// `swapped`: its rater's explanations call the task's B "A".
    pub fn task(answers: &'a TaskAnswers, swapped: bool) -> Self {
        Column {
            answers,
            turned: swapped,
        }
    }

    /// A rating as its rater saw it: the explanations read as written.
    pub fn shown(answers: &'a ShownAnswers) -> Self {
        Column {
            answers,
            turned: false,
        }
    }
}

/// A question's answer as shown to a lead: the option's label and the explanation.
pub struct Cell {
    pub value: String,
    pub why: String,
    /// The explanation was written when B was shown first, so its "A" is this table's B.
    pub written_swapped: bool,
    /// Whether an answer is there at all.
    pub answered: bool,
    /// Whether its answer differs from the others of its row (see [`mark_differences`]).
    pub differs: bool,
}

impl Cell {
    /// Whether the explanation is long enough to fold away.
    pub fn long(&self) -> bool {
        self.why.chars().count() > LONG_EXPLANATION
    }

    /// The start of a long explanation, shown while the rest is folded.
    pub fn why_start(&self) -> String {
        self.why.chars().take(LONG_EXPLANATION / 2).collect()
    }
}

/// Explanations longer than this (in characters) are folded.
const LONG_EXPLANATION: usize = 280;

/// One question across several answer sets (the two responses, or several raters).
pub struct Row {
    /// The answer's path as the rubric names it (`a.correctness`); none for the row of
    /// classifications.
    pub path: Option<String>,
    pub label: String,
    pub cells: Vec<Cell>,
    /// Whether any cell of the row differs from the others.
    pub differs: bool,
}

pub(super) fn cell(slot: &Slot<'_>, answers: &Answers) -> Cell {
    let holder = slot.holder(answers);
    let value = slot.value(answers);
    Cell {
        value: value.map_or_else(|| "—".into(), |v| disagreement::answer_label(slot, v)),
        answered: value.is_some(),
        differs: false,
        why: slot
            .explanation_key()
            .and_then(|key| holder.and_then(|h| h.get(&key)).and_then(Value::as_str))
            .unwrap_or("")
            .to_owned(),
        written_swapped: false,
    }
}

/// A column's cell: an explanation written with the pair the other way round is marked
/// (a rubric of one response, not a `pair`, has no order to turn).
fn column_cell(slot: &Slot<'_>, column: &Column<'_>, pair: bool) -> Cell {
    let cell = cell(slot, column.answers);
    Cell {
        written_swapped: pair && column.turned && !cell.why.is_empty(),
        ..cell
    }
}

pub fn row_label(slot: &Slot<'_>) -> String {
    match slot.side() {
        Some(side) => format!("{} · {}", side.key().to_uppercase(), slot.label()),
        None => slot.label().to_owned(),
    }
}

/// Marks the cells whose answer differs from the others of the row: when the answers
/// given are not all the same, every one but the most common (all of them when no one
/// answer is the most common).
fn mark_differences(row: &mut Row) {
    let given: Vec<&str> = row
        .cells
        .iter()
        .filter(|c| c.answered)
        .map(|c| c.value.as_str())
        .collect();
    if given.iter().all(|v| *v == given[0]) {
        return;
    }
    let count = |v: &str| given.iter().filter(|w| **w == v).count();
    let top = given.iter().map(|v| count(v)).max().unwrap_or(0);
    let leaders: Vec<&str> = given.iter().copied().filter(|v| count(v) == top).collect();
    let common = leaders
        .iter()
        .all(|v| *v == leaders[0])
        .then(|| leaders[0].to_owned());
    for c in row.cells.iter_mut().filter(|c| c.answered) {
        c.differs = common.as_deref() != Some(c.value.as_str());
    }
    row.differs = true;
}

/// How a rating's classifications read: `Label: option, option` for each question.
fn classification_text(questions: &[Classification], answers: &Answers) -> Option<String> {
    let given = answers.get("classifications")?.as_object()?;
    let parts: Vec<String> = given
        .iter()
        .filter_map(|(key, value)| {
            let options = match value {
                Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>(),
                Value::Null => return None,
                other => vec![value_text(other)],
            };
            if options.is_empty() {
                return None;
            }
            let label = questions
                .iter()
                .find(|q| q.key == *key)
                .map_or(key.as_str(), |q| q.label.as_str());
            Some(format!("{label}: {}", options.join(", ")))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Rows of questions by columns of answer sets, in the orientation the sets are in.
/// Rows nobody answered are left out; several sets have their differences marked.
pub fn rows(
    rubric: &Rubric,
    classifications: &[Classification],
    columns: &[Column<'_>],
) -> Vec<Row> {
    let pair = rubric.subject == Subject::Pair;
    let mut rows: Vec<Row> = rubric
        .slots()
        .iter()
        .map(|slot| Row {
            path: Some(slot.path()),
            label: row_label(slot),
            cells: columns.iter().map(|c| column_cell(slot, c, pair)).collect(),
            differs: false,
        })
        .filter(|row| row.cells.iter().any(|c| c.answered || !c.why.is_empty()))
        .collect();
    let classified: Vec<Option<String>> = columns
        .iter()
        .map(|c| classification_text(classifications, c.answers))
        .collect();
    if classified.iter().any(Option::is_some) {
        rows.push(Row {
            path: None,
            label: "Classifications".into(),
            cells: classified
                .into_iter()
                .map(|text| Cell {
                    answered: text.is_some(),
                    value: text.unwrap_or_else(|| "—".into()),
                    why: String::new(),
                    written_swapped: false,
                    differs: false,
                })
                .collect(),
            differs: false,
        });
    }
    if columns.len() > 1 {
        rows.iter_mut().for_each(mark_differences);
    }
    rows
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Column, rows};
    use verdict_core::rubric::{Classification, TaskAnswers, by_name};

    fn set(value: serde_json::Value) -> TaskAnswers {
        serde_json::from_value(value).unwrap()
    }

    fn straight<'a>(sets: &[&'a TaskAnswers]) -> Vec<Column<'a>> {
        sets.iter().map(|s| Column::task(s, false)).collect()
    }

    #[test]
    fn rows_show_labels_leave_out_unanswered_questions_and_mark_the_odd_one_out() {
        let blackhat = by_name("blackhat").unwrap();
        let two = set(json!({"sxs": 2, "sxs_explanation": "A runs."}));
        let six = set(json!({"sxs": 6}));
        let found = rows(blackhat, &[], &straight(&[&two, &two, &six]));
        assert_eq!(found.len(), 1, "only the score was answered");
        let row = &found[0];
        let values: Vec<&str> = row.cells.iter().map(|c| c.value.as_str()).collect();
        assert_eq!(values, ["A better", "A better", "B better"]);
        let differs: Vec<bool> = row.cells.iter().map(|c| c.differs).collect();
        assert_eq!(differs, [false, false, true]);
        assert!(row.differs);
        assert_eq!(row.cells[0].why, "A runs.");

        let tied = rows(blackhat, &[], &straight(&[&two, &six]));
        assert!(
            tied[0].cells.iter().all(|c| c.differs),
            "no answer is the most common"
        );
        let alone = rows(blackhat, &[], &straight(&[&six]));
        assert!(!alone[0].differs, "one rating differs from nothing");
    }

    #[test]
    fn classifications_read_as_labelled_lists_and_only_when_given() {
        let blackhat = by_name("blackhat").unwrap();
        let language = Classification {
            key: "language".into(),
            label: "Language".into(),
            multiple: true,
            required: false,
            options: vec!["python".into(), "rust".into()],
        };
        let classified =
            set(json!({"sxs": 4, "classifications": {"language": ["python", "rust"]}}));
        let plain = set(json!({"sxs": 4}));
        let found = rows(blackhat, &[language], &straight(&[&classified, &plain]));
        let last = found.last().unwrap();
        assert_eq!(last.label, "Classifications");
        assert_eq!(last.cells[0].value, "Language: python, rust");
        assert!(!last.cells[1].answered);
        let without = rows(blackhat, &[], &straight(&[&plain]));
        assert!(without.iter().all(|r| r.label != "Classifications"));
    }

    #[test]
    fn an_explanation_written_the_other_way_round_is_marked() {
        let blackhat = by_name("blackhat").unwrap();
        let turned = set(json!({"sxs": 6, "sxs_explanation": "My A runs."}));
        let plain = set(json!({"sxs": 2, "sxs_explanation": "A runs."}));
        let found = rows(
            blackhat,
            &[],
            &[Column::task(&turned, true), Column::task(&plain, false)],
        );
        let cells = &found[0].cells;
        assert!(cells[0].written_swapped, "written when B was shown first");
        assert!(!cells[1].written_swapped);

        let shown = turned.clone().into_shown(blackhat, true);
        let as_seen = rows(blackhat, &[], &[Column::shown(&shown)]);
        assert_eq!(as_seen[0].cells[0].value, "A better");
        assert!(!as_seen[0].cells[0].written_swapped, "read as written");

        let single = by_name("additive-5").unwrap();
        let score = set(json!({"score": 3, "justification": "Useful."}));
        let one = rows(single, &[], &[Column::task(&score, true)]);
        assert!(
            one.iter()
                .all(|r| r.cells.iter().all(|c| !c.written_swapped)),
            "one response has no order to turn"
        );
    }
}
