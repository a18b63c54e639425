//! Rater bias: how far each rater's answers follow something other than the responses'
//! merits, and the same for the batch as a whole. Read from counted ratings only (human,
//! rated, submitted or accepted), as every other figure.
//!
//! - Position lean: of the answers to the rubric's first preference question that choose
//!   a side, the share that chose the response shown first (0.5 = no lean).
//! - Length lean: of those answers on tasks whose two responses differ in length (in
//!   characters), the share that chose the longer one.
//! - Length-controlled preference, in the spirit of AlpacaEval's length-controlled win
//!   rate: a logistic regression of "prefers B" on how much longer B is, whose intercept
//!   gives the share that would prefer B were both responses the same length.
//! - Time against the guidance: the median active time, and the share of ratings that
//!   took longer than the 30 minutes a task should take.
//! - Straight-lining: per question with fixed answers, how often the rater gave their
//!   most common answer, as they were shown the task (`a.…` is the response shown first);
//!   a question is straight-lined when one answer was given to every one of at least
//!   [`MIN_N`] tasks.
//!
//! A share of fewer than [`MIN_N`] answers, and a fit of fewer than [`MIN_FIT`], are
//! reported as `null` beside their n: with so few, the number says more about chance than
//! about the rater.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::judges::Lean;
use super::stats::{self, Estimate, Histogram, Z95};
use crate::rubric::Favours;

/// Active seconds a task should take at most (the rater guidance's 30 minutes; the form
/// warns past it).
pub const GUIDANCE_S: i32 = 1800;

/// The fewest answers a share is reported for, and the fewest tasks a straight-lined
/// question is flagged on.
pub const MIN_N: u64 = 5;

/// The fewest decisive answers the length-controlled fit is made on.
pub const MIN_FIT: usize = 10;

/// One counted rating as the bias figures read it.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    /// The answer to the rubric's first preference question, read in the task's own
    /// orientation; `None` without such a question or an answer to it.
    pub preference: Option<Favours>,
    /// Whether B was shown first.
    pub swapped: bool,
    /// The two responses' lengths in characters, A then B.
    pub lengths: (i64, i64),
    pub time_spent_s: i32,
    /// The task's two models, when it names them.
    pub models: Option<(&'a str, &'a str)>,
    /// Per straight-lining question, the answer's code as the rater was shown the task
    /// (1 for the first option; 0 when not answered).
    pub shown: &'a [u8],
}

/// A question straight-lining looks at: its path as the rater saw it and each answer's
/// name, by code - 1.
#[derive(Debug, Clone)]
pub struct LineQuestion {
    pub path: String,
    pub names: Vec<String>,
}

/// The `bias` object of a batch's metrics.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Bias {
    /// The active time a task should take at most, in seconds.
    pub guidance_s: i32,
    pub batch: BatchBias,
    /// Each rater with counted ratings, by name.
    pub raters: Vec<RaterBias>,
    /// The length-controlled preference per pair of models, read with the first of the
    /// two by name as A (as the `models` table reads them); empty without a preference
    /// or without tasks that name their models.
    pub models: Vec<PairLengthControlled>,
}

/// The figures of the whole batch: every counted rating pooled.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BatchBias {
    pub rated: u64,
    /// Absent when the rubric asks no preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<Lean>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<Lean>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length_controlled: Option<LengthControlled>,
    pub time: TimeSpent,
    pub straight_lining: BatchStraightLining,
}

/// One rater's figures.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RaterBias {
    pub rater: String,
    /// Counted ratings.
    pub rated: u64,
    /// Of the rater's answers to the first preference that choose a side, the share for
    /// the response shown first, with a Wilson interval (absent when the rubric asks no
    /// preference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<Lean>,
    /// Of those answers on tasks whose responses differ in length, the share for the
    /// longer response, with a Wilson interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<Lean>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length_controlled: Option<LengthControlled>,
    pub time: TimeSpent,
    pub straight_lining: StraightLining,
}

