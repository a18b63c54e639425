//! One answer per task from several raters' answers: majority vote, and Dawid-Skene
//! (each rater's confusion matrix estimated by expectation-maximisation). Both follow
//! `crowd-kit` 1.4 (`MajorityVote`, `DawidSkene`) step for step, and are checked
//! against it on `tests/fixtures/aggregation/fixtures.json`.
//!
//! The classes are the labels that occur in the answers, in the order they first occur
//! in the input (as crowd-kit 1.4 on pandas 3 orders them: `value_counts` keeps the
//! order of first appearance). Callers that want ties settled by a rule of theirs hand
//! the answers in that order: the app hands them in the rubric's option order.
//!
//! - **Majority vote**: a task's posteriors are each label's share of its answers; its
//!   label is the most frequent one, a tie going to the first of the tied labels in
//!   class order (pandas' `idxmax`). Its confidence is the winning share.
//! - **Dawid-Skene**: starts from the majority vote's shares; the prior of each class is
//!   the mean of the tasks' posteriors; the M-step sums each rater's posteriors per
//!   (rater, label given), floors each sum at 1e-10 and divides by the rater's column
//!   sum (over the labels that rater gave); the E-step multiplies the prior (floored at
//!   1e-10) by the confusion entries of the task's answers (in base-2 logs, scaled so the
//!   largest is 1) and normalises. At most 100 iterations, stopping when the evidence
//!   lower bound per answer gains less than 1e-5. A task's label is the class of highest
//!   posterior (ties to the first class), its confidence that posterior.
//! - A rater's **estimated accuracy** (Dawid-Skene) is the chance they give the true
//!   class of a task drawn from the prior: the sum over classes of the prior times the
//!   rater's confusion entry for answering that class when it is true (0 for a class the
//!   rater never gave).

use std::collections::BTreeMap;

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
    pub label: L,
    /// The posterior of `label` (for majority vote, its share of the answers).
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

