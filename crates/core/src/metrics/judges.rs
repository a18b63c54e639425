//! LLM judges beside the human raters of a batch, from the calls of each judge's latest
//! run. Judges never count in the human figures; here each is measured against them.
//!
//! Per judge: how many calls were answered, unparsed or failed; coverage (tasks with a
//! whole rating / tasks asked); position consistency (a pair's preferences agree when
//! asked in both orders); its lean to the response shown first and to the longer
//! response. Per question: coverage (the question answered consistently / tasks asked),
//! and agreement with the human consensus and with each rater (percent agreement with
//! and without ties, Cohen's kappa, and for ordered answers weighted kappa and
//! Spearman), beside the same figures between human raters: the ceiling a judge can be
//! expected to reach.
//!
//! Preferences are read by order and by side. A choice of A, tie or B (the six aspects
//! of `pairwise-aspects`) is ordered, A < tie < B, and compared as the sides it names
//! (codes -1, 0 and 1), so it has weighted kappa and Spearman too. A preference on a
//! scale (blackhat's 1-7 side-by-side score) is compared on the scale, and again under
//! `sides` with every answer read as the side it favours (below the midpoint A, at it a
//! tie, above it B): whether judge and raters prefer the same response, however strongly.
//!
//! The consensus of a task's raters is, for ordered answers, their median (when it is
//! one of the answers: an odd number of them, or two middle ones that agree); for
//! unordered ones (and for a choice of A, tie or B, as before it was read in order), the
//! answer more of them gave than any other. A task without one is left out of the
//! consensus figures. Answers that are not on the scale (N/A, cannot assess) are left
//! out of ordered comparisons, as they are of alpha.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::pairwise::{PairAgreement, pair_agreement};
use super::stats::{self, Estimate};
use super::{Accumulator, Question};
use crate::judge::{Asked, FieldStatus, Fields, combine};
use crate::lifecycle::CallStatus;
use crate::rubric::{Favours, Rubric, ShownAnswers, Subject, answer_at};

/// One call of a judge's latest run over the batch, as metrics read it.
#[derive(Debug, Clone)]
pub struct JudgeCall {
    pub judge: String,
    pub task_id: Uuid,
    pub swapped: bool,
    pub status: CallStatus,
    /// By path as the judge was shown them.
    pub fields: Fields,
    /// In the orientation the judge was shown.
    pub answers: ShownAnswers,
    pub len_a: i64,
    pub len_b: i64,
}

/// One judge beside the raters.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct JudgeMetrics {
    /// Tasks the judge was asked about, and calls made (two per task for a pair).
    pub tasks: u64,
    pub calls: u64,
    pub answered: u64,
    pub unparsed: u64,
    pub failed: u64,
    /// Tasks with a whole rating from the judge, and their share of the tasks asked.
    pub rated: u64,
    pub coverage: Option<f64>,
    /// Tasks whose orders were both read but disagreed on an answer (`inconsistent`):
    /// read, and still no whole rating.
    pub orders_disagreed: u64,
    /// Of a pair's preferences read in both orders, the share that agree once turned
    /// back to the task's sides (all preference questions pooled), with a Wilson interval.
    pub position_consistency: Option<Estimate>,
    /// Of the decisive preferences in every call, the share for the response shown
    /// first (0.5 = no lean).
    pub position_bias: Option<Lean>,
    /// Of the judge's decisive preferences between responses of different lengths, the
    /// share for the longer one.
    pub length_bias: Option<Lean>,
    /// Per question path.
    pub fields: BTreeMap<String, JudgeField>,
}

/// A share of decisive answers, with how many there were.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Lean {
    pub n: u64,
    pub share: Option<Estimate>,
}

/// One question: the judge against the raters.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct JudgeField {
    /// Tasks asked, and those where the judge's answer was read (consistently, for a
    /// pair).
    pub asked: u64,
    pub parsed: u64,
    pub coverage: Option<f64>,
    /// Against the raters' consensus, task by task.
    #[serde(flatten)]
    pub consensus: PairAgreement,
    /// Against each rater, on the tasks both answered.
    pub raters: BTreeMap<String, PairAgreement>,
    /// Between the raters themselves (every pair of raters on a task, both ways round):
    /// the ceiling.
    pub human: PairAgreement,
    /// For a preference on a scale: the same figures with each answer read as the side
    /// it favours (A, tie or B, coded -1, 0 and 1). Absent for other questions (a choice
    /// of A, tie or B is already compared by side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sides: Option<SideAgreement>,
}

