//! One answer per task from several raters' answers: majority vote, and Dawid-Skene
//! (each rater's confusion matrix estimated by expectation-maximisation). Both follow
//! `crowd-kit` 1.4 (`MajorityVote`, `DawidSkene`) step for step, and are checked
//! against it on `tests/fixtures/aggregation/fixtures.json`.
//!
//! The classes are the labels that occur in the answers, in the order they first occur
//! in the input (as crowd-kit 1.4 on pandas 3 orders them: `value_counts` keeps the
//! order of first appearance).
//!
//! **No tie is decided by order.** crowd-kit gives a tie to the first of the tied classes
//! (pandas' `idxmax`); here a task whose highest posterior is shared by two or more
//! classes (within [`TIE`]) has no label, and lists the tied ones: the rubric lists the A
//! side first, so settling ties by order would lean every tied task to A. Elsewhere the
//! posteriors are crowd-kit's exactly.
//!
//! - **Majority vote**: a task's posteriors are each label's share of its answers; its
//!   label is the most frequent one. Its confidence is the winning share.
//! - **Dawid-Skene**: starts from the majority vote's shares; the prior of each class is
//!   the mean of the tasks' posteriors; the M-step sums each rater's posteriors per
//!   (rater, label given), floors each sum at 1e-10 and divides by the rater's column
//!   sum (over the labels that rater gave); the E-step multiplies the prior (floored at
//!   1e-10) by the confusion entries of the task's answers (in base-2 logs, scaled so the
//!   largest is 1) and normalises. At most 100 iterations, stopping when the evidence
//!   lower bound per answer gains less than 1e-5. A task's label is the class of highest
//!   posterior, its confidence that posterior.
//! - A rater's **estimated accuracy** (Dawid-Skene) is the chance they give the true
//!   class of a task drawn from the prior: the sum over classes of the prior times the
//!   rater's confusion entry for answering that class when it is true (0 for a class the
//!   rater never gave).

use std::collections::BTreeMap;

/// How near two posteriors are to be tied: Dawid-Skene's arithmetic can leave two
/// classes that are equal in exact arithmetic (a mirror image's) a few ulps apart.
pub const TIE: f64 = 1e-9;

/// The floor crowd-kit puts under confusion entries, priors and posteriors.
const EPS: f64 = 1e-10;
/// crowd-kit's `DawidSkene` defaults.
pub const MAX_ITERATIONS: usize = 100;
pub const TOLERANCE: f64 = 1e-5;

/// An answer as a class: yes/no, a number (a scale's point) or text (an option).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    Bool(bool),
    Int(i64),
    Text(String),
}

impl Label {
    /// The label of a stored answer; `None` for anything else (null, a list, a fraction).
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        match value {
            serde_json::Value::Bool(b) => Some(Self::Bool(*b)),
            serde_json::Value::Number(n) => n.as_i64().map(Self::Int),
            serde_json::Value::String(s) => Some(Self::Text(s.clone())),
            _ => None,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Bool(b) => serde_json::Value::Bool(*b),
            Self::Int(i) => serde_json::Value::from(*i),
            Self::Text(s) => serde_json::Value::String(s.clone()),
        }
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bool(b) => write!(f, "{b}"),
            Self::Int(i) => write!(f, "{i}"),
            Self::Text(s) => f.write_str(s),
        }
    }
}

/// One rater's answer to one task.
#[derive(Debug, Clone)]
pub struct Vote<T, R, L> {
    pub task: T,
    pub rater: R,
    pub label: L,
}

/// One task's aggregated answer.
#[derive(Debug, Clone)]
pub struct TaskAnswer<T, L> {
    pub task: T,
    /// The answer; `None` when two or more are tied for it.
    pub label: Option<L>,
    /// The answers tied for the highest posterior, in class order; empty when `label`
    /// is one.
    pub tied: Vec<L>,
    /// The highest posterior (for majority vote, the winning share).
    pub confidence: f64,
    /// The posterior of each class, in [`Aggregate::classes`] order.
    pub posteriors: Vec<f64>,
    /// How many answers the task had.
    pub answers: usize,
}

/// A rater's estimated accuracy (Dawid-Skene).
#[derive(Debug, Clone)]
pub struct RaterAccuracy<R> {
    pub rater: R,
    pub accuracy: f64,
    pub answers: usize,
}

/// The result of an aggregation: one answer per task (by task order), and for
/// Dawid-Skene the priors, each rater's accuracy and the evidence lower bound per
/// iteration.
#[derive(Debug, Clone)]
pub struct Aggregate<T, R, L> {
    pub classes: Vec<L>,
    pub tasks: Vec<TaskAnswer<T, L>>,
    pub priors: Vec<f64>,
    pub raters: Vec<RaterAccuracy<R>>,
    pub loss_history: Vec<f64>,
}

/// One answer as indices: the task, the rater and the class (each from 0, dense).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Coded {
    pub task: u32,
    pub rater: u32,
    pub class: u32,
}

/// What an aggregation of coded answers gives: per task (`tasks` × `classes`, row by
/// task) the posterior of each class, and for Dawid-Skene the priors, each rater's
/// confusion entries and the evidence lower bound per iteration.
#[derive(Debug, Clone)]
pub struct Fit {
    pub classes: usize,
    pub posteriors: Vec<f64>,
    pub priors: Vec<f64>,
    /// Per rater, per class given, per true class: the confusion entry
    /// (`raters` × `classes` × `classes`); 0 where the rater never gave that class.
    pub errors: Vec<f64>,
    pub loss_history: Vec<f64>,
}

impl Fit {
    /// Task `t`'s posteriors.
    pub fn of(&self, t: usize) -> &[f64] {
        &self.posteriors[t * self.classes..(t + 1) * self.classes]
    }

    /// Task `t`'s classes of highest posterior (within [`TIE`]), in class order, and that
    /// posterior: one class is the task's answer, more are a tie.
    pub fn top(&self, t: usize) -> (Vec<usize>, f64) {
        let posteriors = self.of(t);
        let best = posteriors.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let top = (0..posteriors.len())
            .filter(|&c| best - posteriors[c] <= TIE)
            .collect();
        (top, best)
    }

    /// Rater `r`'s estimated accuracy (see the module's notes).
    pub fn accuracy(&self, r: usize) -> f64 {
        let k = self.classes;
        (0..k)
            .map(|c| self.priors[c] * self.errors[(r * k + c) * k + c])
            .sum()
    }
}

/// The majority vote's shares per task and class, of answers coded with `classes`
/// classes over `tasks` tasks.
pub fn majority_fit(tasks: usize, classes: usize, answers: &[Coded]) -> Fit {
    Fit {
        classes,
        posteriors: shares(tasks, classes, answers),
        priors: Vec::new(),
        errors: Vec::new(),
        loss_history: Vec::new(),
    }
}

