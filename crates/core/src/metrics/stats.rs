//! Small statistics: means with confidence intervals, Wilson intervals for shares, medians.

use std::collections::BTreeMap;

use serde::Serialize;

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A value with its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// Whole numbers and how often each was given: enough for a mean and a median, and a
/// value can be taken out again exactly, which a running sum of floats would not allow.
/// Figures from it do not depend on the order values came in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    counts: BTreeMap<i64, u64>,
    n: u64,
}

impl Histogram {
    pub fn add(&mut self, value: i64) {
        self.add_times(value, 1);
    }

    /// Adds `value` `times` times.
    pub fn add_times(&mut self, value: i64, times: u64) {
        if times > 0 {
            *self.counts.entry(value).or_default() += times;
            self.n += times;
        }
    }

    /// Takes out one `value` given before.
    pub fn remove(&mut self, value: i64) {
        if let Some(count) = self.counts.get_mut(&value) {
            *count -= 1;
            self.n -= 1;
            if *count == 0 {
                self.counts.remove(&value);
            }
        }
    }

    /// Adds or takes out one `value`.
    pub fn change(&mut self, value: i64, add: bool) {
        if add {
            self.add(value);
        } else {
            self.remove(value);
        }
    }

    /// How many values.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The mean with a normal-approximation 95% interval (sample standard deviation);
    /// `None` for no values. With one value the interval is the value itself.
    ///
    /// A pass over the values summing `(v - mean)^2` as they came (as this was once
    /// computed) rounds at every step, so its last digit depended on their order.
    pub fn mean(&self) -> Option<Estimate> {
        if self.n == 0 {
            return None;
        }
        let (mut sum, mut squares) = (0i128, 0i128);
        for (&v, &c) in &self.counts {
            sum += i128::from(v) * i128::from(c);
            squares += i128::from(v) * i128::from(v) * i128::from(c);
        }
        let n = self.n as f64;
        let mean = sum as f64 / n;
        if self.n < 2 {
            return Some(Estimate {
                value: mean,
                low: mean,
                high: mean,
            });
        }
        // The sum of squared deviations, (n * sum of squares - sum^2) / n, in whole
        // numbers: rounded once, and the same whatever order the values came in.
        let n_whole = i128::from(self.n);
        let var = (n_whole * squares - sum * sum) as f64 / (n * (n - 1.0));
        let half = Z95 * (var / n).sqrt();
        Some(Estimate {
            value: mean,
            low: mean - half,
            high: mean + half,
        })
    }

    /// The median; `None` for no values.
    pub fn median(&self) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        // The values at 0-based ranks (n - 1) / 2 and n / 2: the same one for odd n.
        let (lo, hi) = ((self.n - 1) / 2, self.n / 2);
        let (mut low, mut seen) = (None, 0u64);
        for (&v, &c) in &self.counts {
            seen += c;
            if low.is_none() && seen > lo {
                low = Some(v);
            }
            if seen > hi {
                let low = low.unwrap_or(v);
                return Some((low as f64 + v as f64) / 2.0);
            }
        }
        None
    }
}

/// The share `k / n` with its Wilson score 95% interval; `None` when `n` is 0.
pub fn share(k: u64, n: u64) -> Option<Estimate> {
    if n == 0 {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Estimate {
        value: p,
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
    })
}

/// The median; `None` for no values.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 0 {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// The middle of a set of answers, as one of the answers: a consensus of raters (or of
/// judges) on an ordered question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Middle<T> {
    /// The median, when the count is odd or the two middle answers are the same.
    One(T),
    /// The two middle answers of an even count, when they differ: no answer is the
    /// median, and neither is preferred to the other.
    Tied(T, T),
}

impl<T> Middle<T> {
    /// The one answer, if there is one.
    pub fn one(self) -> Option<T> {
        match self {
            Self::One(answer) => Some(answer),
            Self::Tied(..) => None,
        }
    }
}

/// The middle of `answers` (sorted in place), as one of them: the rule for what an
/// ordered question's answers come to, for raters' aggregates and judges' consensus
/// alike; `None` for no answers.
pub fn middle<T: Ord + Copy>(answers: &mut [T]) -> Option<Middle<T>> {
    if answers.is_empty() {
        return None;
    }
    answers.sort_unstable();
    let n = answers.len();
    let (low, high) = (answers[(n - 1) / 2], answers[n / 2]);
    Some(if low == high {
        Middle::One(high)
    } else {
        Middle::Tied(low, high)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_middle_is_an_answer_or_a_tie_of_two() {
        assert_eq!(middle(&mut [5, 1, 3]), Some(Middle::One(3)));
        assert_eq!(middle(&mut [5, 5, 1, 7]), Some(Middle::One(5)));
        assert_eq!(middle(&mut [2, 6]), Some(Middle::Tied(2, 6)));
        assert_eq!(middle(&mut [4]), Some(Middle::One(4)));
        assert_eq!(middle::<i64>(&mut []), None);
        assert_eq!(Middle::Tied(1, 2).one(), None);
    }

    #[test]
    fn mean_interval_matches_the_textbook_formula() {
        let mut h = Histogram::default();
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            h.add(v);
        }
        let e = h.mean().unwrap();
        assert_eq!(e.value, 5.0);
        // sample sd = sqrt(32/7); half-width = 1.96 * sd / sqrt(8)
        let half = Z95 * (32.0f64 / 7.0 / 8.0).sqrt();
        assert!((e.high - 5.0 - half).abs() < 1e-12 && (5.0 - e.low - half).abs() < 1e-12);
        assert_eq!(Histogram::default().mean(), None);
    }

    #[test]
    fn wilson_interval_stays_inside_zero_and_one() {
        let e = share(0, 10).unwrap();
        assert_eq!((e.value, e.low), (0.0, 0.0));
        assert!(e.high > 0.2 && e.high < 0.35, "{e:?}");
        let half = share(50, 100).unwrap();
        assert!(
            (half.low - 0.4038).abs() < 1e-3 && (half.high - 0.5962).abs() < 1e-3,
            "{half:?}"
        );
        assert_eq!(share(1, 0), None);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn a_histogram_gives_the_median_of_its_values_and_forgets_what_is_taken_out() {
        let mut h = Histogram::default();
        for v in [3, 1, 2] {
            h.add(v);
        }
        assert_eq!(h.median(), Some(2.0));
        h.add(4);
        assert_eq!(h.median(), Some(2.5));
        h.remove(1);
        h.remove(4);
        assert_eq!((h.median(), h.len()), (Some(2.5), 2));
        h.remove(2);
        h.remove(3);
        assert_eq!((h.median(), h.mean(), h.is_empty()), (None, None, true));
        assert_eq!(h, Histogram::default(), "nothing left behind");
    }
}