/// A preference's answers read as the sides they favour: the judge against the raters'
/// consensus, each rater, and the raters against each other, as in [`JudgeField`].
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SideAgreement {
    #[serde(flatten)]
    pub consensus: PairAgreement,
    pub raters: BTreeMap<String, PairAgreement>,
    pub human: PairAgreement,
}

impl Accumulator {
    /// The judges of the batch, from their calls, against the ratings gathered so far.
    pub fn judges(
        &self,
        rubric: &Rubric,
        min_explanation: usize,
        calls: &[JudgeCall],
    ) -> BTreeMap<String, JudgeMetrics> {
        if calls.is_empty() {
            // No judge has run over the batch: no need to gather the raters' answers.
            return BTreeMap::new();
        }
        let names: Vec<&str> = self.raters.iter().map(|r| r.name.as_str()).collect();
        // Per task: each included rating's rater and codes, by rater name (the order
        // ratings came in must not matter).
        let mut humans: HashMap<Uuid, Vec<(u32, &[u8])>> = HashMap::new();
        for unit in self.tasks.iter().filter(|u| !u.members.is_empty()) {
            let mut given: Vec<(u32, &[u8])> = unit
                .members
                .iter()
                .map(|id| {
                    let e = &self.entries[id];
                    (e.rater, &e.codes[..])
                })
                .collect();
            given.sort_by_key(|(r, _)| names[*r as usize]);
            humans.insert(unit.id, given);
        }
        let mut out = BTreeMap::new();
        for judge_calls in calls.chunk_by(|x, y| x.judge == y.judge) {
            let summary = self.judge(rubric, min_explanation, judge_calls, &humans, &names);
            out.insert(judge_calls[0].judge.clone(), summary);
        }
        out
    }