/// The preference for B, raw and with the responses' lengths accounted for: a logistic
/// regression of "prefers B" on x = (length B - length A) / (length A + length B), over
/// the decisive answers to the first preference (in the task's own orientation).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LengthControlled {
    /// Decisive answers.
    pub n: u64,
    /// The share of them that prefer B, with a Wilson interval.
    pub prefers_b: Option<Estimate>,
    /// The share the fit predicts would prefer B were both responses the same length
    /// (sigmoid of the intercept), with the Wald 95% interval of the intercept mapped
    /// through the sigmoid. `null` for fewer than 10 answers, or when the answers can be
    /// split by length alone (the fit then has no finite answer).
    pub share: Option<Estimate>,
    /// The fit's length coefficient: the change in the log-odds of preferring B from
    /// equal lengths to B being the only text (x = 1), with its Wald 95% interval; above
    /// 0 means the longer response is preferred.
    pub length_coefficient: Option<Estimate>,
}

/// The length-controlled preference of one pair of models.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PairLengthControlled {
    pub model_a: String,
    pub model_b: String,
    pub length_controlled: LengthControlled,
}

/// Active time against the guidance.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TimeSpent {
    /// Counted ratings.
    pub n: u64,
    /// The median active time in seconds.
    pub median_s: Option<f64>,
    /// The share of ratings that took more than the guidance, with a Wilson interval.
    pub over_guidance: Option<Estimate>,
}

/// One rater's answers, question by question, for sameness.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StraightLining {
    /// Per question path, as the rater was shown the task (`a.…` is the response shown
    /// first).
    pub questions: BTreeMap<String, RepeatedAnswer>,
    /// The questions answered the same on every task, at least 5 of them, in the
    /// rubric's order.
    pub straight_lined: Vec<String>,
}

/// How often a rater gave their most common answer to one question.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RepeatedAnswer {
    /// Tasks the question was answered on.
    pub n: u64,
    /// The answer given most often (the first of the rubric's options on a tie).
    pub answer: String,
    /// Its share of the answers, with a Wilson interval.
    pub share: Option<Estimate>,
    /// The same answer on every task, at least 5 of them.
    pub straight: bool,
}

/// Straight-lining across the batch.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BatchStraightLining {
    /// Raters with at least 5 counted ratings: the ones straight-lining can be seen in.
    pub raters_checked: u64,
    /// Raters with at least one straight-lined question.
    pub raters_flagged: u64,
}

/// Decisive answers as the length-controlled fit reads them: per length feature, how
/// many answers there were and how many preferred B. Grouped, so that an answer can be
/// taken out again and the fit does not depend on the order answers came in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Points {
    /// By the feature's bits: (the feature, answers, of which prefer B).
    groups: BTreeMap<u64, (f64, u64, u64)>,
}

impl Points {
    /// The points `(x, prefers B)` grouped.
    pub fn of(points: &[(f64, bool)]) -> Self {
        let mut grouped = Self::default();
        for &(x, b) in points {
            grouped.change(x, b, true);
        }
        grouped
    }

    /// Adds or takes out one answer at `x`.
    pub fn change(&mut self, x: f64, prefers_b: bool, add: bool) {
        let group = self.groups.entry(x.to_bits()).or_insert((x, 0, 0));
        if add {
            group.1 += 1;
            group.2 += u64::from(prefers_b);
        } else {
            group.1 -= 1;
            group.2 -= u64::from(prefers_b);
        }
        if group.1 == 0 {
            self.groups.remove(&x.to_bits());
        }
    }

    /// Each group: the feature, answers, of which prefer B.
    fn iter(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        self.groups
            .values()
            .map(|&(x, n, b)| (x, n as f64, b as f64))
    }

    /// Answers, and those that prefer B.
    fn totals(&self) -> (u64, u64) {
        self.groups
            .values()
            .fold((0, 0), |(n, b), g| (n + g.1, b + g.2))
    }
}

/// What one rater's (or the batch's) ratings gather.
#[derive(Debug, Default)]
struct Tally {
    rated: u64,
    /// Decisive answers, and those for the response shown first.
    decisive: u64,
    shown_first: u64,
    /// Decisive answers on tasks of unequal lengths, and those for the longer response.
    unequal: u64,
    longer: u64,
    /// The decisive answers: the length feature and whether B was preferred.
    points: Points,
    times: Histogram,
    over: u64,
}

/// Adds 1 to `n`, or takes 1 away, when `when`.
fn count(n: &mut u64, when: bool, add: bool) {
    if when {
        if add {
            *n += 1;
        } else {
            *n -= 1;
        }
    }
}