fn shares(tasks: usize, classes: usize, answers: &[Coded]) -> Vec<f64> {
    let mut counts = vec![0.0; tasks * classes];
    for a in answers {
        counts[a.task as usize * classes + a.class as usize] += 1.0;
    }
    for row in counts.chunks_mut(classes.max(1)) {
        let total: f64 = row.iter().sum();
        if total > 0.0 {
            row.iter_mut().for_each(|x| *x /= total);
        }
    }
    counts
}

/// The confusion entries and what the M-step summed to make them.
///
/// The arrays are flat (rater, class given, true class), not a vector per rater and
/// label: the E- and M-steps touch them once per answer, and a million answers made a
/// heap allocation per task and per iteration the larger part of the work.
struct Confusion {
    classes: usize,
    /// Per (rater, class given): whether the rater gave it.
    gave: Vec<bool>,
    /// The M-step's sums of posteriors per (rater, class given, true class), before the
    /// floor; the evidence lower bound's joint term reads them.
    sums: Vec<f64>,
    /// The entries: the sums floored at 1e-10 and divided by the rater's column sum.
    errors: Vec<f64>,
}

impl Confusion {
    fn new(raters: usize, classes: usize, answers: &[Coded]) -> Self {
        let mut gave = vec![false; raters * classes];
        for a in answers {
            gave[a.rater as usize * classes + a.class as usize] = true;
        }
        let cells = raters * classes * classes;
        Self {
            classes,
            gave,
            sums: vec![0.0; cells],
            errors: vec![0.0; cells],
        }
    }

    /// The M-step: each rater's confusion entries from the tasks' posteriors.
    fn m_step(&mut self, answers: &[Coded], posteriors: &[f64]) {
        let k = self.classes;
        self.sums.iter_mut().for_each(|s| *s = 0.0);
        for a in answers {
            let at = (a.rater as usize * k + a.class as usize) * k;
            let row = &posteriors[a.task as usize * k..][..k];
            for (s, p) in self.sums[at..at + k].iter_mut().zip(row) {
                *s += p;
            }
        }
        self.normalise();
    }

    /// The entries from the sums: each floored at 1e-10 and divided by its rater's
    /// column sum over the classes the rater gave.
    fn normalise(&mut self) {
        let k = self.classes;
        let mut column = vec![0.0; k];
        for ((sums, errors), gave) in self
            .sums
            .chunks(k * k)
            .zip(self.errors.chunks_mut(k * k))
            .zip(self.gave.chunks(k))
        {
            column.iter_mut().for_each(|c| *c = 0.0);
            for (l, _) in gave.iter().enumerate().filter(|(_, g)| **g) {
                for (c, s) in column.iter_mut().zip(&sums[l * k..][..k]) {
                    *c += s.max(EPS);
                }
            }
            for (l, given) in gave.iter().enumerate() {
                let (errors, sums) = (&mut errors[l * k..][..k], &sums[l * k..][..k]);
                for ((e, s), c) in errors.iter_mut().zip(sums).zip(&column) {
                    *e = if *given { s.max(EPS) / c } else { 0.0 };
                }
            }
        }
    }

    /// Every entry with `log` applied (0 where the rater never gave the class): once
    /// per (rater, label), not per answer.
    fn logs(&self, log: fn(f64) -> f64) -> Vec<f64> {
        let k = self.classes;
        let mut out = vec![0.0; self.errors.len()];
        for (i, given) in self.gave.iter().enumerate() {
            if *given {
                for (o, e) in out[i * k..][..k].iter_mut().zip(&self.errors[i * k..][..k]) {
                    *o = log(*e);
                }
            }
        }
        out
    }
}

fn column_means(posteriors: &[f64], classes: usize) -> Vec<f64> {
    let mut means = vec![0.0; classes];
    for row in posteriors.chunks(classes.max(1)) {
        for (m, p) in means.iter_mut().zip(row) {
            *m += p;
        }
    }
    let n = (posteriors.len() / classes.max(1)).max(1) as f64;
    means.iter_mut().for_each(|m| *m /= n);
    means
}

/// How many pieces an iteration's work is cut into, whatever the number of cores: the
/// pieces' sums are added in their order, so the result does not depend on how many
/// threads worked them out (an instance on a machine with more cores gets the same bits).
const PIECES: usize = 16;
/// No piece is cut smaller than this many answers, bar the last.
const PIECE_MIN_ANSWERS: usize = 4096;

/// Whole tasks `tasks`: one piece of an iteration, and what its E- and M-step summed.
struct Piece {
    tasks: std::ops::Range<usize>,
    /// Its share of the M-step's sums (see [`Confusion::sums`]).
    sums: Vec<f64>,
    /// Per class: the posteriors summed over its tasks, and the same weighted by each
    /// task's number of answers.
    column: Vec<f64>,
    weighted: Vec<f64>,
    entropy: f64,
}

