//! How accurately each rater answers the batch's gold tasks: the share of graded gold
//! ratings with every expected answer right, with a Wilson interval, and the recent
//! trend (their latest [`RECENT`] grades, oldest first, and the accuracy over them).
//! Gold ratings count in no other figure of the batch.

use serde::Serialize;

use super::stats::{Estimate, share};
use crate::gold::{self, Grade, RECENT};

#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct GoldMetrics {
    /// Gold tasks in the batch.
    pub tasks: i64,
    /// The share of raters' new assignments that are gold tasks.
    pub rate: f64,
    /// The accuracy below which a rater's new ratings go to review first.
    pub review_first_below: Option<f64>,
    /// Submitted ratings waiting for review first.
    pub held: i64,
    /// Each rater with a graded gold rating, by name.
    pub raters: Vec<RaterGold>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RaterGold {
    pub rater: String,
    /// Graded gold ratings, and those with every expected answer right.
    pub graded: u64,
    pub passed: u64,
    /// `passed / graded` with its Wilson 95% interval.
    pub accuracy: Estimate,
    /// The latest grades, oldest first: `true` passed.
    pub recent: Vec<bool>,
    /// The accuracy over `recent`.
    pub recent_accuracy: f64,
    /// Expected answers given right of those expected, over every graded rating.
    pub answers_right: u64,
    pub answers_expected: u64,
    /// Whether the batch's threshold now sends the rater's new ratings to review first.
    pub review_first: bool,
}

/// The figures from graded ratings `(rater, grade)`, grouped by rater and oldest first
/// within each.
pub fn figures(
    grades: &[(String, Grade)],
    tasks: i64,
    rate: f64,
    review_first_below: Option<f64>,
    held: i64,
) -> GoldMetrics {
    let mut raters = Vec::new();
    for group in grades.chunk_by(|a, b| a.0 == b.0) {
        let all: Vec<&Grade> = group.iter().map(|(_, g)| g).collect();
        let passed = all.iter().filter(|g| g.passed()).count();
        let latest = &all[all.len().saturating_sub(RECENT)..];
        let recent: Vec<bool> = latest.iter().map(|g| g.passed()).collect();
        let recent_passed = recent.iter().filter(|p| **p).count();
        let held = review_first_below.is_some_and(|t| gold::below(recent_passed, recent.len(), t));
        let (graded, passed) = (all.len() as u64, passed as u64);
        let Some(accuracy) = share(passed, graded) else {
            continue;
        };
        raters.push(RaterGold {
            rater: group[0].0.clone(),
            graded,
            passed,
            accuracy,
            recent_accuracy: recent_passed as f64 / recent.len() as f64,
            recent,
            answers_right: all.iter().map(|g| g.right as u64).sum(),
            answers_expected: all.iter().map(|g| g.expected as u64).sum(),
            review_first: held,
        });
    }
    GoldMetrics {
        tasks,
        rate,
        review_first_below,
        held,
        raters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grade(passed: bool) -> Grade {
        Grade {
            right: usize::from(passed) + 1,
            expected: 2,
            wrong: if passed { vec![] } else { vec!["sxs".into()] },
        }
    }

    #[test]
    fn accuracy_interval_and_trend_per_rater() {
        // ana: 12 graded, the first two wrong, then ten right; bo: 3 graded, 1 right.
        let mut grades: Vec<(String, Grade)> =
            (0..12).map(|i| ("ana".to_owned(), grade(i >= 2))).collect();
        grades.extend([true, false, false].map(|p| ("bo".to_owned(), grade(p))));
        let figures = figures(&grades, 5, 0.1, Some(0.5), 2);
        let [ana, bo] = &figures.raters[..] else {
            panic!("two raters")
        };
        assert_eq!((ana.graded, ana.passed), (12, 10));
        assert!((ana.accuracy.value - 10.0 / 12.0).abs() < 1e-12);
        // Wilson 95% for 10/12, by hand: centre 0.7328, half 0.1986.
        assert!(
            (ana.accuracy.low - 0.5520).abs() < 1e-3,
            "{}",
            ana.accuracy.low
        );
        assert!(
            (ana.accuracy.high - 0.9530).abs() < 1e-3,
            "{}",
            ana.accuracy.high
        );
        assert_eq!(
            ana.recent,
            vec![true; 10],
            "the latest ten, the misses before them"
        );
        assert!((ana.recent_accuracy - 1.0).abs() < 1e-12);
        assert_eq!((ana.answers_right, ana.answers_expected), (22, 24));
        assert!(!ana.review_first);
        assert_eq!(bo.recent, vec![true, false, false]);
        assert!(bo.review_first, "1 of 3 is below 0.5");
        assert_eq!((figures.tasks, figures.held), (5, 2));
    }

    #[test]
    fn too_few_grades_hold_no_one() {
        let grades = vec![
            ("cy".to_owned(), grade(false)),
            ("cy".to_owned(), grade(false)),
        ];
        let figures = figures(&grades, 2, 1.0, Some(0.9), 0);
        assert!(!figures.raters[0].review_first);
        assert_eq!(figures.raters[0].accuracy.value, 0.0);
    }
}
