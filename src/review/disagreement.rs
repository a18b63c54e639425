//! How far raters of one task are apart, from the rubric alone: which answers are
//! compared, when one rating disagrees with the others, a task's spread, and the short
//! summary of a rating a lead reads in the queue. Plain functions over answer sets.
//!
//! Only the answers that metrics read as a preference or a score are compared: they are
//! the verdict of a rating. A scale or a score is compared by its points; options of a
//! preference (A / tie / B) by the side they favour.

use serde_json::Value;

use crate::metrics::stats::median;
use verdict_core::rubric::{Answer, Answers, Favours, Role, Rubric, Slot};

/// The rule the queue's "disagrees with others" filter applies, as the page states it.
pub const RULE: &str = "A rating disagrees with the others when, for any preference or score \
     question, its answer is more than 1 point from the median of the other counted ratings \
     of the same task (for a scale or a score), or is not the option most of them chose (for \
     options such as A / tie / B). Counted ratings are those the metrics count: rated, \
     submitted or accepted, of an ordinary task (not gold), and not held for review first \
     unless a lead accepted them.";

/// How a task's spread is measured, as the disagreement page states it.
pub const SPREAD_RULE: &str = "For each preference or score question, the spread is the \
     highest answer minus the lowest over the counted ratings (options count as A = −1, \
     tie = 0, B = +1). Tasks are ordered by their largest spread as a share of the \
     question's range, then by how many raters disagree.";

/// A compared question and how its answers become points.
#[derive(Debug, Clone, Copy)]
pub struct Measure<'r> {
    pub slot: Slot<'r>,
    /// Lowest and highest points an answer can have.
    pub range: (f64, f64),
    /// Options (compared as equal or not) rather than points.
    pub options: bool,
}

impl Measure<'_> {
    /// The answer as points: a number as it is, an option by the side it favours.
    pub fn points(&self, answers: &Answers) -> Option<f64> {
        self.points_of(self.slot.value(answers)?)
    }

    /// How an answer with these points reads: the label of the option or scale value
    /// that has them, else the number.
    pub fn label_of_points(&self, points: f64) -> String {
        let label = match self.slot {
            Slot::Asked { question, .. } => question
                .options()
                .into_iter()
                .find(|(value, _)| self.points_of(value) == Some(points))
                .map(|(_, label)| label.to_owned()),
            Slot::Derived(_) => None,
        };
        label.unwrap_or_else(|| points.to_string())
    }

    fn points_of(&self, value: &Value) -> Option<f64> {
        if self.options {
            return Some(match self.slot.metrics()?.favours(value)? {
                Favours::A => -1.0,
                Favours::Tie => 0.0,
                Favours::B => 1.0,
            });
        }
        match value {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            other => other.as_f64(),
        }
    }
}

/// The questions a rubric's ratings are compared on, in form order.
pub fn measures(rubric: &Rubric) -> Vec<Measure<'_>> {
    rubric
        .slots()
        .into_iter()
        .filter_map(|slot| {
            let role = slot.metrics()?;
            if !matches!(role, Role::Preference { .. } | Role::Score) {
                return None;
            }
            let (range, options) = match slot {
                Slot::Asked { question, .. } => match &question.answer {
                    Answer::Scale { min, max, .. } => ((*min as f64, *max as f64), false),
                    Answer::Choice { .. } => ((-1.0, 1.0), true),
                    Answer::YesNo { .. } => ((0.0, 1.0), false),
                    Answer::Text { .. } | Answer::MultiChoice { .. } => return None,
                },
                Slot::Derived(derived) => {
                    let (low, high) = derived.range(rubric);
                    ((low as f64, high as f64), false)
                }
            };
            Some(Measure {
                slot,
                range,
                options,
            })
        })
        .collect()
}

/// Whether `mine` disagrees with `others` (the other counted ratings of the same task)
/// by [`RULE`]. With no other rating that answered a question, there is nothing to
/// disagree with on it.
pub fn disagrees(rubric: &Rubric, mine: &Answers, others: &[&Answers]) -> bool {
    measures(rubric).iter().any(|m| {
        let Some(own) = m.points(mine) else {
            return false;
        };
        let mut theirs: Vec<f64> = others.iter().filter_map(|o| m.points(o)).collect();
        if m.options {
            most_common(&theirs).is_some_and(|common| !common.contains(&own))
        } else {
            median(&mut theirs).is_some_and(|mid| (own - mid).abs() > 1.0)
        }
    })
}

/// The values that occur most often (several on a tie); `None` for no values.
fn most_common(values: &[f64]) -> Option<Vec<f64>> {
    let count = |v: f64| values.iter().filter(|w| **w == v).count();
    let top = values.iter().map(|v| count(*v)).max()?;
    let mut common: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| count(*v) == top)
        .collect();
    common.dedup();
    Some(common)
}

/// One question's spread over a task's counted ratings.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct QuestionSpread {
    /// The answer's path, e.g. `sxs`.
    pub question: String,
    pub label: String,
    /// How many ratings answered it.
    pub answers: usize,
    pub lowest: f64,
    pub highest: f64,
    /// The lowest and highest answers by their labels.
    pub lowest_label: String,
    pub highest_label: String,
    /// Highest minus lowest, in points.
    pub spread: f64,
    /// The spread as a share of the question's range (0 to 1).
    pub share: f64,
}