/// Dawid-Skene over coded answers, as crowd-kit's `DawidSkene(n_iter, tol)`.
///
/// Each iteration is one pass over the answers, task by task: a task's posteriors (the
/// E-step) are added at once into the M-step's sums, the priors' sums and the evidence
/// lower bound's terms, so no second pass reads them. The tasks are cut into
/// [`PIECES`] pieces worked on every core, each with sums of its own.
pub fn dawid_skene_fit(
    tasks: usize,
    raters: usize,
    classes: usize,
    answers: &[Coded],
    max_iterations: usize,
    tolerance: f64,
) -> Fit {
    use rayon::prelude::*;
    let k = classes;
    if answers.is_empty() || k == 0 {
        return majority_fit(tasks, classes, answers);
    }
    // The answers in task order (stable: a task's answers keep the order they came in,
    // which is the order its logs are added in), each as its row's start.
    let mut starts = vec![0usize; tasks + 1];
    for a in answers {
        starts[a.task as usize + 1] += 1;
    }
    for t in 0..tasks {
        starts[t + 1] += starts[t];
    }
    // Each answer, in task order, as where its rater's row of entries for the class it gave
    // starts.
    let mut ordered = vec![0usize; answers.len()];
    let mut next = starts.clone();
    for a in answers {
        let slot = &mut next[a.task as usize];
        ordered[*slot] = (a.rater as usize * k + a.class as usize) * k;
        *slot += 1;
    }
    let cells = raters * k * k;
    let mut pieces = cut(&starts, tasks, answers.len())
        .into_iter()
        .map(|tasks| Piece {
            tasks,
            sums: vec![0.0; cells],
            column: vec![0.0; k],
            weighted: vec![0.0; k],
            entropy: 0.0,
        })
        .collect::<Vec<_>>();

    let mut posteriors = shares(tasks, k, answers);
    let mut priors = column_means(&posteriors, k);
    let mut confusion = Confusion::new(raters, k, answers);
    confusion.m_step(answers, &posteriors);
    let mut loss = f64::NEG_INFINITY;
    let mut loss_history = Vec::new();
    for _ in 0..max_iterations {
        let base: Vec<f64> = priors.iter().map(|p| p.max(EPS).log2()).collect();
        let log_errors = confusion.logs(f64::log2);
        let step = Step {
            k,
            base: &base,
            log_errors: &log_errors,
            starts: &starts,
            ordered: &ordered,
        };
        // Each piece with its own rows of the posteriors.
        let mut rest = &mut posteriors[..];
        let mut work = Vec::with_capacity(pieces.len());
        for piece in &mut pieces {
            let (rows, tail) = rest.split_at_mut(piece.tasks.len() * k);
            rest = tail;
            work.push((piece, rows));
        }
        work.par_iter_mut()
            .for_each(|(piece, rows)| step.run(piece, rows));

        // The pieces' sums, added in their order.
        let (mut column, mut weighted, mut entropy) = (vec![0.0; k], vec![0.0; k], 0.0);
        confusion.sums.iter_mut().for_each(|s| *s = 0.0);
        for piece in &pieces {
            add(&mut confusion.sums, &piece.sums);
            add(&mut column, &piece.column);
            add(&mut weighted, &piece.weighted);
            entropy += piece.entropy;
        }
        priors = column.iter().map(|c| c / tasks.max(1) as f64).collect();
        confusion.normalise();
        // The evidence lower bound: the expected log joint probability of the answers
        // and the classes, plus the posteriors' entropy (natural logs). Its answer term
        // is read off the M-step's sums, its class term off the answer-weighted columns.
        let log_errors = confusion.logs(f64::ln);
        let answer_term: f64 = confusion
            .sums
            .iter()
            .zip(&log_errors)
            .map(|(s, e)| s * e)
            .sum();
        let class_term: f64 = weighted
            .iter()
            .zip(&priors)
            .map(|(w, p)| w * p.max(EPS).ln())
            .sum();
        let new_loss = (answer_term + class_term + entropy) / answers.len() as f64;
        loss_history.push(new_loss);
        if new_loss - loss < tolerance {
            break;
        }
        loss = new_loss;
    }
    // crowd-kit floors the posteriors in place while it works out the bound.
    posteriors.iter_mut().for_each(|p| *p = p.max(EPS));
    Fit {
        classes: k,
        posteriors,
        priors: priors.iter().map(|p| p.max(EPS)).collect(),
        errors: confusion.errors,
        loss_history,
    }
}

fn add(into: &mut [f64], from: &[f64]) {
    for (i, f) in into.iter_mut().zip(from) {
        *i += f;
    }
}

/// Whole tasks cut into at most [`PIECES`] runs of about equal numbers of answers
/// (`starts[t]` is where task `t`'s answers start).
fn cut(starts: &[usize], tasks: usize, answers: usize) -> Vec<std::ops::Range<usize>> {
    let size = answers.div_ceil(PIECES).max(PIECE_MIN_ANSWERS);
    let mut out = Vec::new();
    let mut first = 0;
    while first < tasks {
        // The first task that starts at or past this piece's share.
        let goal = starts[first] + size;
        let end = match starts[first + 1..=tasks].binary_search(&goal) {
            Ok(i) | Err(i) => first + 1 + i,
        }
        .min(tasks);
        out.push(first..end);
        first = end;
    }
    out
}

/// What one iteration's E-step reads.
struct Step<'a> {
    k: usize,
    /// The priors' base-2 logs (each prior floored at 1e-10).
    base: &'a [f64],
    /// The confusion entries' base-2 logs.
    log_errors: &'a [f64],
    starts: &'a [usize],
    ordered: &'a [usize],
}

impl Step<'_> {
    /// The E-step of `piece`'s tasks into `rows` (theirs of the posteriors), and their
    /// sums for the M-step, the priors and the bound into the piece.
    fn run(&self, piece: &mut Piece, rows: &mut [f64]) {
        let k = self.k;
        piece.sums.iter_mut().for_each(|s| *s = 0.0);
        piece.column.iter_mut().for_each(|s| *s = 0.0);
        piece.weighted.iter_mut().for_each(|s| *s = 0.0);
        // The entropy's terms (natural logs, each posterior floored at 1e-10 as
        // crowd-kit floors them), from the logs at hand: a posterior is 2^log / total,
        // so its log is log·ln 2 - ln total. The tasks' totals are multiplied together
        // and their logarithm taken now and then, not one per task.
        let mut scaled = 0.0;
        let mut product = 1.0f64;
        let mut log_totals = 0.0;
        let mut floored = 0.0;
        let mut logs = vec![0.0; k];
        for (t, row) in piece.tasks.clone().zip(rows.chunks_mut(k)) {
            let given = &self.ordered[self.starts[t]..self.starts[t + 1]];
            row.copy_from_slice(self.base);
            for &at in given {
                for (x, e) in row.iter_mut().zip(&self.log_errors[at..][..k]) {
                    *x += e;
                }
            }
            // The base-2 logs scaled so the largest is 0: the total is then 1 to k.
            let top = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut total = 0.0;
            for (log, x) in logs.iter_mut().zip(row.iter_mut()) {
                *log = *x - top;
                *x = log.exp2();
                total += *x;
            }
            let mut kept = 0.0;
            let mut under = false;
            let share = 1.0 / total;
            for (x, log) in row.iter_mut().zip(&logs) {
                *x *= share;
                if *x < EPS {
                    floored -= EPS * EPS.ln();
                    under = true;
                } else {
                    scaled -= *x * log;
                    kept += *x;
                }
            }
            // -Σ x·(log·ln 2 - ln total) over the posteriors kept: ln total times their
            // sum, which is 1 unless some were floored.
            if under {
                log_totals += total.ln() * kept;
            } else {
                product *= total;
                if product > 1e200 {
                    log_totals += product.ln();
                    product = 1.0;
                }
            }
            let n = given.len() as f64;
            for (c, x) in piece.column.iter_mut().zip(row.iter()) {
                *c += x;
            }
            for (w, x) in piece.weighted.iter_mut().zip(row.iter()) {
                *w += n * x;
            }
            for &at in given {
                for (s, x) in piece.sums[at..][..k].iter_mut().zip(row.iter()) {
                    *s += x;
                }
            }
        }
        log_totals += product.ln();
        piece.entropy = scaled * std::f64::consts::LN_2 + log_totals + floored;
    }
}

/// The answers as indices into sorted tasks, raters and classes.
struct Indexed<T, R, L> {
    tasks: Vec<T>,
    raters: Vec<R>,
    classes: Vec<L>,
    answers: Vec<Coded>,
}

fn index<X: Ord + Clone>(items: impl Iterator<Item = X>) -> (Vec<X>, BTreeMap<X, usize>) {
    let set: std::collections::BTreeSet<X> = items.collect();
    let list: Vec<X> = set.into_iter().collect();
    let map = list
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, x)| (x, i))
        .collect();
    (list, map)
}