impl Tally {
    /// Adds an observation, or takes out one added before.
    fn change(&mut self, o: &Observation<'_>, add: bool) {
        count(&mut self.rated, true, add);
        self.times.change(i64::from(o.time_spent_s), add);
        count(&mut self.over, o.time_spent_s > GUIDANCE_S, add);
        let Some(favours) = o.preference.filter(|f| *f != Favours::Tie) else {
            return;
        };
        count(&mut self.decisive, true, add);
        let first = super::as_shown(favours, o.swapped) == Favours::A;
        count(&mut self.shown_first, first, add);
        let (len_a, len_b) = o.lengths;
        if len_a != len_b {
            count(&mut self.unequal, true, add);
            count(
                &mut self.longer,
                (favours == Favours::A) == (len_a > len_b),
                add,
            );
        }
        self.points
            .change(length_feature(len_a, len_b), favours == Favours::B, add);
    }

    fn position(&self) -> Lean {
        lean(self.shown_first, self.decisive)
    }

    fn length(&self) -> Lean {
        lean(self.longer, self.unequal)
    }

    fn time(&self) -> TimeSpent {
        TimeSpent {
            n: self.rated,
            median_s: self.times.median(),
            over_guidance: gated_share(self.over, self.rated),
        }
    }
}

/// Gathers the bias figures from counted ratings, one at a time; a rating added can be
/// taken out again (when it changes).
#[derive(Debug)]
pub struct BiasTally {
    /// Whether the rubric asks a preference (else there is no lean to measure).
    preference: bool,
    questions: Vec<LineQuestion>,
    batch: Tally,
    raters: Vec<(String, Tally, Vec<Vec<u64>>)>,
    index: HashMap<String, usize>,
    /// Per unordered pair of models (the first by name as A): the length feature and
    /// whether the second was preferred.
    pairs: BTreeMap<(String, String), Points>,
}

impl BiasTally {
    /// For a rubric with (or without) a `preference`, straight-lining on `questions`
    /// (the codes of [`Observation::shown`] are theirs, in this order).
    pub fn new(preference: bool, questions: Vec<LineQuestion>) -> Self {
        Self {
            preference,
            questions,
            batch: Tally::default(),
            raters: Vec::new(),
            index: HashMap::new(),
            pairs: BTreeMap::new(),
        }
    }

    /// Adds one counted rating of `rater`.
    pub fn add(&mut self, rater: &str, o: &Observation<'_>) {
        self.change(rater, o, true);
    }

    /// Takes out a rating of `rater` added before, as it was then.
    pub fn remove(&mut self, rater: &str, o: &Observation<'_>) {
        self.change(rater, o, false);
    }

    fn change(&mut self, rater: &str, o: &Observation<'_>, add: bool) {
        let i = match self.index.get(rater) {
            Some(&i) => i,
            None => {
                let answers = self.questions.iter().map(|q| vec![0; q.names.len() + 1]);
                self.raters
                    .push((rater.to_owned(), Tally::default(), answers.collect()));
                self.index.insert(rater.to_owned(), self.raters.len() - 1);
                self.raters.len() - 1
            }
        };
        let (_, tally, answers) = &mut self.raters[i];
        tally.change(o, add);
        for (counts, &code) in answers.iter_mut().zip(o.shown) {
            if let Some(n) = counts.get_mut(usize::from(code)) {
                count(n, true, add);
            }
        }
        self.batch.change(o, add);
        if let (Some((a, b)), Some(favours)) = (o.models, o.preference)
            && favours != Favours::Tie
        {
            let x = length_feature(o.lengths.0, o.lengths.1);
            let prefers_b = favours == Favours::B;
            // One pair whichever way round a task had it: read with the first by name
            // as A, a task that had them the other way round is mirrored.
            let (key, (x, prefers_b)) = if a <= b {
                ((a, b), (x, prefers_b))
            } else {
                ((b, a), (-x, !prefers_b))
            };
            let key = (key.0.to_owned(), key.1.to_owned());
            let points = self.pairs.entry(key.clone()).or_default();
            points.change(x, prefers_b, add);
            if points.groups.is_empty() {
                self.pairs.remove(&key);
            }
        }
    }