/// Every compared question's spread over `sets` (the task's counted ratings), leaving
/// out questions fewer than two of them answered.
pub fn spreads(rubric: &Rubric, sets: &[&Answers]) -> Vec<QuestionSpread> {
    measures(rubric)
        .iter()
        .filter_map(|m| {
            let points: Vec<f64> = sets.iter().filter_map(|s| m.points(s)).collect();
            if points.len() < 2 {
                return None;
            }
            let lowest = points.iter().copied().fold(f64::INFINITY, f64::min);
            let highest = points.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let width = m.range.1 - m.range.0;
            let spread = highest - lowest;
            Some(QuestionSpread {
                question: m.slot.path(),
                label: m.slot.label().to_owned(),
                answers: points.len(),
                lowest,
                highest,
                lowest_label: m.label_of_points(lowest),
                highest_label: m.label_of_points(highest),
                spread,
                share: if width > 0.0 { spread / width } else { 0.0 },
            })
        })
        .collect()
}

/// The largest share of any question's spread: how a task is ranked.
pub fn largest_share(spreads: &[QuestionSpread]) -> f64 {
    spreads.iter().map(|s| s.share).fold(0.0, f64::max)
}

/// One answer of a rating's summary: the question and the answer's label.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Preview {
    pub question: String,
    pub answer: String,
}

/// How many answers a summary shows of a rubric with no preference or score.
const PREVIEW_FALLBACK: usize = 3;

/// A rating's main answers for a list: each preference and score, by label; for a
/// rubric with neither, its first few questions with options.
pub fn preview(rubric: &Rubric, answers: &Answers) -> Vec<Preview> {
    let mut slots: Vec<Slot<'_>> = measures(rubric).iter().map(|m| m.slot).collect();
    if slots.is_empty() {
        slots = rubric
            .slots()
            .into_iter()
            .filter(|s| !matches!(s, Slot::Asked { question, .. } if question.is_text()))
            .take(PREVIEW_FALLBACK)
            .collect();
    }
    slots
        .iter()
        .filter_map(|slot| {
            let value = slot.value(answers)?;
            Some(Preview {
                question: slot.label().to_owned(),
                answer: answer_label(slot, value),
            })
        })
        .collect()
}

/// How a stored answer reads: an option's label, otherwise the value itself.
pub fn answer_label(slot: &Slot<'_>, value: &Value) -> String {
    let label = match slot {
        Slot::Asked { question, .. } => question.label_of(value),
        Slot::Derived(_) => None,
    };
    match (label, value) {
        (Some(label), _) => label.to_owned(),
        (None, Value::String(s)) => s.clone(),
        (None, other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use verdict_core::rubric::by_name;

    fn set(value: Value) -> Answers {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_score_more_than_a_point_from_the_median_disagrees() {
        let blackhat = by_name("blackhat").unwrap();
        let (two, three, six) = (
            set(json!({"sxs": 2})),
            set(json!({"sxs": 3})),
            set(json!({"sxs": 6})),
        );
        assert!(disagrees(blackhat, &six, &[&two, &three]));
        assert!(!disagrees(blackhat, &three, &[&two]));
        assert!(!disagrees(blackhat, &two, &[]), "nobody to disagree with");
        assert!(
            !disagrees(blackhat, &set(json!({})), &[&two]),
            "no answer, no disagreement"
        );
    }

    #[test]
    fn an_option_none_of_the_most_common_disagrees() {
        let aspects = by_name("pairwise-aspects").unwrap();
        let a = set(json!({"helpfulness": "a"}));
        let b = set(json!({"helpfulness": "b"}));
        let tie = set(json!({"helpfulness": "tie"}));
        assert!(disagrees(aspects, &b, &[&a, &a]));
        assert!(disagrees(aspects, &tie, &[&a]));
        assert!(!disagrees(aspects, &a, &[&a, &b]), "a tie for most common");
    }

    #[test]
    fn spreads_measure_points_and_sides() {
        let aspects = by_name("pairwise-aspects").unwrap();
        let a = set(json!({"helpfulness": "a", "clarity": "tie"}));
        let b = set(json!({"helpfulness": "b", "clarity": "tie"}));
        let found = spreads(aspects, &[&a, &b]);
        assert_eq!(found[0].question, "helpfulness");
        assert_eq!((found[0].spread, found[0].share), (2.0, 1.0));
        assert_eq!(
            (
                found[0].lowest_label.as_str(),
                found[0].highest_label.as_str()
            ),
            ("A is better", "B is better")
        );
        assert_eq!(found[1].spread, 0.0);
        assert_eq!(largest_share(&found), 1.0);

        let additive = by_name("additive-5").unwrap();
        let found = spreads(
            additive,
            &[&set(json!({"score": 1})), &set(json!({"score": 4}))],
        );
        assert_eq!(
            (found[0].question.as_str(), found[0].spread),
            ("score", 3.0)
        );
        assert!((found[0].share - 0.6).abs() < 1e-9);
    }

    #[test]
    fn previews_read_labels() {
        let blackhat = by_name("blackhat").unwrap();
        let shown = preview(blackhat, &set(json!({"sxs": 2})));
        assert_eq!(shown[0].answer, "A better");
        let additive = by_name("additive-5").unwrap();
        assert_eq!(preview(additive, &set(json!({"score": 3})))[0].answer, "3");
        let plain = verdict_core::rubric::document::parse(
            r#"{"name": "plain", "title": "Plain", "subject": "single", "questions": [
                {"key": "note", "label": "Note", "answer": {"type": "text"}, "required": false},
                {"key": "tone", "label": "Tone", "answer": {"type": "choice", "options": [
                    {"value": "warm", "label": "Warm"}, {"value": "cold", "label": "Cold"}]},
                 "metrics": {"role": "nominal"}}]}"#,
        )
        .unwrap();
        let shown = preview(&plain, &set(json!({"note": "hi", "tone": "cold"})));
        assert_eq!(
            shown,
            [Preview {
                question: "Tone".into(),
                answer: "Cold".into()
            }]
        );
    }
}