fn code<T: Ord + Clone, R: Ord + Clone, L: Ord + Clone>(
    votes: &[Vote<T, R, L>],
) -> Indexed<T, R, L> {
    let (tasks, task_at) = index(votes.iter().map(|v| v.task.clone()));
    let (raters, rater_at) = index(votes.iter().map(|v| v.rater.clone()));
    // In order of first appearance, as pandas' `value_counts` leaves them.
    let mut classes: Vec<L> = Vec::new();
    let mut class_at: BTreeMap<L, usize> = BTreeMap::new();
    for v in votes {
        if !class_at.contains_key(&v.label) {
            class_at.insert(v.label.clone(), classes.len());
            classes.push(v.label.clone());
        }
    }
    let answers = votes
        .iter()
        .map(|v| Coded {
            task: task_at[&v.task] as u32,
            rater: rater_at[&v.rater] as u32,
            class: class_at[&v.label] as u32,
        })
        .collect();
    Indexed {
        tasks,
        raters,
        classes,
        answers,
    }
}

fn answers<T: Clone, R, L: Clone>(indexed: &Indexed<T, R, L>, fit: &Fit) -> Vec<TaskAnswer<T, L>> {
    let mut per_task = vec![0usize; indexed.tasks.len()];
    for a in &indexed.answers {
        per_task[a.task as usize] += 1;
    }
    (0..indexed.tasks.len())
        .map(|t| {
            let (top, confidence) = fit.top(t);
            let mut labels: Vec<L> = top.iter().map(|&c| indexed.classes[c].clone()).collect();
            let label = (labels.len() == 1).then(|| labels.remove(0));
            TaskAnswer {
                task: indexed.tasks[t].clone(),
                label,
                tied: labels,
                confidence,
                posteriors: fit.of(t).to_vec(),
                answers: per_task[t],
            }
        })
        .collect()
}

/// Majority vote (crowd-kit's `MajorityVote` without weights).
pub fn majority_vote<T: Ord + Clone, R: Ord + Clone, L: Ord + Clone>(
    votes: &[Vote<T, R, L>],
) -> Aggregate<T, R, L> {
    let indexed = code(votes);
    let fit = majority_fit(indexed.tasks.len(), indexed.classes.len(), &indexed.answers);
    Aggregate {
        tasks: answers(&indexed, &fit),
        classes: indexed.classes,
        priors: Vec::new(),
        raters: Vec::new(),
        loss_history: Vec::new(),
    }
}

/// Dawid-Skene with crowd-kit's defaults (100 iterations at most, tolerance 1e-5).
pub fn dawid_skene<T: Ord + Clone, R: Ord + Clone, L: Ord + Clone>(
    votes: &[Vote<T, R, L>],
) -> Aggregate<T, R, L> {
    dawid_skene_with(votes, MAX_ITERATIONS, TOLERANCE)
}

/// Dawid-Skene, as crowd-kit's `DawidSkene(n_iter, tol)`.
pub fn dawid_skene_with<T: Ord + Clone, R: Ord + Clone, L: Ord + Clone>(
    votes: &[Vote<T, R, L>],
    max_iterations: usize,
    tolerance: f64,
) -> Aggregate<T, R, L> {
    let indexed = code(votes);
    let fit = dawid_skene_fit(
        indexed.tasks.len(),
        indexed.raters.len(),
        indexed.classes.len(),
        &indexed.answers,
        max_iterations,
        tolerance,
    );
    let mut per_rater = vec![0usize; indexed.raters.len()];
    for a in &indexed.answers {
        per_rater[a.rater as usize] += 1;
    }
    let raters = indexed
        .raters
        .iter()
        .enumerate()
        .map(|(r, rater)| RaterAccuracy {
            rater: rater.clone(),
            accuracy: fit.accuracy(r),
            answers: per_rater[r],
        })
        .collect();
    Aggregate {
        tasks: answers(&indexed, &fit),
        classes: indexed.classes,
        priors: fit.priors.clone(),
        raters,
        loss_history: fit.loss_history,
    }
}

/// The two methods.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Majority,
    DawidSkene,
}

impl From<crate::batch::FinalMethod> for Method {
    fn from(method: crate::batch::FinalMethod) -> Self {
        match method {
            crate::batch::FinalMethod::Majority => Self::Majority,
            crate::batch::FinalMethod::DawidSkene => Self::DawidSkene,
        }
    }
}

impl Method {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "majority" => Some(Self::Majority),
            "dawid_skene" => Some(Self::DawidSkene),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Majority => "majority",
            Self::DawidSkene => "dawid_skene",
        }
    }

    pub fn run<T: Ord + Clone, R: Ord + Clone, L: Ord + Clone>(
        self,
        votes: &[Vote<T, R, L>],
    ) -> Aggregate<T, R, L> {
        match self {
            Self::Majority => majority_vote(votes),
            Self::DawidSkene => dawid_skene(votes),
        }
    }
}

/// How a question's answers come to one per task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Each answer a class, by majority vote or Dawid-Skene.
    Classes,
    /// A score (a number whose mean means something, such as the additive ladder's
    /// total): the middle answer where it is one of the answers, else the two middle
    /// ones tied ([`crate::metrics::stats::middle`], the judges' consensus rule).
    Median,
}

/// A question whose answers are aggregated: every slot with a metrics role but several
/// choices. A preference (a choice of A, B or tie, or a scale, each point a class), an
/// ordinal or a nominal question (yes/no included) is aggregated as classes; a score by
/// its middle answer. Unscaled options (N/A, cannot assess) are classes like any other:
/// a task most raters found not applicable gets that answer.
#[derive(Debug, Clone)]
pub struct Question {
    /// As in the metrics: `sxs`, `a.correctness`.
    pub path: String,
    /// As in the ratings export: `sxs`, `a_correctness`.
    pub column: String,
    side: Option<crate::rubric::Side>,
    key: String,
    /// The answers the rubric offers, in its order (none for a score).
    options: Vec<Label>,
    pub kind: Kind,
}

impl Question {
    /// The answer of a rating (canonical orientation) to this question, if it is one a
    /// class can be made of.
    pub fn label(&self, answers: &crate::rubric::Answers) -> Option<Label> {
        let holder = match self.side {
            Some(side) => answers.get(side.key())?.as_object()?,
            None => answers,
        };
        Label::from_json(holder.get(&self.key)?)
    }

    /// `votes` in the rubric's option order (stable; answers it does not offer last), so
    /// that classes, and the answers of a tie, are listed in the rubric's order.
    pub fn in_option_order<T: Clone>(
        &self,
        votes: &[Vote<T, String, Label>],
    ) -> Vec<Vote<T, String, Label>> {
        let mut ordered = votes.to_vec();
        ordered.sort_by_key(|v| {
            self.options
                .iter()
                .position(|o| *o == v.label)
                .unwrap_or(self.options.len())
        });
        ordered
    }
}

