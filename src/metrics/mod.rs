//! A batch's metrics, computed from its ratings one row at a time.
//!
//! Only ratings with outcome `rated` and status `submitted` or `accepted` are included.
//! Every other rating is excluded from every figure and counted under one reason:
//! draft, skipped, out of scope, rejected or returned (in that order of precedence).
//! Answers are read in the task's canonical orientation.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::lifecycle::{Exclusion, Outcome, Status};
use crate::rubric::{Role, Rubric, Slot};

pub mod agreement;
pub mod bradley_terry;
pub mod stats;

use agreement::Agreement;
use stats::Estimate;

/// What the metrics need of one rating.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RatingFacts {
    pub task_id: Uuid,
    pub rater: String,
    pub outcome: Outcome,
    pub status: Status,
    /// The answers as JSON text (canonical orientation).
    pub answers: String,
    pub swapped: bool,
    pub time_spent_s: i32,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
}

impl RatingFacts {
    /// Whether it counts in metrics.
    pub fn included(&self) -> bool {
        crate::lifecycle::counts_in_metrics(self.outcome, self.status)
    }
}

#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Counts {
    pub tasks: i64,
    /// Every rating, drafts included.
    pub ratings: u64,
    pub included: u64,
    pub excluded: u64,
    pub drafts: u64,
    pub skipped: u64,
    pub out_of_scope: u64,
    pub rejected: u64,
    pub returned: u64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SxsSummary {
    pub n: u64,
    pub mean: Option<Estimate>,
    /// Ratings per score, "1" to "7".
    pub distribution: BTreeMap<String, u64>,
    /// Shares of scores 1-3 (A better), 4 (tie) and 5-7 (B better), with Wilson intervals.
    pub a_wins: Option<Estimate>,
    pub ties: Option<Estimate>,
    pub b_wins: Option<Estimate>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RaterStats {
    pub rater: String,
    pub included: u64,
    pub median_time_s: Option<f64>,
    /// Of the rater's finished work (drafts aside).
    pub skip_rate: Option<f64>,
    pub out_of_scope_rate: Option<f64>,
    /// Share of equal side-by-side scores when paired with other raters on a task.
    pub agreement_with_others: Option<f64>,
    /// Those pairs.
    pub pairs_with_others: u64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Side {
    pub n: u64,
    /// Mean canonical score.
    pub mean: Option<f64>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PositionBias {
    /// Ratings where A was shown first.
    pub not_swapped: Side,
    /// Ratings where B was shown first.
    pub swapped: Side,
    /// The mean score as the raters saw it (4 = no lean; below 4 = a lean to whatever
    /// was shown first).
    pub shown_mean: Option<Estimate>,
}

/// One pair of models, whichever way round the tasks had them: `model_a` is the first of
/// the two by name, and every score is read as if that model had been response A.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ModelPair {
    pub model_a: String,
    pub model_b: String,
    pub n: u64,
    pub a_wins: u64,
    pub ties: u64,
    pub b_wins: u64,
    /// Mean side-by-side score (1 = `model_a` much better), with a 95% interval.
    pub mean: Option<Estimate>,
    /// Shares of wins and ties, with Wilson intervals.
    pub a_win_share: Option<Estimate>,
    pub tie_share: Option<Estimate>,
    pub b_win_share: Option<Estimate>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Models {
    pub pairs: Vec<ModelPair>,
    /// Present when more than two models are compared.
    pub ranking: Option<Vec<bradley_terry::Ranked>>,
}

/// The rubric version a batch's ratings were made under.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RubricRef {
    pub name: String,
    pub version: i32,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Metrics {
    pub rubric: RubricRef,
    pub counts: Counts,
    pub sxs: SxsSummary,
    /// Per question (`a.correctness`, ..., and the batch's classifications as
    /// `classifications.<key>`): answers per option.
    pub fields: BTreeMap<String, BTreeMap<String, u64>>,
    pub agreement: BTreeMap<String, Agreement>,
    pub raters: Vec<RaterStats>,
    pub position_bias: PositionBias,
    pub models: Models,
}

/// One answer as metrics see it: where it sits and how it is coded.
struct Question {
    path: String,
    side: Option<&'static str>,
    key: String,
    /// Each answer as it appears in stored JSON text (`"no_issues"`, `3`, `true`), by
    /// code - 1.
    texts: Vec<String>,
    /// Each answer's name in the distribution, by code - 1.
    names: Vec<String>,
    /// Codes left out of agreement (N/A, cannot assess).
    unscaled: Vec<bool>,
    /// For a scale: its lowest value (code 1) and highest.
    min: i64,
    max: i64,
    level: agreement::Level,
    /// For a preference on a scale: the score that means "about the same".
    midpoint: Option<i64>,
}

impl Question {
    /// The answer of `slot` as metrics read it, if its role puts it in metrics.
    fn new(rubric: &Rubric, slot: Slot<'_>) -> Option<Self> {
        let role = slot.metrics()?;
        let values: Vec<serde_json::Value> = match slot {
            Slot::Asked { question, .. } => {
                question.options().into_iter().map(|(v, _)| v).collect()
            }
            Slot::Derived(d) => {
                let (low, high) = d.range(rubric);
                (low..=high).map(serde_json::Value::from).collect()
            }
        };
        let texts: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let names: Vec<String> = values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect();
        let (unscaled_values, level, midpoint): (&[serde_json::Value], _, _) = match role {
            Role::Preference {
                midpoint: Some(m), ..
            } => (&[], agreement::Level::Ordinal, Some(*m)),
            Role::Preference { .. } => (&[], agreement::Level::Nominal, None),
            Role::Ordinal { unscaled } => (unscaled, agreement::Level::Ordinal, None),
            Role::Nominal { unscaled } => (unscaled, agreement::Level::Nominal, None),
            Role::Score => (&[], agreement::Level::Interval, None),
        };
        let unscaled = values.iter().map(|v| unscaled_values.contains(v)).collect();
        let (min, max) = match values.first().zip(values.last()) {
            Some((low, high)) => (low.as_i64().unwrap_or(1), high.as_i64().unwrap_or(0)),
            None => (1, 0),
        };
        Some(Self {
            path: slot.path(),
            side: slot.side().map(crate::rubric::Side::key),
            key: slot.key().to_owned(),
            texts,
            names,
            unscaled,
            min,
            max,
            level,
            midpoint,
        })
    }

    /// The answer's code: 1 for the first option (or the scale's lowest value), 0 when
    /// missing or not one of the options.
    fn code(&self, raw: &RawValue) -> u8 {
        let text = raw.get();
        self.texts
            .iter()
            .position(|t| t == text)
            .map_or(0, |i| i as u8 + 1)
    }

    fn level(&self) -> agreement::Level {
        self.level
    }
}

type RawMap<'a> = HashMap<&'a str, &'a RawValue>;

/// Folds rating rows into metrics. Per included rating it keeps a few bytes (task,
/// rater, one code per question); agreement is built at the end, task by task.
pub struct Accumulator {
    rubric: RubricRef,
    questions: Vec<Question>,
    counts: Counts,
    /// Per question, per code (index 0 unused): how often it was given.
    tallies: Vec<Vec<u64>>,
    task_index: HashMap<Uuid, u32>,
    /// For each included rating: (task, rater), and its codes in `codes`.
    keys: Vec<(u32, u32)>,
    codes: Vec<u8>,
    raters: Vec<RaterTally>,
    rater_index: HashMap<String, u32>,
    /// Position of the side-by-side score among the questions.
    sxs: Option<usize>,
    shown_scores: Vec<f64>,
    by_swap: [(u64, f64); 2],
    /// Per unordered pair of models (by name), the scores read with the first as A.
    model_pairs: BTreeMap<(String, String), Vec<f64>>,
    /// The batch's classification questions, and per question how often each option
    /// was chosen.
    classifications: Vec<crate::rubric::Classification>,
    class_tallies: Vec<Vec<u64>>,
}

#[derive(Default)]
struct RaterTally {
    name: String,
    included: u64,
    finished: u64,
    skipped: u64,
    out_of_scope: u64,
    times: Vec<f64>,
}

impl Accumulator {
    /// Metrics of a batch using `rubric`, with its `classifications` questions.
    pub fn new(
        rubric: &Rubric,
        version: i32,
        classifications: &[crate::rubric::Classification],
    ) -> Self {
        let questions: Vec<Question> = rubric
            .slots()
            .into_iter()
            .filter_map(|slot| Question::new(rubric, slot))
            .collect();
        let tallies = questions
            .iter()
            .map(|q| vec![0; q.names.len() + 1])
            .collect();
        // The side-by-side score: the rubric's preference asked on a scale.
        let sxs = questions
            .iter()
            .position(|q| q.side.is_none() && q.midpoint.is_some());
        Self {
            rubric: RubricRef {
                name: rubric.name.clone(),
                version,
            },
            questions,
            counts: Counts::default(),
            tallies,
            task_index: HashMap::new(),
            keys: Vec::new(),
            codes: Vec::new(),
            raters: Vec::new(),
            rater_index: HashMap::new(),
            sxs,
            shown_scores: Vec::new(),
            by_swap: [(0, 0.0); 2],
            model_pairs: BTreeMap::new(),
            class_tallies: classifications
                .iter()
                .map(|q| vec![0; q.options.len()])
                .collect(),
            classifications: classifications.to_vec(),
        }
    }

    /// Counts the options chosen for each classification question (one, or several).
    fn classify(&mut self, given: Option<&&RawValue>) {
        let Some(given) = given else { return };
        let Ok(answers) = serde_json::from_str::<HashMap<String, serde_json::Value>>(given.get())
        else {
            return;
        };
        for (q, tally) in self.classifications.iter().zip(&mut self.class_tallies) {
            let chosen: Vec<&str> = match answers.get(&q.key) {
                Some(serde_json::Value::String(one)) => vec![one.as_str()],
                Some(serde_json::Value::Array(many)) => {
                    many.iter().filter_map(|v| v.as_str()).collect()
                }
                _ => continue,
            };
            for option in chosen {
                if let Some(i) = q.options.iter().position(|o| o == option) {
                    tally[i] += 1;
                }
            }
        }
    }

    fn rater(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.rater_index.get(name) {
            return i;
        }
        self.raters.push(RaterTally {
            name: name.to_owned(),
            ..RaterTally::default()
        });
        let i = (self.raters.len() - 1) as u32;
        self.rater_index.insert(name.to_owned(), i);
        i
    }

    pub fn add(&mut self, row: &RatingFacts) {
        self.counts.ratings += 1;
        let rater = self.rater(&row.rater);
        let tally = &mut self.raters[rater as usize];
        if !row.status.is_draft() {
            tally.finished += 1;
            tally.skipped += u64::from(row.outcome == Outcome::Skipped);
            tally.out_of_scope += u64::from(row.outcome == Outcome::OutOfScope);
        }
        let c = &mut self.counts;
        if let Some(reason) = crate::lifecycle::exclusion(row.outcome, row.status) {
            c.excluded += 1;
            match reason {
                Exclusion::Draft => c.drafts += 1,
                Exclusion::Skipped => c.skipped += 1,
                Exclusion::OutOfScope => c.out_of_scope += 1,
                Exclusion::Rejected => c.rejected += 1,
                Exclusion::Returned => c.returned += 1,
            }
            return;
        }
        c.included += 1;
        tally.included += 1;
        tally.times.push(f64::from(row.time_spent_s));
        let next = self.task_index.len() as u32;
        let task = *self.task_index.entry(row.task_id).or_insert(next);
        self.keys.push((task, rater));
        // Answers are read without building a JSON tree: only the keys and raw values.
        let top: RawMap = serde_json::from_str(&row.answers).unwrap_or_default();
        let side = |name: &str| -> RawMap {
            top.get(name)
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or_default()
        };
        let (a, b) = (side("a"), side("b"));
        self.classify(top.get("classifications"));
        for (i, q) in self.questions.iter().enumerate() {
            let map = match q.side {
                Some("a") => &a,
                Some(_) => &b,
                None => &top,
            };
            let code = map.get(q.key.as_str()).map_or(0, |raw| q.code(raw));
            self.tallies[i][usize::from(code)] += 1;
            self.codes.push(code);
        }
        let Some(score) = self
            .sxs
            .map(|i| self.codes[self.codes.len() - self.questions.len() + i])
        else {
            return;
        };
        if score == 0 {
            return;
        }
        let (min, max, _) = self.scale();
        let mirror = |s: i64| min + max - s;
        let score = i64::from(score) + min - 1;
        let shown = if row.swapped { mirror(score) } else { score };
        self.shown_scores.push(shown as f64);
        let side = &mut self.by_swap[usize::from(row.swapped)];
        side.0 += 1;
        side.1 += score as f64;
        if let (Some(a), Some(b)) = (&row.model_a, &row.model_b) {
            // One row per pair whichever way round a task had it: the first by name is A.
            let (key, read) = if a <= b {
                ((a, b), score)
            } else {
                ((b, a), mirror(score))
            };
            match self.model_pairs.get_mut(&(key.0.clone(), key.1.clone())) {
                Some(scores) => scores.push(read as f64),
                None => {
                    self.model_pairs
                        .insert((key.0.clone(), key.1.clone()), vec![read as f64]);
                }
            }
        }
    }

    /// The side-by-side scale: its lowest and highest score and its midpoint.
    fn scale(&self) -> (i64, i64, f64) {
        self.sxs.map_or((1, 0, 0.0), |i| {
            let q = &self.questions[i];
            (q.min, q.max, q.midpoint.unwrap_or(q.min) as f64)
        })
    }

    pub fn finish(mut self, tasks: i64) -> Metrics {
        self.counts.tasks = tasks;
        let nq = self.questions.len();
        // Agreement, task by task: order the ratings by task and walk the groups.
        let mut order: Vec<u32> = (0..self.keys.len() as u32).collect();
        order.sort_unstable_by_key(|&i| self.keys[i as usize].0);
        let mut builders: Vec<agreement::Builder> = self
            .questions
            .iter()
            .map(|q| agreement::Builder::new((1..=q.names.len() as i64).collect(), q.level()))
            .collect();
        let mut pairs = vec![(0u64, 0u64); self.raters.len()];
        let mut values = Vec::new();
        for group in order.chunk_by(|&x, &y| self.keys[x as usize].0 == self.keys[y as usize].0) {
            for (qi, (q, builder)) in self.questions.iter().zip(builders.iter_mut()).enumerate() {
                values.clear();
                for &r in group {
                    let code = self.codes[r as usize * nq + qi];
                    if code > 0 && !q.unscaled[usize::from(code) - 1] {
                        values.push(usize::from(code) - 1);
                    }
                }
                builder.add_unit(&values);
            }
            if let Some(si) = self.sxs {
                for (i, &x) in group.iter().enumerate() {
                    for &y in &group[i + 1..] {
                        let (sx, sy) = (
                            self.codes[x as usize * nq + si],
                            self.codes[y as usize * nq + si],
                        );
                        if sx == 0 || sy == 0 {
                            continue;
                        }
                        for r in [self.keys[x as usize].1, self.keys[y as usize].1] {
                            pairs[r as usize].0 += 1;
                            pairs[r as usize].1 += u64::from(sx == sy);
                        }
                    }
                }
            }
        }
        let agreement = self
            .questions
            .iter()
            .zip(&builders)
            .map(|(q, b)| (q.path.clone(), b.finish()))
            .collect();
        let mut fields: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (q, tally) in self.questions.iter().zip(&self.tallies) {
            for (code, &n) in tally.iter().enumerate().skip(1) {
                if n > 0 {
                    fields
                        .entry(q.path.clone())
                        .or_default()
                        .insert(q.names[code - 1].clone(), n);
                }
            }
        }
        for (q, tally) in self.classifications.iter().zip(&self.class_tallies) {
            let counted: BTreeMap<String, u64> = q
                .options
                .iter()
                .zip(tally)
                .filter(|(_, n)| **n > 0)
                .map(|(o, n)| (o.clone(), *n))
                .collect();
            if !counted.is_empty() {
                fields.insert(format!("classifications.{}", q.key), counted);
            }
        }
        let scores: Vec<f64> = match self.sxs {
            Some(si) => self
                .codes
                .chunks(nq)
                .filter(|c| c[si] > 0)
                .map(|c| f64::from(c[si]) + self.questions[si].min as f64 - 1.0)
                .collect(),
            None => vec![],
        };
        let n = scores.len() as u64;
        let (min, max, mid) = self.scale();
        let mut distribution: BTreeMap<String, u64> =
            (min..=max).map(|s| (s.to_string(), 0)).collect();
        let (mut a, mut t, mut b) = (0, 0, 0);
        for &s in &scores {
            *distribution.entry((s as i64).to_string()).or_default() += 1;
            if s < mid {
                a += 1;
            } else if s == mid {
                t += 1;
            } else {
                b += 1;
            }
        }
        let sxs = SxsSummary {
            n,
            mean: stats::mean(&scores),
            distribution,
            a_wins: stats::share(a, n),
            ties: stats::share(t, n),
            b_wins: stats::share(b, n),
        };
        let raters = self
            .raters
            .iter_mut()
            .zip(pairs)
            .map(|(r, (total, equal))| RaterStats {
                rater: r.name.clone(),
                included: r.included,
                median_time_s: stats::median(&mut r.times),
                skip_rate: (r.finished > 0).then(|| r.skipped as f64 / r.finished as f64),
                out_of_scope_rate: (r.finished > 0)
                    .then(|| r.out_of_scope as f64 / r.finished as f64),
                agreement_with_others: (total > 0).then(|| equal as f64 / total as f64),
                pairs_with_others: total,
            })
            .collect();
        let side = |(n, sum): (u64, f64)| Side {
            n,
            mean: (n > 0).then(|| sum / n as f64),
        };
        let position_bias = PositionBias {
            not_swapped: side(self.by_swap[0]),
            swapped: side(self.by_swap[1]),
            shown_mean: stats::mean(&self.shown_scores),
        };
        let pairs: Vec<ModelPair> = self
            .model_pairs
            .iter()
            .map(|((a, b), scores)| {
                let n = scores.len() as u64;
                let count =
                    |keep: &dyn Fn(f64) -> bool| scores.iter().filter(|s| keep(**s)).count() as u64;
                let (aw, t, bw) = (
                    count(&|s| s < mid),
                    count(&|s| s == mid),
                    count(&|s| s > mid),
                );
                ModelPair {
                    model_a: a.clone(),
                    model_b: b.clone(),
                    n,
                    a_wins: aw,
                    ties: t,
                    b_wins: bw,
                    mean: stats::mean(scores),
                    a_win_share: stats::share(aw, n),
                    tie_share: stats::share(t, n),
                    b_win_share: stats::share(bw, n),
                }
            })
            .collect();
        let mut names: Vec<String> = pairs
            .iter()
            .flat_map(|p| [p.model_a.clone(), p.model_b.clone()])
            .collect();
        names.sort();
        names.dedup();
        let ranking = (names.len() > 2).then(|| {
            let index = |m: &str| {
                names
                    .binary_search_by(|n| n.as_str().cmp(m))
                    .expect("known model")
            };
            let mut wins = vec![vec![0.0; names.len()]; names.len()];
            for p in &pairs {
                let (i, j) = (index(&p.model_a), index(&p.model_b));
                wins[i][j] += p.a_wins as f64 + p.ties as f64 / 2.0;
                wins[j][i] += p.b_wins as f64 + p.ties as f64 / 2.0;
            }
            bradley_terry::rank(&names, &wins)
        });
        Metrics {
            rubric: self.rubric,
            counts: self.counts,
            sxs,
            fields,
            agreement,
            raters,
            position_bias,
            models: Models { pairs, ranking },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::rubric::by_name;

    fn row(
        task: u128,
        rater: &str,
        outcome: &str,
        status: &str,
        answers: Value,
        swapped: bool,
    ) -> RatingFacts {
        RatingFacts {
            task_id: Uuid::from_u128(task),
            rater: rater.into(),
            outcome: outcome.parse().unwrap(),
            status: status.parse().unwrap(),
            answers: answers.to_string(),
            swapped,
            time_spent_s: 60,
            model_a: Some("m1".into()),
            model_b: Some("m2".into()),
        }
    }

    fn scored(s: i64) -> Value {
        json!({"a": {"correctness": "no_issues", "executability": "yes_fully"},
               "b": {"correctness": "major_issues", "executability": "no"}, "sxs": s})
    }

    #[test]
    fn only_submitted_or_accepted_rated_ratings_count() {
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
        acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
        acc.add(&row(1, "r2", "rated", "accepted", scored(2), false));
        for (outcome, status) in [
            ("rated", "draft"),
            ("skipped", "submitted"),
            ("out_of_scope", "submitted"),
            ("rated", "rejected"),
            ("rated", "returned"),
            ("out_of_scope", "accepted"),
        ] {
            acc.add(&row(2, "r3", outcome, status, scored(7), false));
        }
        let m = acc.finish(2);
        let c = &m.counts;
        assert_eq!((c.ratings, c.included, c.excluded), (8, 2, 6));
        assert_eq!(
            (c.drafts, c.skipped, c.out_of_scope, c.rejected, c.returned),
            (1, 1, 2, 1, 1)
        );
        assert_eq!(
            c.drafts + c.skipped + c.out_of_scope + c.rejected + c.returned,
            c.excluded
        );
        assert_eq!(m.sxs.n, 2, "no excluded score leaks in");
        assert_eq!(m.sxs.distribution["7"], 0);
        assert_eq!(m.fields["a.correctness"]["no_issues"], 2);
    }

    #[test]
    fn position_bias_compares_canonical_means_and_the_shown_lean() {
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
        // Every rater prefers what is shown first (shown 2): canonical 2 or 6.
        acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
        acc.add(&row(2, "r1", "rated", "submitted", scored(6), true));
        let m = acc.finish(2);
        assert_eq!(m.position_bias.not_swapped.mean, Some(2.0));
        assert_eq!(m.position_bias.swapped.mean, Some(6.0));
        assert_eq!(m.position_bias.shown_mean.unwrap().value, 2.0);
        assert_eq!(m.sxs.mean.unwrap().value, 4.0);
    }

    #[test]
    fn unscaled_answers_are_missing_for_agreement() {
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
        let na = json!({"a": {"correctness": "cannot_assess"}, "sxs": 4});
        acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
        acc.add(&row(1, "r2", "rated", "submitted", na, false));
        let m = acc.finish(1);
        assert_eq!(
            m.agreement["a.correctness"].units, 0,
            "cannot_assess is not on the scale"
        );
        assert_eq!(m.agreement["sxs"].units, 1);
        assert_eq!(
            m.fields["a.correctness"]["cannot_assess"], 1,
            "but it is in the distribution"
        );
    }

    #[test]
    fn raters_agreement_with_others_and_model_pairs() {
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
        acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
        acc.add(&row(1, "r2", "rated", "submitted", scored(2), false));
        acc.add(&row(1, "r3", "rated", "submitted", scored(5), false));
        acc.add(&row(2, "r3", "skipped", "submitted", json!({}), false));
        let m = acc.finish(2);
        let r1 = m.raters.iter().find(|r| r.rater == "r1").unwrap();
        assert_eq!(
            (r1.pairs_with_others, r1.agreement_with_others),
            (2, Some(0.5))
        );
        let r3 = m.raters.iter().find(|r| r.rater == "r3").unwrap();
        assert_eq!(
            (r3.agreement_with_others, r3.skip_rate),
            (Some(0.0), Some(0.5))
        );
        assert_eq!((m.models.pairs[0].a_wins, m.models.pairs[0].b_wins), (2, 1));
        assert!(m.models.ranking.is_none(), "two models: no ranking");
    }

    #[test]
    fn a_pair_of_models_is_one_row_whichever_way_round() {
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
        let with = |task: u128, a: &str, b: &str, score: i64| RatingFacts {
            model_a: Some(a.into()),
            model_b: Some(b.into()),
            ..row(task, "r1", "rated", "submitted", scored(score), false)
        };
        // gpt as A, claude as B: gpt better twice; claude as A: claude better once, a tie.
        acc.add(&with(1, "gpt-x", "claude-y", 2));
        acc.add(&with(2, "gpt-x", "claude-y", 1));
        acc.add(&with(3, "claude-y", "gpt-x", 3));
        acc.add(&with(4, "claude-y", "gpt-x", 4));
        let pairs = acc.finish(4).models.pairs;
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        let p = &pairs[0];
        assert_eq!(
            (p.model_a.as_str(), p.model_b.as_str()),
            ("claude-y", "gpt-x")
        );
        assert_eq!((p.n, p.a_wins, p.ties, p.b_wins), (4, 1, 1, 2));
        // Read with claude as A: 8-2, 8-1, 3 and 4.
        let mean = p.mean.as_ref().unwrap();
        assert!((mean.value - 5.0).abs() < 1e-9);
        assert!(mean.low < mean.value && mean.value < mean.high);
        let wins = p.b_win_share.as_ref().unwrap();
        assert!((wins.value - 0.5).abs() < 1e-9 && wins.low < 0.5 && wins.high > 0.5);
    }

    #[test]
    fn classifications_have_their_distribution() {
        let questions = vec![
            crate::rubric::Classification {
                key: "language".into(),
                label: "Language".into(),
                multiple: false,
                required: true,
                options: vec!["python".into(), "rust".into()],
            },
            crate::rubric::Classification {
                key: "kind".into(),
                label: "Kind".into(),
                multiple: true,
                required: false,
                options: vec!["bug".into(), "feature".into(), "docs".into()],
            },
        ];
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &questions);
        let classified = |language: &str, kinds: Value| {
            let mut answers = scored(3);
            answers["classifications"] = json!({"language": language, "kind": kinds});
            answers
        };
        acc.add(&row(
            1,
            "r1",
            "rated",
            "submitted",
            classified("rust", json!(["bug", "docs"])),
            false,
        ));
        acc.add(&row(
            2,
            "r1",
            "rated",
            "submitted",
            classified("rust", json!(["bug"])),
            false,
        ));
        acc.add(&row(
            3,
            "r1",
            "rated",
            "submitted",
            classified("python", json!([])),
            false,
        ));
        // Left out of metrics, so out of the distribution too.
        acc.add(&row(
            4,
            "r1",
            "rated",
            "draft",
            classified("python", json!(["feature"])),
            false,
        ));
        let fields = acc.finish(4).fields;
        assert_eq!(
            fields["classifications.language"],
            BTreeMap::from([("python".into(), 1), ("rust".into(), 2)])
        );
        assert_eq!(
            fields["classifications.kind"],
            BTreeMap::from([("bug".into(), 2), ("docs".into(), 1)])
        );
    }
}