    fn judge(
        &self,
        rubric: &Rubric,
        min_explanation: usize,
        calls: &[JudgeCall],
        humans: &HashMap<Uuid, Vec<(u32, &[u8])>>,
        names: &[&str],
    ) -> JudgeMetrics {
        let count = |s: CallStatus| calls.iter().filter(|c| c.status == s).count() as u64;
        let orders = match rubric.subject {
            Subject::Pair => 2,
            Subject::Single => 1,
        };
        let mut by_task: BTreeMap<Uuid, Vec<&JudgeCall>> = BTreeMap::new();
        for call in calls {
            by_task.entry(call.task_id).or_default().push(call);
        }
        let preferences: Vec<usize> = (0..self.questions.len())
            .filter(|&i| self.questions[i].is_preference())
            .collect();
        let mut rated = 0;
        let mut disagreed = 0;
        let mut field_parsed = vec![0u64; self.questions.len()];
        let mut consensus_pairs = vec![Vec::new(); self.questions.len()];
        let mut rater_pairs: Vec<BTreeMap<String, Vec<(i64, i64)>>> =
            vec![BTreeMap::new(); self.questions.len()];
        let (mut consistent, mut both) = (0u64, 0u64);
        let (mut first, mut decisive) = (0u64, 0u64);
        let (mut longer, mut lengths) = (0u64, 0u64);
        for (task, task_calls) in &by_task {
            // Leans to the shown position: every read call, as shown.
            for call in task_calls.iter().filter(|c| c.status != CallStatus::Failed) {
                for &qi in &preferences {
                    let q = &self.questions[qi];
                    if let Some(side) = favours(q, answer_at(&call.answers, &q.path)) {
                        if side != Favours::Tie {
                            decisive += 1;
                            first += u64::from(side == Favours::A);
                        }
                    }
                }
            }
            let asked: Vec<Asked<'_>> = task_calls
                .iter()
                .filter(|c| c.status != CallStatus::Failed)
                .map(|c| Asked {
                    swapped: c.swapped,
                    answers: &c.answers,
                    fields: &c.fields,
                })
                .collect();
            if orders == 2 {
                let canonical = |swapped: bool| {
                    asked
                        .iter()
                        .find(|a| a.swapped == swapped)
                        .map(|a| a.answers.clone().into_task(rubric, swapped))
                };
                if let (Some(straight), Some(turned)) = (canonical(false), canonical(true)) {
                    for &qi in &preferences {
                        let q = &self.questions[qi];
                        let x = favours(q, answer_at(&straight, &q.path));
                        let y = favours(q, answer_at(&turned, &q.path));
                        if let (Some(x), Some(y)) = (x, y) {
                            both += 1;
                            consistent += u64::from(x == y);
                        }
                    }
                }
            }
            if asked.len() < orders {
                continue;
            }
            let combined = combine(rubric, &asked, min_explanation);
            rated += u64::from(combined.complete());
            disagreed += u64::from(
                combined
                    .fields
                    .values()
                    .any(|s| *s == FieldStatus::Inconsistent),
            );
            let (len_a, len_b) = (task_calls[0].len_a, task_calls[0].len_b);
            let raters = humans.get(task);
            for (qi, q) in self.questions.iter().enumerate() {
                let parsed = combined.fields.get(&q.path).is_some_and(|s| s.is_parsed());
                let code = if parsed {
                    code_of(q, answer_at(&combined.answers, &q.path))
                } else {
                    0
                };
                if code == 0 {
                    continue;
                }
                field_parsed[qi] += 1;
                if q.is_preference() && len_a != len_b {
                    if let Some(side) = q.favours(code).filter(|s| *s != Favours::Tie) {
                        lengths += 1;
                        longer += u64::from((side == Favours::A) == (len_a > len_b));
                    }
                }
                let Some(raters) = raters else { continue };
                let Some(judged) = comparable(q, code) else {
                    continue;
                };
                let given: Vec<(u32, i64)> = raters
                    .iter()
                    .filter_map(|(r, codes)| comparable(q, codes[qi]).map(|c| (*r, c)))
                    .collect();
                for (r, c) in &given {
                    rater_pairs[qi]
                        .entry(names[*r as usize].to_owned())
                        .or_default()
                        .push((judged, *c));
                }
                if let Some(agreed) = consensus(q, given.iter().map(|(_, c)| *c).collect()) {
                    consensus_pairs[qi].push((judged, agreed));
                }
            }
        }
        let tasks = by_task.len() as u64;
        let fields = self
            .questions
            .iter()
            .enumerate()
            .map(|(qi, q)| {
                let human = self.human_pairs(qi, humans);
                let reading = Comparison::of(q);
                let field = JudgeField {
                    asked: tasks,
                    parsed: field_parsed[qi],
                    coverage: (tasks > 0).then(|| field_parsed[qi] as f64 / tasks as f64),
                    consensus: reading.figures(q, &consensus_pairs[qi]),
                    raters: rater_pairs[qi]
                        .iter()
                        .map(|(name, pairs)| (name.clone(), reading.figures(q, pairs)))
                        .collect(),
                    human: reading.figures(q, &human),
                    sides: matches!(q.reading, super::Reading::Scale { .. }).then(|| {
                        let sides = Comparison::Sides;
                        SideAgreement {
                            consensus: sides.figures(q, &consensus_pairs[qi]),
                            raters: rater_pairs[qi]
                                .iter()
                                .map(|(name, pairs)| (name.clone(), sides.figures(q, pairs)))
                                .collect(),
                            human: sides.figures(q, &human),
                        }
                    }),
                };
                (q.path.clone(), field)
            })
            .collect();
        JudgeMetrics {
            tasks,
            calls: calls.len() as u64,
            answered: count(CallStatus::Answered),
            unparsed: count(CallStatus::Unparsed),
            failed: count(CallStatus::Failed),
            rated,
            coverage: (tasks > 0).then(|| rated as f64 / tasks as f64),
            orders_disagreed: disagreed,
            position_consistency: stats::share(consistent, both),
            position_bias: (orders == 2).then(|| Lean {
                n: decisive,
                share: stats::share(first, decisive),
            }),
            length_bias: (orders == 2).then(|| Lean {
                n: lengths,
                share: stats::share(longer, lengths),
            }),
            fields,
        }
    }

    /// Every pair of raters' answers to question `qi` on a task, both ways round.
    fn human_pairs(&self, qi: usize, humans: &HashMap<Uuid, Vec<(u32, &[u8])>>) -> Vec<(i64, i64)> {
        let q = &self.questions[qi];
        let mut pairs = Vec::new();
        for ratings in humans.values() {
            let codes: Vec<i64> = ratings
                .iter()
                .filter_map(|(_, codes)| comparable(q, codes[qi]))
                .collect();
            for (i, x) in codes.iter().enumerate() {
                for y in &codes[i + 1..] {
                    pairs.push((*x, *y));
                    pairs.push((*y, *x));
                }
            }
        }
        pairs
    }
}