/// The rubric's questions that are aggregated, in the rubric's order.
pub fn questions(rubric: &crate::rubric::Rubric) -> Vec<Question> {
    use crate::rubric::Role;
    rubric
        .slots()
        .into_iter()
        .filter_map(|slot| {
            let kind = match slot.metrics()? {
                Role::Preference { .. } | Role::Ordinal { .. } | Role::Nominal { .. } => {
                    Kind::Classes
                }
                Role::Score => Kind::Median,
            };
            Some((slot, kind))
        })
        .map(|(slot, kind)| {
            let side = slot.side();
            let options = match slot {
                crate::rubric::Slot::Asked { question, .. } => question
                    .options()
                    .iter()
                    .filter_map(|(v, _)| Label::from_json(v))
                    .collect(),
                crate::rubric::Slot::Derived(d) => {
                    let (low, high) = d.range(rubric);
                    (low..=high).map(Label::Int).collect()
                }
            };
            let prefix = side.map_or(String::new(), |s| format!("{}_", s.key()));
            Question {
                path: slot.path(),
                column: format!("{prefix}{}", slot.key()),
                side,
                key: slot.key().to_owned(),
                options,
                kind,
            }
        })
        .collect()
}

/// Each task's middle answer (see [`Kind::Median`]); a task's confidence is the share of
/// its answers that are its answer (for a tie, either tied answer), and it has no
/// posteriors. Answers that are not whole numbers are left out.
pub fn median<T: Ord + Clone, R>(votes: &[Vote<T, R, Label>]) -> Aggregate<T, R, Label> {
    let mut per_task: BTreeMap<&T, Vec<i64>> = BTreeMap::new();
    for vote in votes {
        if let Label::Int(n) = vote.label {
            per_task.entry(&vote.task).or_default().push(n);
        }
    }
    let tasks = per_task
        .into_iter()
        .filter_map(|(task, mut answers)| {
            let middle = crate::metrics::stats::middle(&mut answers)?;
            let (label, tied) = match middle {
                crate::metrics::stats::Middle::One(n) => (Some(Label::Int(n)), Vec::new()),
                crate::metrics::stats::Middle::Tied(low, high) => {
                    (None, vec![Label::Int(low), Label::Int(high)])
                }
            };
            let hits = answers
                .iter()
                .filter(|&&n| {
                    label
                        .as_ref()
                        .map_or(tied.contains(&Label::Int(n)), |l| *l == Label::Int(n))
                })
                .count();
            Some(TaskAnswer {
                task: task.clone(),
                label,
                tied,
                confidence: hits as f64 / answers.len() as f64,
                posteriors: Vec::new(),
                answers: answers.len(),
            })
        })
        .collect();
    Aggregate {
        classes: Vec::new(),
        tasks,
        priors: Vec::new(),
        raters: Vec::new(),
        loss_history: Vec::new(),
    }
}

/// The answers to each aggregated question, gathered rating by rating.
#[derive(Debug, Clone)]
pub struct Gathered<T> {
    pub questions: Vec<Question>,
    /// Per question (same order), its answers.
    pub votes: Vec<Vec<Vote<T, String, Label>>>,
}

impl<T: Clone> Gathered<T> {
    pub fn new(rubric: &crate::rubric::Rubric) -> Self {
        let questions = questions(rubric);
        let votes = vec![Vec::new(); questions.len()];
        Self { questions, votes }
    }

    /// Question `i`'s aggregation: by `method` for a question of classes (the answers
    /// taken in the rubric's option order), by its middle answer for a score.
    pub fn run(&self, i: usize, method: Method) -> Aggregate<T, String, Label>
    where
        T: Ord,
    {
        match self.questions[i].kind {
            Kind::Classes => method.run(&self.questions[i].in_option_order(&self.votes[i])),
            Kind::Median => median(&self.votes[i]),
        }
    }

    /// Question `i`'s mean answer per task, where its answers are whole numbers.
    pub fn means(&self, i: usize) -> BTreeMap<&T, f64>
    where
        T: Ord,
    {
        let mut sums: BTreeMap<&T, (f64, f64)> = BTreeMap::new();
        for vote in &self.votes[i] {
            if let Label::Int(n) = vote.label {
                let (sum, count) = sums.entry(&vote.task).or_default();
                *sum += n as f64;
                *count += 1.0;
            }
        }
        sums.into_iter()
            .map(|(task, (sum, count))| (task, sum / count))
            .collect()
    }

    /// Adds one rating's answers (canonical orientation); only ratings that count in the
    /// metrics belong here.
    pub fn add(&mut self, task: &T, rater: &str, answers: &crate::rubric::Answers) {
        for (question, votes) in self.questions.iter().zip(&mut self.votes) {
            if let Some(label) = question.label(answers) {
                votes.push(Vote {
                    task: task.clone(),
                    rater: rater.to_owned(),
                    label,
                });
            }
        }
    }
}

/// One question's aggregation as the metrics show it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct QuestionAggregation {
    /// Tasks with at least one answer: each has an aggregated answer or a tie.
    pub tasks: usize,
    /// Of those, the share where majority vote and Dawid-Skene give different answers
    /// (a tie is an answer of its own: the same tie under both is no difference).
    pub differ: Option<f64>,
    /// Tasks that majority vote leaves tied (no answer: see the aggregated export).
    pub majority_tied: usize,
    /// Tasks that Dawid-Skene leaves tied.
    pub dawid_skene_tied: usize,
    /// The mean confidence of each method's answers.
    pub majority_confidence: Option<f64>,
    pub dawid_skene_confidence: Option<f64>,
    /// Each rater's estimated accuracy (Dawid-Skene), by name.
    pub raters: BTreeMap<String, f64>,
}

/// The metrics' summary of each question of classes (by path), from the gathered
/// answers.
pub fn summarise<T: Ord + Clone>(gathered: &Gathered<T>) -> BTreeMap<String, QuestionAggregation> {
    let mut out = BTreeMap::new();
    for (question, votes) in gathered.questions.iter().zip(&gathered.votes) {
        if question.kind != Kind::Classes {
            continue;
        }
        let indexed = code(&question.in_option_order(votes));
        let raters: Vec<&str> = indexed.raters.iter().map(String::as_str).collect();
        out.insert(
            question.path.clone(),
            summary(
                indexed.tasks.len(),
                &raters,
                indexed.classes.len(),
                &indexed.answers,
            ),
        );
    }
    out
}