    /// The figures: each rater with a counted rating, by name.
    pub fn finish(&self) -> Bias {
        let preference = self.preference;
        let mut raters: Vec<RaterBias> = self
            .raters
            .iter()
            .filter(|(_, tally, _)| tally.rated > 0)
            .map(|(name, tally, answers)| {
                let straight_lining = straight_lining(&self.questions, answers);
                RaterBias {
                    rater: name.clone(),
                    rated: tally.rated,
                    position: preference.then(|| tally.position()),
                    length: preference.then(|| tally.length()),
                    length_controlled: preference.then(|| length_controlled(&tally.points)),
                    time: tally.time(),
                    straight_lining,
                }
            })
            .collect();
        raters.sort_by(|x, y| x.rater.cmp(&y.rater));
        let checked = raters.iter().filter(|r| r.rated >= MIN_N).count() as u64;
        let flagged = raters
            .iter()
            .filter(|r| !r.straight_lining.straight_lined.is_empty())
            .count() as u64;
        let batch = &self.batch;
        let models = if preference {
            self.pairs
                .iter()
                .map(|((a, b), points)| PairLengthControlled {
                    model_a: a.clone(),
                    model_b: b.clone(),
                    length_controlled: length_controlled(points),
                })
                .collect()
        } else {
            Vec::new()
        };
        Bias {
            guidance_s: GUIDANCE_S,
            batch: BatchBias {
                rated: batch.rated,
                position: preference.then(|| batch.position()),
                length: preference.then(|| batch.length()),
                length_controlled: preference.then(|| length_controlled(&batch.points)),
                time: batch.time(),
                straight_lining: BatchStraightLining {
                    raters_checked: checked,
                    raters_flagged: flagged,
                },
            },
            raters,
            models,
        }
    }
}

/// The length feature of a task: (length B - length A) / (length A + length B), from -1
/// (only A has text) to 1 (only B has); 0 for two empty responses. Bounded, so that one
/// very long response cannot pull the fit on its own.
pub fn length_feature(len_a: i64, len_b: i64) -> f64 {
    let total = len_a + len_b;
    if total <= 0 {
        return 0.0;
    }
    (len_b - len_a) as f64 / total as f64
}

/// `k` of `n` as a lean: the share only from [`MIN_N`] answers.
fn lean(k: u64, n: u64) -> Lean {
    Lean {
        n,
        share: gated_share(k, n),
    }
}

/// The Wilson share `k / n`, or `None` below [`MIN_N`].
fn gated_share(k: u64, n: u64) -> Option<Estimate> {
    if n < MIN_N {
        return None;
    }
    stats::share(k, n)
}

/// The raw and length-controlled preference for B of decisive answers `points`.
pub fn length_controlled(points: &Points) -> LengthControlled {
    let (n, b) = points.totals();
    let fit = if n >= MIN_FIT as u64 {
        logistic(points)
    } else {
        None
    };
    LengthControlled {
        n,
        prefers_b: gated_share(b, n),
        share: fit.map(|f| Estimate {
            value: sigmoid(f.b0),
            low: sigmoid(f.b0 - Z95 * f.se0),
            high: sigmoid(f.b0 + Z95 * f.se0),
        }),
        length_coefficient: fit.map(|f| Estimate {
            value: f.b1,
            low: f.b1 - Z95 * f.se1,
            high: f.b1 + Z95 * f.se1,
        }),
    }
}

/// One rater's straight-lining from their answer counts per question (by code; code 0,
/// no answer, aside).
fn straight_lining(questions: &[LineQuestion], answers: &[Vec<u64>]) -> StraightLining {
    let mut out = StraightLining {
        questions: BTreeMap::new(),
        straight_lined: Vec::new(),
    };
    for (q, counts) in questions.iter().zip(answers) {
        let n: u64 = counts[1..].iter().sum();
        // The most common answer; on a tie, the first of the options.
        let Some((code, &most)) = counts
            .iter()
            .enumerate()
            .skip(1)
            .rev()
            .max_by_key(|(_, n)| **n)
            .filter(|_| n > 0)
        else {
            continue;
        };
        let straight = n >= MIN_N && most == n;
        if straight {
            out.straight_lined.push(q.path.clone());
        }
        out.questions.insert(
            q.path.clone(),
            RepeatedAnswer {
                n,
                answer: q.names[code - 1].clone(),
                share: gated_share(most, n),
                straight,
            },
        );
    }
    out
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// A fitted logistic regression `P(y) = sigmoid(b0 + b1 x)` with the standard errors of
/// its two coefficients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub b0: f64,
    pub b1: f64,
    pub se0: f64,
    pub se1: f64,
}

/// Most Newton steps tried before giving up; a fit that exists converges in well under
/// this (the log-likelihood is concave).
const MAX_STEPS: usize = 100;