/// The answers as indices into sorted tasks, raters and classes.
struct Coded<T, R, L> {
    tasks: Vec<T>,
    raters: Vec<R>,
    classes: Vec<L>,
    /// (task, rater, class) per answer.
    rows: Vec<(usize, usize, usize)>,
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

fn code<T: Ord + Clone, R: Ord + Clone, L: Ord + Clone>(votes: &[Vote<T, R, L>]) -> Coded<T, R, L> {
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
    let rows = votes
        .iter()
        .map(|v| (task_at[&v.task], rater_at[&v.rater], class_at[&v.label]))
        .collect();
    Coded {
        tasks,
        raters,
        classes,
        rows,
    }
}

/// The majority vote's shares per task and class.
fn shares(tasks: usize, classes: usize, rows: &[(usize, usize, usize)]) -> Vec<Vec<f64>> {
    let mut counts = vec![vec![0.0; classes]; tasks];
    for &(t, _, c) in rows {
        counts[t][c] += 1.0;
    }
    for row in &mut counts {
        let total: f64 = row.iter().sum();
        if total > 0.0 {
            row.iter_mut().for_each(|x| *x /= total);
        }
    }
    counts
}

/// The first class of highest posterior.
fn most_probable(posteriors: &[f64]) -> usize {
    let mut best = 0;
    for (i, p) in posteriors.iter().enumerate() {
        if *p > posteriors[best] {
            best = i;
        }
    }
    best
}

fn answers<T: Clone, R, L: Clone>(
    coded: &Coded<T, R, L>,
    posteriors: Vec<Vec<f64>>,
) -> Vec<TaskAnswer<T, L>> {
    let mut per_task = vec![0usize; coded.tasks.len()];
    for &(t, _, _) in &coded.rows {
        per_task[t] += 1;
    }
    posteriors
        .into_iter()
        .enumerate()
        .map(|(t, posteriors)| {
            let best = most_probable(&posteriors);
            TaskAnswer {
                task: coded.tasks[t].clone(),
                label: coded.classes[best].clone(),
                confidence: posteriors[best],
                posteriors,
                answers: per_task[t],
            }
        })
        .collect()
}

/// Majority vote (crowd-kit's `MajorityVote` without weights).
pub fn majority_vote<T: Ord + Clone, R: Ord + Clone, L: Ord + Clone>(
    votes: &[Vote<T, R, L>],
) -> Aggregate<T, R, L> {
    let coded = code(votes);
    let posteriors = shares(coded.tasks.len(), coded.classes.len(), &coded.rows);
    Aggregate {
        tasks: answers(&coded, posteriors),
        classes: coded.classes,
        priors: Vec::new(),
        raters: Vec::new(),
        loss_history: Vec::new(),
    }
}

/// Each rater's confusion entries: per rater, per label they gave (none for a label they
/// never gave), the weight of each true class (a column sums to 1 over the labels the
/// rater gave).
type Errors = Vec<Vec<Option<Vec<f64>>>>;

fn m_step(
    raters: usize,
    classes: usize,
    rows: &[(usize, usize, usize)],
    probas: &[Vec<f64>],
) -> Errors {
    let mut errors: Errors = vec![vec![None; classes]; raters];
    for &(t, r, l) in rows {
        let entry = errors[r][l].get_or_insert_with(|| vec![0.0; classes]);
        for (e, p) in entry.iter_mut().zip(&probas[t]) {
            *e += p;
        }
    }
    for rater in &mut errors {
        let mut column = vec![0.0; classes];
        for entry in rater.iter_mut().flatten() {
            for (e, sum) in entry.iter_mut().zip(column.iter_mut()) {
                *e = e.max(EPS);
                *sum += *e;
            }
        }
        for entry in rater.iter_mut().flatten() {
            for (e, sum) in entry.iter_mut().zip(&column) {
                *e /= sum;
            }
        }
    }
    errors
}

/// The confusion entries of rater `r` giving label `l` (which they gave).
fn entry(errors: &Errors, r: usize, l: usize) -> &[f64] {
    errors[r][l].as_deref().unwrap_or_default()
}

/// `errors` with `log` applied to every entry: once per (rater, label), not per answer.
fn logs_of(errors: &Errors, log: fn(f64) -> f64) -> Errors {
    errors
        .iter()
        .map(|rater| {
            rater
                .iter()
                .map(|e| e.as_ref().map(|e| e.iter().map(|x| log(*x)).collect()))
                .collect()
        })
        .collect()
}

fn e_step(
    tasks: usize,
    rows: &[(usize, usize, usize)],
    priors: &[f64],
    errors: &Errors,
) -> Vec<Vec<f64>> {
    let base: Vec<f64> = priors.iter().map(|p| p.max(EPS).log2()).collect();
    let log_errors = logs_of(errors, f64::log2);
    let mut logs = vec![base; tasks];
    for &(t, r, l) in rows {
        for (x, e) in logs[t].iter_mut().zip(entry(&log_errors, r, l)) {
            *x += e;
        }
    }
    for row in &mut logs {
        let top = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        row.iter_mut().for_each(|x| *x = (*x - top).exp2());
        let total: f64 = row.iter().sum();
        row.iter_mut().for_each(|x| *x /= total);
    }
    logs
}

fn column_means(probas: &[Vec<f64>], classes: usize) -> Vec<f64> {
    let mut means = vec![0.0; classes];
    for row in probas {
        for (m, p) in means.iter_mut().zip(row) {
            *m += p;
        }
    }
    let n = probas.len().max(1) as f64;
    means.iter_mut().for_each(|m| *m /= n);
    means
}

/// The evidence lower bound: the expected log joint probability of the answers and the
/// classes under the posteriors, plus the posteriors' entropy (natural logs).
fn evidence_lower_bound(
    rows: &[(usize, usize, usize)],
    probas: &[Vec<f64>],
    priors: &[f64],
    errors: &Errors,
) -> f64 {
    let log_priors: Vec<f64> = priors.iter().map(|p| p.max(EPS).ln()).collect();
    let log_errors = logs_of(errors, f64::ln);
    let mut joint = 0.0;
    for &(t, r, l) in rows {
        for ((p, e), log_prior) in probas[t]
            .iter()
            .zip(entry(&log_errors, r, l))
            .zip(&log_priors)
        {
            joint += p * (e + log_prior);
        }
    }
    let entropy: f64 = probas
        .iter()
        .flatten()
        .map(|p| {
            let p = p.max(EPS);
            -p * p.ln()
        })
        .sum();
    joint + entropy
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
    let coded = code(votes);
    let (n_tasks, n_raters, k) = (coded.tasks.len(), coded.raters.len(), coded.classes.len());
    let rows = &coded.rows;
    let mut probas = shares(n_tasks, k, rows);
    let mut priors = column_means(&probas, k);
    let mut errors = m_step(n_raters, k, rows, &probas);
    let mut loss = f64::NEG_INFINITY;
    let mut loss_history = Vec::new();
    for _ in 0..max_iterations {
        probas = e_step(n_tasks, rows, &priors, &errors);
        priors = column_means(&probas, k);
        errors = m_step(n_raters, k, rows, &probas);
        let new_loss = evidence_lower_bound(rows, &probas, &priors, &errors) / rows.len() as f64;
        loss_history.push(new_loss);
        // crowd-kit floors the posteriors in place while it works out the bound.
        probas.iter_mut().flatten().for_each(|p| *p = p.max(EPS));
        if new_loss - loss < tolerance {
            break;
        }
        loss = new_loss;
    }
    let priors: Vec<f64> = priors.iter().map(|p| p.max(EPS)).collect();
    let mut per_rater = vec![0usize; n_raters];
    for &(_, r, _) in rows {
        per_rater[r] += 1;
    }
    let raters = coded
        .raters
        .iter()
        .enumerate()
        .map(|(r, rater)| RaterAccuracy {
            rater: rater.clone(),
            accuracy: (0..k)
                .map(|c| priors[c] * errors[r][c].as_ref().map_or(0.0, |e| e[c]))
                .sum(),
            answers: per_rater[r],
        })
        .collect();
    Aggregate {
        tasks: answers(&coded, probas),
        classes: coded.classes,
        priors,
        raters,
        loss_history,
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

/// A question whose answers are aggregated: every slot whose metrics role is a
/// preference (a choice of A, B or tie, or a scale, each point a class), ordinal or
/// nominal (yes/no questions included). Scores are means, not classes, and are left out;
/// so are questions of several choices. Unscaled options (N/A, cannot assess) are classes
/// like any other: a task most raters found not applicable gets that answer.
#[derive(Debug, Clone)]
pub struct Question {
    /// As in the metrics: `sxs`, `a.correctness`.
    pub path: String,
    /// As in the ratings export: `sxs`, `a_correctness`.
    pub column: String,
    side: Option<crate::rubric::Side>,
    key: String,
    /// The answers the rubric offers, in its order.
    options: Vec<Label>,
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
    /// that a tie goes to the option the rubric lists first.
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
        .filter(|slot| {
            matches!(
                slot.metrics(),
                Some(Role::Preference { .. } | Role::Ordinal { .. } | Role::Nominal { .. })
            )
        })
        .map(|slot| {
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
            }
        })
        .collect()
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

    /// Question `i`'s aggregation by `method`, the answers taken in the rubric's option
    /// order.
    pub fn run(&self, i: usize, method: Method) -> Aggregate<T, String, Label>
    where
        T: Ord,
    {
        method.run(&self.questions[i].in_option_order(&self.votes[i]))
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
    /// Tasks with at least one answer: each has an aggregated answer.
    pub tasks: usize,
    /// Of those, the share where majority vote and Dawid-Skene give different answers.
    pub differ: Option<f64>,
    /// The mean confidence of each method's answers.
    pub majority_confidence: Option<f64>,
    pub dawid_skene_confidence: Option<f64>,
    /// Each rater's estimated accuracy (Dawid-Skene), by name.
    pub raters: BTreeMap<String, f64>,
}

/// The metrics' summary of each question (by path), from the gathered answers.
pub fn summarise<T: Ord + Clone>(gathered: &Gathered<T>) -> BTreeMap<String, QuestionAggregation> {
    let mut out = BTreeMap::new();
    for (i, question) in gathered.questions.iter().enumerate() {
        let mv = gathered.run(i, Method::Majority);
        let ds = gathered.run(i, Method::DawidSkene);
        let n = mv.tasks.len();
        let mean = |a: &Aggregate<T, String, Label>| {
            (n > 0).then(|| a.tasks.iter().map(|t| t.confidence).sum::<f64>() / n as f64)
        };
        let differ = mv
            .tasks
            .iter()
            .zip(&ds.tasks)
            .filter(|(m, d)| m.label != d.label)
            .count();
        out.insert(
            question.path.clone(),
            QuestionAggregation {
                tasks: n,
                differ: (n > 0).then(|| differ as f64 / n as f64),
                majority_confidence: mean(&mv),
                dawid_skene_confidence: mean(&ds),
                raters: ds
                    .raters
                    .iter()
                    .map(|r| (r.rater.clone(), r.accuracy))
                    .collect(),
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_tie_goes_to_the_label_seen_first() {
        let v = votes(&[
            ("t1", "r1", Label::Text("b".into())),
            ("t1", "r2", Label::Text("a".into())),
            ("t2", "r1", Label::Text("b".into())),
        ]);
        let mv = majority_vote(&v);
        assert_eq!(mv.tasks[0].label, Label::Text("b".into()));
        assert_eq!(mv.tasks[0].confidence, 0.5);
        assert_eq!(mv.tasks[1].label, Label::Text("b".into()));
        assert_eq!(mv.tasks[1].confidence, 1.0);
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
            assert_eq!(
                task.label, label,
                "{}: {method} label of {}",
                case.name, task.task
            );
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