/// One question's summary from its coded answers: `tasks` tasks, each with at least one
/// answer, `raters` naming the raters by index, and `classes` classes.
pub fn summary(
    tasks: usize,
    raters: &[&str],
    classes: usize,
    answers: &[Coded],
) -> QuestionAggregation {
    let mv = majority_fit(tasks, classes, answers);
    let ds = dawid_skene_fit(
        tasks,
        raters.len(),
        classes,
        answers,
        MAX_ITERATIONS,
        TOLERANCE,
    );
    let (mut differ, mut majority, mut dawid_skene) = (0usize, 0.0, 0.0);
    let (mut majority_tied, mut dawid_skene_tied) = (0usize, 0usize);
    for t in 0..tasks {
        let (m, m_confidence) = mv.top(t);
        let (d, d_confidence) = ds.top(t);
        majority_tied += usize::from(m.len() > 1);
        dawid_skene_tied += usize::from(d.len() > 1);
        differ += usize::from(m != d);
        majority += m_confidence;
        dawid_skene += d_confidence;
    }
    let n = tasks as f64;
    let mean = |sum: f64| (tasks > 0).then(|| sum / n);
    QuestionAggregation {
        tasks,
        differ: (tasks > 0).then(|| differ as f64 / n),
        majority_tied,
        dawid_skene_tied,
        majority_confidence: mean(majority),
        dawid_skene_confidence: mean(dawid_skene),
        raters: raters
            .iter()
            .enumerate()
            .map(|(r, name)| ((*name).to_owned(), ds.accuracy(r)))
            .collect(),
    }
}

/// How often one rater's answers to a question equal the final answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct FinalAgreement {
    /// Adjudicated tasks the rater answered the question of.
    pub tasks: u64,
    /// Of those, the ones whose answer is the final one.
    pub agreed: u64,
    /// `agreed / tasks`.
    pub share: f64,
}