/// How a question's pairs of codes are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Comparison {
    /// As they are: ordered or not as the question's level says, with its tie value.
    Codes,
    /// As the sides they favour, ordered A < tie < B (-1, 0, 1); pairs where either
    /// answer favours no side are left out.
    Sides,
}

impl Comparison {
    /// A choice each of whose options names a side of its own is compared by side; any
    /// other question by its codes.
    fn of(q: &Question) -> Self {
        let sides = &q.favours;
        let one_each = sides.iter().all(Option::is_some)
            && (0..sides.len()).all(|i| !sides[..i].contains(&sides[i]));
        if matches!(q.reading, super::Reading::Choice) && one_each {
            Self::Sides
        } else {
            Self::Codes
        }
    }

    fn figures(self, q: &Question, pairs: &[(i64, i64)]) -> PairAgreement {
        match self {
            Self::Codes => {
                let ordered = q.level != super::agreement::Level::Nominal;
                pair_agreement(pairs, tie_code(q), ordered)
            }
            Self::Sides => {
                let side = |code: i64| q.favours(u8::try_from(code).ok()?).map(side_code);
                let sided: Vec<(i64, i64)> = pairs
                    .iter()
                    .filter_map(|&(x, y)| Some((side(x)?, side(y)?)))
                    .collect();
                pair_agreement(&sided, Some(side_code(Favours::Tie)), true)
            }
        }
    }
}

/// A side as an ordered code: A -1, tie 0, B 1.
fn side_code(side: Favours) -> i64 {
    match side {
        Favours::A => -1,
        Favours::Tie => 0,
        Favours::B => 1,
    }
}

/// A code as comparisons use it: missing answers, and off-scale ones for ordered
/// questions, are left out.
fn comparable(q: &Question, code: u8) -> Option<i64> {
    if code == 0 {
        return None;
    }
    let ordered = q.level != super::agreement::Level::Nominal;
    (!(ordered && q.unscaled[usize::from(code) - 1])).then_some(i64::from(code))
}

/// The code that stands for a tie, for a preference.
fn tie_code(q: &Question) -> Option<i64> {
    q.favours
        .iter()
        .position(|f| *f == Some(Favours::Tie))
        .map(|i| i as i64 + 1)
}

/// The raters' consensus on a task (see the module's notes).
fn consensus(q: &Question, mut codes: Vec<i64>) -> Option<i64> {
    if codes.is_empty() {
        return None;
    }
    if q.level != super::agreement::Level::Nominal {
        return super::stats::middle(&mut codes).and_then(super::stats::Middle::one);
    }
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for c in codes {
        *counts.entry(c).or_default() += 1;
    }
    let most = *counts.values().max()?;
    let mut top = counts.iter().filter(|(_, n)| **n == most);
    let (code, _) = top.next()?;
    top.next().is_none().then_some(*code)
}

fn code_of(q: &Question, value: Option<&Value>) -> u8 {
    let Some(value) = value else { return 0 };
    let text = value.to_string();
    q.texts
        .iter()
        .position(|t| *t == text)
        .map_or(0, |i| i as u8 + 1)
}