/// The maximum-likelihood logistic regression of `y` on `x` with an intercept, by
/// Newton-Raphson (each step halved until the likelihood does not fall), with standard
/// errors from the inverse of the information matrix at the estimate (Wald).
///
/// Written here rather than taken from a crate: with two parameters the Newton step is a
/// 2x2 solve, a dozen lines, while the statistics crates that fit it bring a linear
/// algebra stack for what this needs.
///
/// `None` when no finite estimate exists: when the answers can be split by `x` alone
/// (all of one kind, or every `y` on one side of some length and every other `y` on the
/// other: separation, where the coefficients run off to infinity), when `x` does not
/// vary, or when the steps do not settle.
pub fn logistic(points: &Points) -> Option<Fit> {
    if separated(points) {
        return None;
    }
    let mut b = (0.0, 0.0);
    let mut ll = log_likelihood(points, b);
    for _ in 0..MAX_STEPS {
        let (g, info) = gradient_and_information(points, b);
        let (d0, d1) = solve(info, g)?;
        let mut step = 1.0;
        let mut next = (b.0 + d0, b.1 + d1);
        let mut next_ll = log_likelihood(points, next);
        while next_ll < ll && step > 1e-6 {
            step /= 2.0;
            next = (b.0 + step * d0, b.1 + step * d1);
            next_ll = log_likelihood(points, next);
        }
        let moved = (step * d0).abs().max((step * d1).abs());
        b = next;
        ll = next_ll;
        if moved < 1e-10 {
            let (_, info) = gradient_and_information(points, b);
            let (h00, h01, h11) = info;
            let det = h00 * h11 - h01 * h01;
            let fit = Fit {
                b0: b.0,
                b1: b.1,
                se0: (h11 / det).sqrt(),
                se1: (h00 / det).sqrt(),
            };
            let finite = [fit.b0, fit.b1, fit.se0, fit.se1]
                .iter()
                .all(|v| v.is_finite());
            return finite.then_some(fit);
        }
    }
    None
}

/// Whether some threshold on `x` splits the `y`s (allowing ties at the threshold), or
/// all `y` are the same: then the likelihood has no maximum. With one feature this is
/// exactly when the largest `x` of one kind is at most the smallest `x` of the other.
fn separated(points: &Points) -> bool {
    // The range of x over answers that prefer B (`true`) and over those that do not.
    let range = |kind: bool| {
        points
            .iter()
            .filter(|&(_, n, b)| if kind { b > 0.0 } else { n > b })
            .map(|(x, _, _)| x)
            .fold(None, |r: Option<(f64, f64)>, x| {
                Some(r.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
            })
    };
    match (range(false), range(true)) {
        (Some((lo0, hi0)), Some((lo1, hi1))) => hi0 <= lo1 || hi1 <= lo0,
        _ => true,
    }
}

fn log_likelihood(points: &Points, (b0, b1): (f64, f64)) -> f64 {
    points
        .iter()
        .map(|(x, n, b)| {
            let z = b0 + b1 * x;
            // log sigmoid(z) = -log(1 + e^-z), written to stay finite for large |z|.
            let log_p = -softplus(-z);
            let log_q = -softplus(z);
            b * log_p + (n - b) * log_q
        })
        .sum()
}

/// log(1 + e^z) without overflow.
fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// The score (gradient of the log-likelihood) and the information matrix (h00, h01, h11)
/// at `b`.
fn gradient_and_information(
    points: &Points,
    (b0, b1): (f64, f64),
) -> ((f64, f64), (f64, f64, f64)) {
    let (mut g0, mut g1, mut h00, mut h01, mut h11) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (x, n, b) in points.iter() {
        let p = sigmoid(b0 + b1 * x);
        let r = b - n * p;
        let w = n * p * (1.0 - p);
        g0 += r;
        g1 += r * x;
        h00 += w;
        h01 += w * x;
        h11 += w * x * x;
    }
    ((g0, g1), (h00, h01, h11))
}

/// Solves the 2x2 system `info · d = g`; `None` when `info` is (nearly) singular, as when
/// `x` does not vary.
fn solve((h00, h01, h11): (f64, f64, f64), (g0, g1): (f64, f64)) -> Option<(f64, f64)> {
    let det = h00 * h11 - h01 * h01;
    if !det.is_finite() || det <= 1e-12 * h00 * h11 {
        return None;
    }
    Some(((h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det))
}

#[cfg(test)]
mod tests;