/// Each rater's agreement with the final answers, per aggregated question: `finals` the
/// adjudicated tasks' final answers by task, `ratings` the ratings that count of those
/// tasks as (task, rater, answers), all in canonical orientation. A question the final
/// answer leaves out is not compared.
pub fn vs_final<T: Ord>(
    questions: &[Question],
    finals: &BTreeMap<T, &crate::rubric::Answers>,
    ratings: &[(T, String, &crate::rubric::Answers)],
) -> BTreeMap<String, BTreeMap<String, FinalAgreement>> {
    let mut out: BTreeMap<String, BTreeMap<String, FinalAgreement>> = BTreeMap::new();
    for (task, rater, answers) in ratings {
        let Some(last) = finals.get(task) else {
            continue;
        };
        for question in questions {
            let (Some(decided), Some(given)) = (question.label(last), question.label(answers))
            else {
                continue;
            };
            let figure = out
                .entry(rater.clone())
                .or_default()
                .entry(question.path.clone())
                .or_default();
            figure.tasks += 1;
            figure.agreed += u64::from(decided == given);
        }
    }
    for figure in out.values_mut().flat_map(|m| m.values_mut()) {
        figure.share = figure.agreed as f64 / figure.tasks as f64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raters_answers_are_compared_with_the_final_ones_question_by_question() {
        let rubric = crate::rubric::by_name("blackhat").unwrap();
        let questions = questions(rubric);
        let answers = |sxs: i64| {
            serde_json::json!({"sxs": sxs, "a": {"correctness": "no_issues"}})
                .as_object()
                .unwrap()
                .clone()
        };
        let (final_1, final_2) = (answers(2), answers(6));
        let finals = BTreeMap::from([(1, &final_1), (2, &final_2)]);
        let (ana_1, ana_2, bo_1, other) = (answers(2), answers(5), answers(2), answers(7));
        let ratings = vec![
            (1, "ana".to_owned(), &ana_1),
            (2, "ana".to_owned(), &ana_2),
            (1, "bo".to_owned(), &bo_1),
            // Not adjudicated: not compared.
            (3, "bo".to_owned(), &other),
        ];
        let got = vs_final(&questions, &finals, &ratings);
        let sxs = |who: &str| got[who]["sxs"];
        assert_eq!(
            sxs("ana"),
            FinalAgreement {
                tasks: 2,
                agreed: 1,
                share: 0.5
            }
        );
        assert_eq!((sxs("bo").tasks, sxs("bo").agreed), (1, 1));
        assert_eq!(got["ana"]["a.correctness"].share, 1.0);
    }

    fn votes(rows: &[(&str, &str, Label)]) -> Vec<Vote<String, String, Label>> {
        rows.iter()
            .map(|(t, r, l)| Vote {
                task: (*t).to_owned(),
                rater: (*r).to_owned(),
                label: l.clone(),
            })
            .collect()
    }

    #[test]
    fn a_tie_gives_no_answer_and_lists_the_tied_ones() {
        let v = votes(&[
            ("t1", "r1", Label::Text("b".into())),
            ("t1", "r2", Label::Text("a".into())),
            ("t2", "r1", Label::Text("b".into())),
        ]);
        let result = majority_vote(&v);
        assert_eq!(result.tasks[0].label, None);
        assert_eq!(
            result.tasks[0].tied,
            [Label::Text("b".into()), Label::Text("a".into())]
        );
        assert_eq!(result.tasks[0].confidence, 0.5);
        assert_eq!(result.tasks[1].label, Some(Label::Text("b".into())));
        assert!(result.tasks[1].tied.is_empty());
        assert_eq!(result.tasks[1].confidence, 1.0);
        // Dawid-Skene trusts r1, who answered both tasks alike: no tie to settle.
        assert_eq!(
            dawid_skene(&v).tasks[0].label,
            Some(Label::Text("b".into()))
        );
        // Two raters with one answer each, on one task: their posteriors are equal.
        let even = votes(&[
            ("t1", "r1", Label::Text("b".into())),
            ("t1", "r2", Label::Text("a".into())),
        ]);
        let result = dawid_skene(&even);
        assert_eq!(result.tasks[0].label, None);
        assert_eq!(result.tasks[0].tied.len(), 2);
    }

    /// A mirror image (every answer for A matched by the same answer for B, from raters
    /// who each answer both ways as often) aggregates to as many A as B, whichever side
    /// the rubric lists first.
    #[test]
    fn a_mirror_image_aggregates_to_as_many_a_as_b() {
        let mut rows = Vec::new();
        let raters = ["r1", "r2", "r3", "r4"];
        // Each pattern once as given and once mirrored: 2-2 splits, 3-1 and 1-3 splits.
        let patterns: [&[&str]; 3] = [
            &["a", "a", "b", "b"],
            &["a", "a", "a", "b"],
            &["a", "b", "b", "a"],
        ];
        for (p, pattern) in patterns.iter().enumerate() {
            for mirrored in [false, true] {
                let task = format!("t{p}{}", u8::from(mirrored));
                for (rater, side) in raters.iter().zip(pattern.iter()) {
                    let side = match (*side, mirrored) {
                        ("a", true) => "b",
                        ("b", true) => "a",
                        (side, _) => side,
                    };
                    rows.push((task.clone(), *rater, Label::Text(side.into())));
                }
            }
        }
        let v: Vec<Vote<String, String, Label>> = rows
            .into_iter()
            .map(|(task, rater, label)| Vote {
                task,
                rater: rater.to_owned(),
                label,
            })
            .collect();
        for (name, result) in [
            ("majority", majority_vote(&v)),
            ("dawid_skene", dawid_skene(&v)),
        ] {
            let count = |side: &str| {
                result
                    .tasks
                    .iter()
                    .filter(|t| t.label == Some(Label::Text(side.into())))
                    .count()
            };
            assert_eq!(count("a"), count("b"), "{name}");
            let tied = result.tasks.iter().filter(|t| t.label.is_none()).count();
            assert_eq!(tied % 2, 0, "{name}: ties come in mirrored pairs");
            if name == "majority" {
                assert_eq!(tied, 4, "the 2-2 splits tie");
            }
        }
    }

    #[test]
    fn a_score_comes_to_its_middle_answer_or_a_tie_of_two() {
        let v = votes(&[
            ("t1", "r1", Label::Int(2)),
            ("t1", "r2", Label::Int(4)),
            ("t1", "r3", Label::Int(5)),
            ("t2", "r1", Label::Int(1)),
            ("t2", "r2", Label::Int(3)),
            ("t3", "r1", Label::Int(3)),
            ("t3", "r2", Label::Int(3)),
            ("t3", "r3", Label::Int(0)),
            ("t3", "r4", Label::Int(5)),
        ]);
        let result = median(&v);
        let got: Vec<(Option<Label>, Vec<Label>, f64)> = result
            .tasks
            .iter()
            .map(|t| (t.label.clone(), t.tied.clone(), t.confidence))
            .collect();
        assert_eq!(
            got,
            [
                (Some(Label::Int(4)), vec![], 1.0 / 3.0),
                (None, vec![Label::Int(1), Label::Int(3)], 1.0),
                (Some(Label::Int(3)), vec![], 0.5),
            ]
        );
    }

    #[test]
    fn nothing_to_aggregate_gives_nothing() {
        let v: Vec<Vote<String, String, Label>> = Vec::new();
        assert!(dawid_skene(&v).tasks.is_empty());
        assert!(majority_vote(&v).tasks.is_empty());
    }

    #[derive(serde::Deserialize)]
    struct Case {
        name: String,
        rows: Vec<(String, String, serde_json::Value)>,
        mv: Expected,
        ds: Expected,
        ds_priors: BTreeMap<String, f64>,
        ds_errors: Vec<(String, serde_json::Value, serde_json::Value, f64)>,
        ds_loss_history: Vec<f64>,
    }

    #[derive(serde::Deserialize)]
    struct Expected {
        labels: BTreeMap<String, serde_json::Value>,
        /// Per task, per class (the label as JSON text): its posterior.
        probas: BTreeMap<String, BTreeMap<String, f64>>,
    }

    fn check(case: &Case, method: &str, got: &Aggregate<String, String, Label>, want: &Expected) {
        assert_eq!(
            got.tasks.len(),
            want.labels.len(),
            "{}: {method} tasks",
            case.name
        );
        for task in &got.tasks {
            let label = Label::from_json(&want.labels[&task.task]).unwrap();
            // crowd-kit settles a tie (by order, or by the last bit of its arithmetic);
            // here a tie has no answer, and crowd-kit's must be one of the tied.
            match &task.label {
                Some(got) => assert_eq!(
                    *got, label,
                    "{}: {method} label of {}",
                    case.name, task.task
                ),
                None => assert!(
                    task.tied.contains(&label),
                    "{}: {method} tie of {} should hold crowd-kit's {label}: {:?}",
                    case.name,
                    task.task,
                    task.tied
                ),
            }
            let probas = &want.probas[&task.task];
            assert_eq!(probas.len(), got.classes.len(), "{}: classes", case.name);
            for (class, p) in got.classes.iter().zip(&task.posteriors) {
                let want = probas[&class.to_json().to_string()];
                assert!(
                    (p - want).abs() < 1e-6,
                    "{}: {method} {} {class}: {p} against {want}",
                    case.name,
                    task.task
                );
            }
        }
    }

    /// Answers enough to be cut into several pieces: `raters` raters of differing skill
    /// over `tasks` tasks, three to seven answers each, from a fixed seed.
    fn noisy(tasks: u32, raters: u32, classes: u32) -> Vec<Coded> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut draw = |n: u32| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % u64::from(n)) as u32
        };
        let mut out = Vec::new();
        for task in 0..tasks {
            let truth = draw(classes);
            for _ in 0..3 + draw(5) {
                let rater = draw(raters);
                // Rater r is right (r + 5) in (raters + 5) times, else answers at random.
                let class = if draw(raters + 5) < rater + 5 {
                    truth
                } else {
                    draw(classes)
                };
                out.push(Coded { task, rater, class });
            }
        }
        out
    }

    /// crowd-kit's Dawid-Skene written the plain way, one step after another with a
    /// vector per task and per rater: the oracle for the one-pass, cut-up version.
    fn plain_dawid_skene(tasks: usize, raters: usize, k: usize, answers: &[Coded]) -> Fit {
        let shares = |posteriors: &mut Vec<Vec<f64>>| {
            for row in posteriors.iter_mut() {
                let total: f64 = row.iter().sum();
                row.iter_mut().for_each(|x| *x /= total);
            }
        };
        let mut posteriors = vec![vec![0.0; k]; tasks];
        for a in answers {
            posteriors[a.task as usize][a.class as usize] += 1.0;
        }
        shares(&mut posteriors);
        let means = |posteriors: &[Vec<f64>]| -> Vec<f64> {
            (0..k)
                .map(|c| posteriors.iter().map(|row| row[c]).sum::<f64>() / tasks as f64)
                .collect()
        };
        // errors[r][l][c], and which labels each rater gave.
        let m_step = |posteriors: &[Vec<f64>]| {
            let mut sums = vec![vec![vec![0.0; k]; k]; raters];
            let mut gave = vec![vec![false; k]; raters];
            for a in answers {
                gave[a.rater as usize][a.class as usize] = true;
                for c in 0..k {
                    sums[a.rater as usize][a.class as usize][c] += posteriors[a.task as usize][c];
                }
            }
            let mut errors = vec![vec![vec![0.0; k]; k]; raters];
            for r in 0..raters {
                for c in 0..k {
                    let column: f64 = (0..k)
                        .filter(|l| gave[r][*l])
                        .map(|l| sums[r][l][c].max(EPS))
                        .sum();
                    for l in (0..k).filter(|l| gave[r][*l]) {
                        errors[r][l][c] = sums[r][l][c].max(EPS) / column;
                    }
                }
            }
            (errors, gave)
        };
        let mut of_task = vec![Vec::new(); tasks];
        for a in answers {
            of_task[a.task as usize].push(*a);
        }
        let mut priors = means(&posteriors);
        let (mut errors, _) = m_step(&posteriors);
        let mut loss = f64::NEG_INFINITY;
        let mut history = Vec::new();
        for _ in 0..MAX_ITERATIONS {
            for (t, row) in posteriors.iter_mut().enumerate() {
                let mut logs: Vec<f64> = priors.iter().map(|p| p.max(EPS).log2()).collect();
                for a in &of_task[t] {
                    for (c, log) in logs.iter_mut().enumerate() {
                        let e = errors[a.rater as usize][a.class as usize][c];
                        *log += e.log2();
                    }
                }
                let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                for (x, log) in row.iter_mut().zip(&logs) {
                    *x = (log - top).exp2();
                }
            }
            shares(&mut posteriors);
            priors = means(&posteriors);
            let (new_errors, gave) = m_step(&posteriors);
            errors = new_errors;
            let mut bound = 0.0;
            for a in answers {
                for c in 0..k {
                    let p = posteriors[a.task as usize][c];
                    bound += p * priors[c].max(EPS).ln();
                    if gave[a.rater as usize][a.class as usize] {
                        bound += p * errors[a.rater as usize][a.class as usize][c].ln();
                    }
                }
            }
            for row in &posteriors {
                for p in row {
                    let p = p.max(EPS);
                    bound -= p * p.ln();
                }
            }
            let new_loss = bound / answers.len() as f64;
            history.push(new_loss);
            if new_loss - loss < TOLERANCE {
                break;
            }
            loss = new_loss;
        }
        let errors_flat = errors
            .iter()
            .flat_map(|per_label| per_label.iter().flatten().copied())
            .collect();
        Fit {
            classes: k,
            posteriors: posteriors.iter().flatten().map(|p| p.max(EPS)).collect(),
            priors: priors.iter().map(|p| p.max(EPS)).collect(),
            errors: errors_flat,
            loss_history: history,
        }
    }

    /// Large enough to be cut into several pieces, the one-pass version gives what the
    /// plain one gives, to 1e-9.
    #[test]
    fn the_pieces_add_up_to_the_plain_algorithm() {
        let (tasks, raters, classes) = (4000, 40, 5);
        let answers = noisy(tasks, raters, classes);
        assert!(answers.len() > 4 * PIECE_MIN_ANSWERS, "{}", answers.len());
        let (tasks, raters, classes) = (tasks as usize, raters as usize, classes as usize);
        let got = dawid_skene_fit(tasks, raters, classes, &answers, MAX_ITERATIONS, TOLERANCE);
        let want = plain_dawid_skene(tasks, raters, classes, &answers);
        assert!(want.loss_history.len() > 2, "{:?}", want.loss_history);
        assert_eq!(got.loss_history.len(), want.loss_history.len());
        let close = |what: &str, got: &[f64], want: &[f64]| {
            assert_eq!(got.len(), want.len(), "{what}");
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert!((g - w).abs() < 1e-9, "{what} {i}: {g} against {w}");
            }
        };
        close("bound", &got.loss_history, &want.loss_history);
        close("posteriors", &got.posteriors, &want.posteriors);
        close("priors", &got.priors, &want.priors);
        close("errors", &got.errors, &want.errors);
    }

    /// The pieces' sums are added in their order, so one thread and several give the
    /// same bits.
    #[test]
    fn the_fit_does_not_depend_on_the_number_of_threads() {
        let answers = noisy(2000, 25, 7);
        let fit = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| dawid_skene_fit(2000, 25, 7, &answers, MAX_ITERATIONS, TOLERANCE))
        };
        let (one, four) = (fit(1), fit(4));
        let bits = |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&one.posteriors), bits(&four.posteriors));
        assert_eq!(bits(&one.errors), bits(&four.errors));
        assert_eq!(bits(&one.loss_history), bits(&four.loss_history));
    }

    #[test]
    fn the_pieces_are_whole_tasks_that_cover_them_all() {
        // Tasks of 1, 2, 3, ... answers.
        let mut starts = vec![0];
        for t in 0..400 {
            starts.push(starts[t] + t + 1);
        }
        let answers = starts[400];
        let pieces = cut(&starts, 400, answers);
        assert!(
            pieces.len() > 1 && pieces.len() <= PIECES,
            "{}",
            pieces.len()
        );
        assert_eq!(pieces[0].start, 0);
        assert_eq!(pieces.last().unwrap().end, 400);
        for pair in pieces.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            assert!(!pair[0].is_empty());
            let size = starts[pair[0].end] - starts[pair[0].start];
            assert!(size >= PIECE_MIN_ANSWERS, "{size}");
        }
        // Fewer answers than one piece's least: one piece.
        assert_eq!(cut(&starts[..11], 10, starts[10]), vec![0..10]);
    }

    /// The fixtures crowd-kit 1.4 made (`tests/fixtures/aggregation/generate.py`).
    #[test]
    fn matches_crowd_kit() {
        let text = include_str!("../../../../tests/fixtures/aggregation/fixtures.json");
        let cases: Vec<Case> = serde_json::from_str(text).unwrap();
        assert!(cases.len() >= 24, "{} cases", cases.len());
        for case in &cases {
            let v: Vec<Vote<String, String, Label>> = case
                .rows
                .iter()
                .map(|(t, r, l)| Vote {
                    task: t.clone(),
                    rater: r.clone(),
                    label: Label::from_json(l).unwrap(),
                })
                .collect();
            check(case, "mv", &majority_vote(&v), &case.mv);
            let ds = dawid_skene(&v);
            check(case, "ds", &ds, &case.ds);
            assert_eq!(
                ds.loss_history.len(),
                case.ds_loss_history.len(),
                "{}: iterations",
                case.name
            );
            for (got, want) in ds.loss_history.iter().zip(&case.ds_loss_history) {
                assert!(
                    (got - want).abs() < 1e-6,
                    "{}: bound {got} against {want}",
                    case.name
                );
            }
            for (class, p) in ds.classes.iter().zip(&ds.priors) {
                let want = case.ds_priors[&class.to_json().to_string()];
                assert!((p - want).abs() < 1e-6, "{}: prior {class}", case.name);
            }
            // The accuracy from crowd-kit's confusion matrices, as defined above.
            for rater in &ds.raters {
                let want: f64 = case
                    .ds_errors
                    .iter()
                    .filter(|(r, given, truth, _)| *r == rater.rater && given == truth)
                    .map(|(_, _, truth, e)| case.ds_priors[&truth.to_string()] * e)
                    .sum();
                assert!(
                    (rater.accuracy - want).abs() < 1e-6,
                    "{}: accuracy of {}: {} against {want}",
                    case.name,
                    rater.rater,
                    rater.accuracy
                );
            }
        }
    }
}