fn favours(q: &Question, value: Option<&Value>) -> Option<Favours> {
    q.favours(code_of(q, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::{Outcome, Status};
    use crate::metrics::RatingFacts;
    use crate::rubric::by_name;
    use serde_json::json;

    fn human(task: Uuid, rater: &str, answers: Value) -> RatingFacts {
        RatingFacts {
            id: Uuid::now_v7(),
            task_id: task,
            rater: rater.into(),
            outcome: Outcome::Rated,
            status: Status::Submitted,
            answers: answers.to_string(),
            swapped: false,
            time_spent_s: 60,
            model_a: None,
            model_b: None,
            len_a: 0,
            len_b: 0,
            skip_reason: None,
            counted: true,
        }
    }

    fn call(task: Uuid, swapped: bool, help: &str, len: (i64, i64)) -> JudgeCall {
        let rubric = by_name("pairwise-aspects").unwrap();
        let output = json!({"rationale": "Compared on every aspect.", "choices": {
            "helpfulness": help, "clarity": "tie", "factuality": "tie", "depth": "tie",
            "engagement": "tie", "safety": "tie"}})
        .to_string();
        let parsed = crate::judge::parse(rubric, crate::judge::Format::Choices, &output, false, 0);
        JudgeCall {
            judge: "j".into(),
            task_id: task,
            swapped,
            status: if parsed.answered() {
                CallStatus::Answered
            } else {
                CallStatus::Unparsed
            },
            fields: parsed.fields,
            answers: parsed.answers,
            len_a: len.0,
            len_b: len.1,
        }
    }

    fn aspects(help: &str) -> Value {
        json!({"helpfulness": help, "clarity": "tie", "factuality": "tie", "depth": "tie",
               "engagement": "tie", "safety": "tie", "rationale": "Read both with care."})
    }

    #[test]
    fn a_judge_is_measured_against_the_raters() {
        let rubric = by_name("pairwise-aspects").unwrap();
        let mut acc = Accumulator::new(rubric, 1, &[]);
        let (t1, t2, t3) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        for (task, answers) in [
            (t1, ["a", "a", "b"]),
            (t2, ["b", "b", "b"]),
            (t3, ["a", "b", "tie"]),
        ] {
            for (i, help) in answers.iter().enumerate() {
                acc.add(&human(task, &format!("r{i}"), aspects(help)));
            }
        }
        // t1: A both ways (consistent); t2: B both ways; t3: follows the position.
        let calls = vec![
            call(t1, false, "A", (10, 50)),
            call(t1, true, "B", (10, 50)),
            call(t2, false, "B", (10, 50)),
            call(t2, true, "A", (10, 50)),
            call(t3, false, "A", (10, 50)),
            call(t3, true, "A", (10, 50)),
        ];
        let judges = acc.judges(rubric, 0, &calls);
        let j = &judges["j"];
        assert_eq!((j.tasks, j.calls, j.answered, j.rated), (3, 6, 6, 2));
        assert_eq!(j.coverage, Some(2.0 / 3.0));
        // t3: both orders read, and they disagree on helpfulness.
        assert_eq!(j.orders_disagreed, 1);
        // helpfulness: 2 of 3 tasks consistent; the five tied aspects all consistent.
        let consistency = j.position_consistency.as_ref().unwrap();
        assert!((consistency.value - 17.0 / 18.0).abs() < 1e-12);
        let help = &j.fields["helpfulness"];
        assert_eq!((help.asked, help.parsed), (3, 2));
        // Consensus: t1 a, t2 b (t3 has none); the judge says a, b.
        assert_eq!(help.consensus.n, 2);
        assert_eq!(help.consensus.agreement, Some(1.0));
        // Against r2: t1 (judge a, r2 b), t2 (b, b).
        assert_eq!(help.raters["r2"].n, 2);
        assert_eq!(help.raters["r2"].agreement, Some(0.5));
        // Decisive helpfulness answers as shown: A, B, B, A, A, A: four of six for A.
        let bias = j.position_bias.as_ref().unwrap();
        assert_eq!(bias.n, 6);
        assert!((bias.share.unwrap().value - 4.0 / 6.0).abs() < 1e-12);
        // Combined decisive verdicts: t1 A (shorter), t2 B (longer).
        let length = j.length_bias.as_ref().unwrap();
        assert_eq!(length.n, 2);
        assert_eq!(length.share.unwrap().value, 0.5);
        // Humans: t1 (a,a,b), t2 (b,b,b), t3 (a,b,tie): 9 pairs, 4 equal.
        assert_eq!(help.human.n, 18);
        assert!((help.human.agreement.unwrap() - 8.0 / 18.0).abs() < 1e-12);
    }

    #[test]
    fn consensus_is_the_median_or_the_plurality() {
        let rubric = by_name("blackhat").unwrap();
        let acc = Accumulator::new(rubric, 1, &[]);
        let sxs = acc.questions.iter().find(|q| q.path == "sxs").unwrap();
        assert_eq!(consensus(sxs, vec![2, 3, 6]), Some(3));
        assert_eq!(consensus(sxs, vec![2, 6]), None);
        assert_eq!(consensus(sxs, vec![5, 5, 1, 7]), Some(5));
        let exec = acc
            .questions
            .iter()
            .find(|q| q.path == "a.executability")
            .unwrap();
        assert_eq!(consensus(exec, vec![1, 1, 2]), Some(1));
        assert_eq!(consensus(exec, vec![1, 2]), None);
    }

    /// A judge's call as it would have been read: `canonical` is its answer to
    /// `question` in the task's orientation, shown the other way round when `swapped`.
    fn read_call(task: Uuid, swapped: bool, question: &str, canonical: &Value) -> JudgeCall {
        let shown = match (canonical, swapped) {
            (_, false) => canonical.clone(),
            (Value::Number(n), true) => json!(8 - n.as_i64().unwrap()),
            (Value::String(s), true) => json!(match s.as_str() {
                "a" => "b",
                "b" => "a",
                other => other,
            }),
            _ => unreachable!("{canonical}"),
        };
        let one = serde_json::Map::from_iter([(question.to_owned(), shown)]);
        JudgeCall {
            judge: "j".into(),
            task_id: task,
            swapped,
            status: CallStatus::Answered,
            fields: Fields::from([(question.to_owned(), crate::judge::FieldStatus::Parsed)]),
            answers: ShownAnswers::new(one),
            len_a: 10,
            len_b: 10,
        }
    }

    /// The judges' figures against scikit-learn and SciPy: batches of a judge and raters
    /// on blackhat's score and an aspect of `pairwise-aspects`, made and worked out by
    /// `tests/fixtures/pairwise/generate.py` (`judges.json`).
    #[test]
    fn agreement_by_order_and_side_matches_sklearn_and_scipy() {
        #[derive(serde::Deserialize)]
        struct Case {
            name: String,
            rubric: String,
            question: String,
            tasks: Vec<Task>,
            expected: Value,
        }
        #[derive(serde::Deserialize)]
        struct Task {
            judge: Value,
            raters: BTreeMap<String, Value>,
        }
        let cases: Vec<Case> = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/pairwise/judges.json"
        ))
        .expect("fixtures");
        assert!(cases.len() >= 8, "{} cases", cases.len());
        let mut worst = 0.0f64;
        let mut same = |at: &str, got: &PairAgreement, want: &Value| {
            assert_eq!(got.n as u64, want["n"].as_u64().unwrap(), "{at} n");
            for (what, g) in [
                ("agreement", got.agreement),
                ("agreement_without_ties", got.agreement_without_ties),
                ("cohen_kappa", got.cohen_kappa),
                ("weighted_kappa", got.weighted_kappa),
                ("spearman", got.spearman),
            ] {
                match (g, want[what].as_f64()) {
                    (Some(g), Some(w)) => {
                        worst = worst.max((g - w).abs());
                        assert!((g - w).abs() < 1e-9, "{at} {what}: {g} vs {w}");
                    }
                    (None, None) => {}
                    (g, w) => panic!("{at} {what}: {g:?} vs {w:?}"),
                }
            }
        };
        for case in &cases {
            let rubric = by_name(&case.rubric).unwrap();
            let mut acc = Accumulator::new(rubric, 1, &[]);
            let mut calls = Vec::new();
            for (i, task) in case.tasks.iter().enumerate() {
                let id = Uuid::from_u128(i as u128 + 1);
                for (rater, answer) in &task.raters {
                    let one = serde_json::Map::from_iter([(case.question.clone(), answer.clone())]);
                    acc.add(&human(id, rater, Value::Object(one)));
                }
                for swapped in [false, true] {
                    calls.push(read_call(id, swapped, &case.question, &task.judge));
                }
            }
            let judges = acc.judges(rubric, 0, &calls);
            let field = &judges["j"].fields[&case.question];
            let want = &case.expected;
            let name = &case.name;
            same(&format!("{name} consensus"), &field.consensus, want);
            same(&format!("{name} human"), &field.human, &want["human"]);
            let raters = want["raters"].as_object().unwrap();
            assert_eq!(field.raters.len(), raters.len(), "{name}");
            for (rater, figures) in raters {
                same(&format!("{name} {rater}"), &field.raters[rater], figures);
            }
            match (&field.sides, want.get("sides")) {
                (Some(sides), Some(want)) => {
                    same(&format!("{name} sides"), &sides.consensus, want);
                    same(&format!("{name} sides human"), &sides.human, &want["human"]);
                    for (rater, figures) in want["raters"].as_object().unwrap() {
                        same(
                            &format!("{name} sides {rater}"),
                            &sides.raters[rater],
                            figures,
                        );
                    }
                }
                (None, None) => {}
                (got, _) => panic!("{name}: sides {got:?}"),
            }
        }
        eprintln!("largest difference to sklearn and scipy: {worst:e}");
    }
}
