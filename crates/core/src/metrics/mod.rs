//! A batch's metrics, computed from its ratings one row at a time, for any rubric: what
//! each question's metrics role says is measured (see [`crate::rubric::Role`]). The
//! ratings stay folded ([`Accumulator`]): a rating can be added, changed or taken out
//! later, which is how an instance keeps a batch's metrics up to date ([`live`]).
//!
//! Only ratings with outcome `rated` and status `submitted` or `accepted` are included.
//! Every other rating is excluded from every figure and counted under one reason:
//! draft, skipped, out of scope, rejected or returned (in that order of precedence).
//! Answers are read in the task's canonical orientation.
//!
//! - Every question with a role has its distribution and its agreement (Krippendorff's
//!   alpha at the level its role gives; a score also at the ordinal level, under
//!   `<path>:ordinal`).
//! - Each preference (which response is better) has its summary under its own key at the
//!   top of the metrics (`sxs` for blackhat): shares of A wins, ties and B wins, and the
//!   mean for a scale. With one preference in the rubric, the top-level `position_bias`
//!   and `models` are its own; with several, each summary has its own and the top-level
//!   ones pool them all.
//! - Each score has its mean and distribution, and a mean per model.
//! - Raters are compared with each other on the rubric's first preference (else its first
//!   score).
//! - Each rater's (and the batch's) leans to the response shown first and to the longer
//!   one, length-controlled preference, time against the guidance and straight-lining
//!   are in [`bias`].

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::lifecycle::{Exclusion, Outcome, Status};
use crate::rubric::{Answer, Favours, Role, Rubric, Slot, Subject};

pub mod agreement;
pub mod bias;
pub mod bradley_terry;
pub mod gold;
pub mod judges;
pub mod pairwise;
pub mod stats;

use agreement::Agreement;
use stats::{Estimate, Histogram};

/// What the metrics need of one rating.
#[derive(Debug, Clone)]
pub struct RatingFacts {
    pub id: Uuid,
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
    /// The two responses' lengths in characters (for the length lean).
    pub len_a: i64,
    pub len_b: i64,
    /// Whether it belongs in the batch's figures at all: a human's rating, not of a gold
    /// task, and not held for review first unless accepted. A full read has only these;
    /// a read of what changed also has the others, to take them out.
    pub counted: bool,
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

/// One preference question: which response the raters found better.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PreferenceSummary {
    pub n: u64,
    /// The mean of a scale (`null` for a choice of A, B or tie), with a 95% interval.
    pub mean: Option<Estimate>,
    /// Ratings per answer (every value of a scale, from its lowest).
    pub distribution: BTreeMap<String, u64>,
    /// Shares of answers that favour A, that are ties, and that favour B (on a scale:
    /// below, at and above its midpoint), with Wilson intervals.
    pub a_wins: Option<Estimate>,
    pub ties: Option<Estimate>,
    pub b_wins: Option<Estimate>,
    /// This question's own lean and model table, when the rubric has several
    /// preferences (with one, they are the top-level `position_bias` and `models`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_bias: Option<PositionBias>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Models>,
}

/// One score (a number whose mean means something, e.g. an additive total).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ScoreSummary {
    pub n: u64,
    pub mean: Option<Estimate>,
    /// Ratings per value, every value from the lowest to the highest.
    pub distribution: BTreeMap<String, u64>,
    /// The mean per model, best first (the response's model; for a question asked of
    /// each response, that response's model).
    pub models: Vec<ModelScore>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ModelScore {
    /// 1 for the highest mean.
    pub rank: usize,
    pub model: String,
    pub n: u64,
    pub mean: Option<Estimate>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RaterStats {
    pub rater: String,
    pub included: u64,
    pub median_time_s: Option<f64>,
    /// Of the rater's finished work (drafts aside).
    pub skip_rate: Option<f64>,
    pub out_of_scope_rate: Option<f64>,
    /// Share of equal answers to the rubric's first preference (else its first score)
    /// when paired with other raters on a task.
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

/// Whether raters lean to the response shown first.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PositionBias {
    /// For a preference on a scale.
    Scale {
        /// Ratings where A was shown first.
        not_swapped: Side,
        /// Ratings where B was shown first.
        swapped: Side,
        /// The mean score as the raters saw it (the midpoint = no lean; below it = a lean
        /// to whatever was shown first).
        shown_mean: Option<Estimate>,
    },
    /// For a choice of A, B or tie, or several preferences pooled.
    Shares {
        /// Answers that favour one response.
        decisive: u64,
        /// Of those, the share that favour the response shown first (0.5 = no lean),
        /// with a Wilson interval.
        shown_first: Option<Estimate>,
    },
}

/// One pair of models, whichever way round the tasks had them: `model_a` is the first of
/// the two by name, and every answer is read as if that model had been response A.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ModelPair {
    pub model_a: String,
    pub model_b: String,
    pub n: u64,
    pub a_wins: u64,
    pub ties: u64,
    pub b_wins: u64,
    /// Mean score on a scale (its lowest = `model_a` much better), with a 95% interval;
    /// `null` for a choice or pooled preferences.
    pub mean: Option<Estimate>,
    /// Shares of wins and ties, with Wilson intervals.
    pub a_win_share: Option<Estimate>,
    pub tie_share: Option<Estimate>,
    pub b_win_share: Option<Estimate>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Models {
    pub pairs: Vec<ModelPair>,
    /// Present when more than two models are compared: Bradley-Terry strengths, a tie
    /// counting half a win to each.
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
    /// Each preference question's summary, under its key (`sxs`, `helpfulness`, ...).
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub preferences: BTreeMap<String, PreferenceSummary>,
    /// Each score's summary, by its path.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub scores: BTreeMap<String, ScoreSummary>,
    /// Per yes/no question: the share of yes, with a Wilson interval.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub yes_shares: BTreeMap<String, Estimate>,
    /// Per question (`a.correctness`, ..., and the batch's classifications as
    /// `classifications.<key>`): answers per option.
    pub fields: BTreeMap<String, BTreeMap<String, u64>>,
    pub agreement: BTreeMap<String, Agreement>,
    /// Each rater with a rating in the figures (drafts and left-out ones included), by
    /// name.
    pub raters: Vec<RaterStats>,
    /// Absent for a rubric without a preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_bias: Option<PositionBias>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Models>,
    /// Each LLM judge beside the raters, by name (absent when no judge has run over the
    /// batch). Judge ratings count in nothing above.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub judges: BTreeMap<String, judges::JudgeMetrics>,
    /// Per rater and for the batch: the lean to the response shown first and to the
    /// longer one, the length-controlled preference, time against the 30-minute
    /// guidance, and straight-lining (see [`bias`]).
    pub bias: bias::Bias,
    /// Each rater's accuracy on the batch's gold tasks (see [`gold`]). Ratings of gold
    /// tasks, and ratings held for review first until accepted, count in nothing above.
    pub gold: gold::GoldMetrics,
}

/// How metrics read a question beyond its distribution and agreement.
#[derive(Debug, Clone)]
enum Reading {
    Plain,
    /// A preference on a scale: value = code + min - 1.
    Scale {
        min: i64,
        max: i64,
    },
    /// A preference among options.
    Choice,
    /// A number: value = code + min - 1.
    Score {
        min: i64,
    },
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
    level: agreement::Level,
    reading: Reading,
    yes_no: bool,
    /// For a preference: which response each code (index = code - 1) favours.
    favours: Vec<Option<Favours>>,
    /// Whether raters answer it (a derived answer is worked out by the server).
    asked: bool,
    /// Each code (index = code, 0 for none) as read with A and B shown the other way
    /// round: a mirrored scale, options that name a side traded (see
    /// [`crate::rubric::orient`]); itself for everything else.
    turned: Vec<u8>,
}

impl Question {
    /// The answer of `slot` as metrics read it, if its role puts it in metrics.
    fn new(rubric: &Rubric, slot: Slot<'_>) -> Option<Self> {
        let role = slot.metrics()?;
        let (values, yes_no): (Vec<serde_json::Value>, bool) = match slot {
            Slot::Asked { question, .. } => (
                question.options().into_iter().map(|(v, _)| v).collect(),
                matches!(question.answer, Answer::YesNo { .. }),
            ),
            Slot::Derived(d) => {
                let (low, high) = d.range(rubric);
                ((low..=high).map(serde_json::Value::from).collect(), false)
            }
        };
        let texts: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let names: Vec<String> = values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect();
        let min = values
            .first()
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(1);
        let max = values
            .last()
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0);
        let none: &[serde_json::Value] = &[];
        let (unscaled_values, level, reading) = match role {
            Role::Preference {
                midpoint: Some(_), ..
            } => (none, agreement::Level::Ordinal, Reading::Scale { min, max }),
            Role::Preference { .. } => (none, agreement::Level::Nominal, Reading::Choice),
            Role::Ordinal { unscaled } => (
                unscaled.as_slice(),
                agreement::Level::Ordinal,
                Reading::Plain,
            ),
            Role::Nominal { unscaled } => (
                unscaled.as_slice(),
                agreement::Level::Nominal,
                Reading::Plain,
            ),
            Role::Score => (none, agreement::Level::Interval, Reading::Score { min }),
        };
        let unscaled = values.iter().map(|v| unscaled_values.contains(v)).collect();
        let favours = values.iter().map(|v| role.favours(v)).collect();
        let turned = turned_codes(rubric, slot, &values);
        Some(Self {
            path: slot.path(),
            side: slot.side().map(crate::rubric::Side::key),
            key: slot.key().to_owned(),
            texts,
            names,
            unscaled,
            level,
            reading,
            yes_no,
            favours,
            asked: matches!(slot, Slot::Asked { .. }),
            turned,
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

    /// Which response a code favours, for a preference; `None` for a missing answer.
    fn favours(&self, code: u8) -> Option<Favours> {
        let index = usize::from(code).checked_sub(1)?;
        self.favours.get(index).copied().flatten()
    }

    /// The number a code stands for, on a scale or a score; `None` for a missing answer.
    fn value(&self, code: u8) -> Option<i64> {
        match self.reading {
            _ if code == 0 => None,
            Reading::Scale { min, .. } | Reading::Score { min } => Some(min + i64::from(code) - 1),
            _ => None,
        }
    }

    /// A score read with A and B the other way round (a scale mirrored on its midpoint).
    fn mirrored(&self, score: i64) -> i64 {
        match self.reading {
            Reading::Scale { min, max, .. } => min + max - score,
            _ => score,
        }
    }

    fn is_preference(&self) -> bool {
        matches!(self.reading, Reading::Scale { .. } | Reading::Choice)
    }
}

/// The code of each of `values` (a slot's answers, in order) once turned as a swap turns
/// it: by the rubric's own orientation rule, so that straight-lining reads answers as the
/// rater gave them. Answers asked of each response change sides instead (see
/// [`Accumulator::new`]), so they keep their codes here.
fn turned_codes(rubric: &Rubric, slot: Slot<'_>, values: &[serde_json::Value]) -> Vec<u8> {
    let mut turned = vec![0];
    for (i, value) in values.iter().enumerate() {
        let code = i as u8 + 1;
        let to = match slot {
            Slot::Asked {
                question,
                side: None,
            } => {
                let one = serde_json::Map::from_iter([(question.key.clone(), value.clone())]);
                crate::rubric::ShownAnswers::new(one)
                    .into_task(rubric, true)
                    .get(&question.key)
                    .and_then(|t| values.iter().position(|v| v == t))
                    .map_or(code, |j| j as u8 + 1)
            }
            _ => code,
        };
        turned.push(to);
    }
    turned
}

/// What a preference answer favours as the rater saw the responses: with B shown first
/// (`swapped`), a canonical A is the response shown second.
fn as_shown(favours: Favours, swapped: bool) -> Favours {
    if swapped { favours.flipped() } else { favours }
}

type RawMap<'a> = HashMap<&'a str, &'a RawValue>;

/// One model pair's answers to a preference, read with the first model by name as A.
#[derive(Default)]
struct PairTally {
    a_wins: u64,
    ties: u64,
    b_wins: u64,
    /// Scale scores (a choice has none).
    scores: Histogram,
}

impl PairTally {
    fn n(&self) -> u64 {
        self.a_wins + self.ties + self.b_wins
    }

    fn change(&mut self, (favours, score): PairAnswer, add: bool) {
        let n = match favours {
            Favours::A => &mut self.a_wins,
            Favours::Tie => &mut self.ties,
            Favours::B => &mut self.b_wins,
        };
        count(n, add);
        if let Some(score) = score {
            self.scores.change(score, add);
        }
    }
}

/// One answer to a preference as a model table counts it: what it favours, read with the
/// first model by name as A, and its score on a scale.
type PairAnswer = (Favours, Option<i64>);

/// What a preference question gathers beyond its codes.
#[derive(Default)]
struct PreferenceTally {
    /// Scale answers as the raters saw them (for the lean).
    shown_scores: Histogram,
    /// Canonical score counts and sums, by whether A and B were swapped.
    by_swap: [(u64, i64); 2],
    /// Decisive answers, and those that favour the response shown first.
    decisive: u64,
    shown_first: u64,
    /// Per unordered pair of models (by name).
    model_pairs: BTreeMap<(String, String), PairTally>,
}

/// Adds 1 to `n`, or takes 1 away.
fn count(n: &mut u64, add: bool) {
    if add {
        *n += 1;
    } else {
        *n -= 1;
    }
}

/// One rating as folded in: enough to take it out again exactly when it changes.
struct Entry {
    task: u32,
    rater: u32,
    outcome: Outcome,
    status: Status,
    swapped: bool,
    time_spent_s: i32,
    /// The task's models (response A's, response B's), by index into the accumulator's
    /// names.
    models: (Option<u32>, Option<u32>),
    lengths: (i64, i64),
    /// One code per question; empty for a rating that does not count.
    codes: Box<[u8]>,
    /// The classification options chosen: (question, option) by index.
    classes: Box<[(u16, u16)]>,
}

impl Entry {
    fn included(&self) -> bool {
        crate::lifecycle::counts_in_metrics(self.outcome, self.status)
    }
}

/// One task: its id and the ratings of it that count.
struct Unit {
    id: Uuid,
    members: Vec<Uuid>,
}

/// Folds rating rows into metrics, and keeps them folded: a rating can be added, changed
/// or taken out at any time, and [`Accumulator::finish`] gives the figures of the ratings
/// it holds then, whatever order they came in. Every figure is kept as counts (per code,
/// per value, per task for agreement), so a change costs what one rating and its task's
/// few other ratings cost, and the figures take no pass over the ratings. Per rating it
/// keeps a few dozen bytes (its codes, orientation, time, models and lengths), to take it
/// out again.
pub struct Accumulator {
    rubric: RubricRef,
    subject: Subject,
    questions: Vec<Question>,
    counts: Counts,
    /// Per question, per code (index 0 unused): how often it was given.
    tallies: Vec<Vec<u64>>,
    /// Every rating held, by id.
    entries: HashMap<Uuid, Entry>,
    tasks: Vec<Unit>,
    task_index: HashMap<Uuid, u32>,
    raters: Vec<RaterTally>,
    rater_index: HashMap<String, u32>,
    models: Vec<String>,
    model_index: HashMap<String, u32>,
    /// The preference questions (by index into `questions`) and what each gathers.
    preferences: Vec<(usize, PreferenceTally)>,
    /// Per score question: per model, the values given.
    score_models: Vec<(usize, BTreeMap<String, Histogram>)>,
    /// The question raters are compared on.
    primary: Option<usize>,
    /// Agreement per question (a score also at the ordinal level, under
    /// `<path>:ordinal`): its key, its question and its coincidences.
    agreement: Vec<(String, usize, agreement::Builder)>,
    /// The batch's classification questions, and per question how often each option
    /// was chosen.
    classifications: Vec<crate::rubric::Classification>,
    class_tallies: Vec<Vec<u64>>,
    /// The bias figures, per rater and for the batch.
    bias: bias::BiasTally,
    /// The questions straight-lining reads (each one raters answer), by index into
    /// `questions`, each with the question whose code gives its answer as shown when B
    /// was shown first (for one asked of each response, the other response's).
    lines: Vec<(usize, usize)>,
    /// Room for one rating's answers as shown, reused from rating to rating.
    shown: Vec<u8>,
    /// Room for one task's values of one question.
    values: Vec<usize>,
}

#[derive(Default)]
struct RaterTally {
    name: String,
    /// Every rating held, drafts included.
    ratings: u64,
    included: u64,
    finished: u64,
    skipped: u64,
    out_of_scope: u64,
    times: Histogram,
    /// Pairs with other raters on the primary question, and the equal ones.
    pairs: u64,
    equal: u64,
}

impl Accumulator {
    /// Metrics of a batch using `rubric` at `version`, with its `classifications`.
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
        let preferences: Vec<(usize, PreferenceTally)> = questions
            .iter()
            .enumerate()
            .filter(|(_, q)| q.is_preference())
            .map(|(i, _)| (i, PreferenceTally::default()))
            .collect();
        let score_models = questions
            .iter()
            .enumerate()
            .filter(|(_, q)| matches!(q.reading, Reading::Score { .. }))
            .map(|(i, _)| (i, BTreeMap::new()))
            .collect::<Vec<_>>();
        let primary = preferences
            .first()
            .map(|(i, _)| *i)
            .or_else(|| score_models.first().map(|(i, _)| *i));
        let mut agreement = Vec::new();
        for (qi, q) in questions.iter().enumerate() {
            let domain: Vec<i64> = (1..=q.names.len() as i64).collect();
            agreement.push((
                q.path.clone(),
                qi,
                agreement::Builder::new(domain.clone(), q.level),
            ));
            if matches!(q.reading, Reading::Score { .. }) {
                agreement.push((
                    format!("{}:ordinal", q.path),
                    qi,
                    agreement::Builder::new(domain, agreement::Level::Ordinal),
                ));
            }
        }
        let lines: Vec<(usize, usize)> = questions
            .iter()
            .enumerate()
            .filter(|(_, q)| q.asked)
            .map(|(i, q)| {
                let other = questions.iter().position(|o| {
                    o.asked && q.side.is_some() && o.key == q.key && o.side != q.side
                });
                (i, other.unwrap_or(i))
            })
            .collect();
        let bias = bias::BiasTally::new(
            !preferences.is_empty(),
            lines
                .iter()
                .map(|&(i, _)| bias::LineQuestion {
                    path: questions[i].path.clone(),
                    names: questions[i].names.clone(),
                })
                .collect(),
        );
        Self {
            rubric: RubricRef {
                name: rubric.name.clone(),
                version,
            },
            subject: rubric.subject,
            questions,
            counts: Counts::default(),
            tallies,
            entries: HashMap::new(),
            tasks: Vec::new(),
            task_index: HashMap::new(),
            raters: Vec::new(),
            rater_index: HashMap::new(),
            models: Vec::new(),
            model_index: HashMap::new(),
            preferences,
            score_models,
            primary,
            agreement,
            class_tallies: classifications
                .iter()
                .map(|q| vec![0; q.options.len()])
                .collect(),
            classifications: classifications.to_vec(),
            bias,
            shown: Vec::with_capacity(lines.len()),
            lines,
            values: Vec::new(),
        }
    }

    /// How many ratings it holds, drafts and left-out ones included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Folds in a rating: a new one is added; one held already (by id) is replaced by
    /// what it is now; one that no longer belongs in the figures
    /// ([`RatingFacts::counted`] false) is taken out.
    pub fn add(&mut self, row: &RatingFacts) {
        self.remove(row.id);
        if !row.counted {
            return;
        }
        let entry = self.entry(row);
        self.change(&entry, true);
        let (task, included) = (entry.task, entry.included());
        self.entries.insert(row.id, entry);
        if included {
            self.change_unit(task, false);
            self.tasks[task as usize].members.push(row.id);
            self.change_unit(task, true);
        }
    }

    /// Takes out the rating `id`, if it is held.
    pub fn remove(&mut self, id: Uuid) {
        let Some(held) = self.entries.get(&id) else {
            return;
        };
        let (task, included) = (held.task, held.included());
        if included {
            self.change_unit(task, false);
            let members = &mut self.tasks[task as usize].members;
            if let Some(at) = members.iter().position(|m| *m == id) {
                members.swap_remove(at);
            }
            self.change_unit(task, true);
        }
        if let Some(entry) = self.entries.remove(&id) {
            self.change(&entry, false);
        }
    }

    /// The rating as it will be held: its task, rater and models by index, and for one
    /// that counts, its codes and classifications read from its answers.
    fn entry(&mut self, row: &RatingFacts) -> Entry {
        let next = self.tasks.len() as u32;
        let task = *self.task_index.entry(row.task_id).or_insert(next);
        if task == next {
            self.tasks.push(Unit {
                id: row.task_id,
                members: Vec::new(),
            });
        }
        let rater = self.rater(&row.rater);
        let models = (
            row.model_a.as_deref().map(|m| self.model(m)),
            row.model_b.as_deref().map(|m| self.model(m)),
        );
        let mut entry = Entry {
            task,
            rater,
            outcome: row.outcome,
            status: row.status,
            swapped: row.swapped,
            time_spent_s: row.time_spent_s,
            models,
            lengths: (row.len_a, row.len_b),
            codes: Box::default(),
            classes: Box::default(),
        };
        if entry.included() {
            // Answers are read without building a JSON tree: only the keys and raw values.
            let top: RawMap = serde_json::from_str(&row.answers).unwrap_or_default();
            let side = |name: &str| -> RawMap {
                top.get(name)
                    .and_then(|raw| serde_json::from_str(raw.get()).ok())
                    .unwrap_or_default()
            };
            let (a, b) = (side("a"), side("b"));
            entry.codes = self
                .questions
                .iter()
                .map(|q| {
                    let map = match q.side {
                        Some("a") => &a,
                        Some(_) => &b,
                        None => &top,
                    };
                    map.get(q.key.as_str()).map_or(0, |raw| q.code(raw))
                })
                .collect();
            entry.classes = self.classes(top.get("classifications"));
        }
        entry
    }

    /// The options chosen for each classification question (one, or several).
    fn classes(&self, given: Option<&&RawValue>) -> Box<[(u16, u16)]> {
        let Some(given) = given else {
            return Box::default();
        };
        let Ok(answers) = serde_json::from_str::<HashMap<String, serde_json::Value>>(given.get())
        else {
            return Box::default();
        };
        let mut chosen = Vec::new();
        for (qi, q) in self.classifications.iter().enumerate() {
            let options: Vec<&str> = match answers.get(&q.key) {
                Some(serde_json::Value::String(one)) => vec![one.as_str()],
                Some(serde_json::Value::Array(many)) => {
                    many.iter().filter_map(|v| v.as_str()).collect()
                }
                _ => continue,
            };
            for option in options {
                if let Some(i) = q.options.iter().position(|o| o == option) {
                    chosen.push((qi as u16, i as u16));
                }
            }
        }
        chosen.into_boxed_slice()
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

    fn model(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.model_index.get(name) {
            return i;
        }
        self.models.push(name.to_owned());
        let i = (self.models.len() - 1) as u32;
        self.model_index.insert(name.to_owned(), i);
        i
    }

    /// Adds a rating's figures (the counts, and for one that counts its answers, leans,
    /// models and bias), or takes them out: everything but agreement, which is per task
    /// ([`Accumulator::change_unit`]).
    fn change(&mut self, e: &Entry, add: bool) {
        count(&mut self.counts.ratings, add);
        let tally = &mut self.raters[e.rater as usize];
        count(&mut tally.ratings, add);
        if !e.status.is_draft() {
            count(&mut tally.finished, add);
            if e.outcome == Outcome::Skipped {
                count(&mut tally.skipped, add);
            }
            if e.outcome == Outcome::OutOfScope {
                count(&mut tally.out_of_scope, add);
            }
        }
        let c = &mut self.counts;
        if let Some(reason) = crate::lifecycle::exclusion(e.outcome, e.status) {
            count(&mut c.excluded, add);
            count(
                match reason {
                    Exclusion::Draft => &mut c.drafts,
                    Exclusion::Skipped => &mut c.skipped,
                    Exclusion::OutOfScope => &mut c.out_of_scope,
                    Exclusion::Rejected => &mut c.rejected,
                    Exclusion::Returned => &mut c.returned,
                },
                add,
            );
            return;
        }
        count(&mut c.included, add);
        count(&mut tally.included, add);
        tally.times.change(i64::from(e.time_spent_s), add);
        for &(q, option) in &e.classes {
            count(
                &mut self.class_tallies[usize::from(q)][usize::from(option)],
                add,
            );
        }
        for (i, &code) in e.codes.iter().enumerate() {
            count(&mut self.tallies[i][usize::from(code)], add);
        }
        let name = |m: Option<u32>| m.map(|m| self.models[m as usize].as_str());
        let (model_a, model_b) = (name(e.models.0), name(e.models.1));
        let models = model_a.zip(model_b);
        for (qi, tally) in &mut self.preferences {
            let q = &self.questions[*qi];
            let code = e.codes[*qi];
            let Some(favours) = q.favours(code) else {
                continue;
            };
            let score = q.value(code);
            if let (Reading::Scale { .. }, Some(score)) = (&q.reading, score) {
                let shown = if e.swapped { q.mirrored(score) } else { score };
                tally.shown_scores.change(shown, add);
                let side = &mut tally.by_swap[usize::from(e.swapped)];
                count(&mut side.0, add);
                side.1 += if add { score } else { -score };
            }
            let shown = as_shown(favours, e.swapped);
            if shown != Favours::Tie {
                count(&mut tally.decisive, add);
                if shown == Favours::A {
                    count(&mut tally.shown_first, add);
                }
            }
            if let Some((a, b)) = models {
                // One row per pair whichever way round a task had it: the first by name
                // is A.
                let (key, read) = if a <= b {
                    ((a, b), (favours, score))
                } else {
                    ((b, a), (favours.flipped(), score.map(|s| q.mirrored(s))))
                };
                let key = (key.0.to_owned(), key.1.to_owned());
                let pair = tally.model_pairs.entry(key.clone()).or_default();
                pair.change(read, add);
                if pair.n() == 0 {
                    tally.model_pairs.remove(&key);
                }
            }
        }
        for (qi, by_model) in &mut self.score_models {
            let q = &self.questions[*qi];
            let Some(value) = q.value(e.codes[*qi]) else {
                continue;
            };
            // The response the score is of: its side's model, or the one response's.
            let model = match (q.side, self.subject) {
                (Some("a"), _) | (None, Subject::Single) => model_a,
                (Some(_), _) => model_b,
                (None, Subject::Pair) => None,
            };
            if let Some(model) = model {
                let values = by_model.entry(model.to_owned()).or_default();
                values.change(value, add);
                if values.is_empty() {
                    by_model.remove(model);
                }
            }
        }
        self.change_bias(e, add);
    }

    /// Adds a rating that counts to the bias figures, or takes it out.
    fn change_bias(&mut self, e: &Entry, add: bool) {
        let turn = e.swapped && self.subject == Subject::Pair;
        self.shown.clear();
        for &(i, other) in &self.lines {
            self.shown.push(if turn {
                self.questions[i].turned[usize::from(e.codes[other])]
            } else {
                e.codes[i]
            });
        }
        let preference = self
            .preferences
            .first()
            .and_then(|(qi, _)| self.questions[*qi].favours(e.codes[*qi]));
        let observation = bias::Observation {
            preference,
            swapped: e.swapped,
            lengths: e.lengths,
            time_spent_s: e.time_spent_s,
            models: e.models.0.zip(e.models.1).map(|(a, b)| {
                (
                    self.models[a as usize].as_str(),
                    self.models[b as usize].as_str(),
                )
            }),
            shown: &self.shown,
        };
        let rater = &self.raters[e.rater as usize].name;
        if add {
            self.bias.add(rater, &observation);
        } else {
            self.bias.remove(rater, &observation);
        }
    }

    /// Adds task `task`'s ratings that count to agreement (each question's
    /// coincidences, and the pairs of raters on the primary question), or takes them
    /// out: a change to one of them takes the task out as it was and adds it back as it
    /// is.
    fn change_unit(&mut self, task: u32, add: bool) {
        let members = &self.tasks[task as usize].members;
        if members.len() < 2 {
            return;
        }
        let held: Vec<&Entry> = members.iter().map(|id| &self.entries[id]).collect();
        for (_, qi, builder) in &mut self.agreement {
            let q = &self.questions[*qi];
            self.values.clear();
            for e in &held {
                let code = e.codes[*qi];
                if code > 0 && !q.unscaled[usize::from(code) - 1] {
                    self.values.push(usize::from(code) - 1);
                }
            }
            if add {
                builder.add_unit(&self.values);
            } else {
                builder.remove_unit(&self.values);
            }
        }
        let Some(pi) = self.primary else { return };
        for (i, x) in held.iter().enumerate() {
            for y in &held[i + 1..] {
                let (cx, cy) = (x.codes[pi], y.codes[pi]);
                if cx == 0 || cy == 0 {
                    continue;
                }
                for r in [x.rater, y.rater] {
                    let tally = &mut self.raters[r as usize];
                    count(&mut tally.pairs, add);
                    if cx == cy {
                        count(&mut tally.equal, add);
                    }
                }
            }
        }
    }

    /// The figures of the ratings held now, for a batch of `tasks` tasks.
    pub fn finish(&self, tasks: i64) -> Metrics {
        let mut counts = self.counts.clone();
        counts.tasks = tasks;
        let agreement = self
            .agreement
            .iter()
            .map(|(path, _, b)| (path.clone(), b.finish()))
            .collect();
        let mut fields: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        let mut yes_shares = BTreeMap::new();
        for (q, tally) in self.questions.iter().zip(&self.tallies) {
            for (code, &n) in tally.iter().enumerate().skip(1) {
                if n > 0 {
                    fields
                        .entry(q.path.clone())
                        .or_default()
                        .insert(q.names[code - 1].clone(), n);
                }
            }
            if q.yes_no {
                // Options are yes then no: codes 1 and 2.
                let (yes, no) = (tally[1], tally[2]);
                if let Some(share) = stats::share(yes, yes + no) {
                    yes_shares.insert(q.path.clone(), share);
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
        let mut raters: Vec<RaterStats> = self
            .raters
            .iter()
            .filter(|r| r.ratings > 0)
            .map(|r| RaterStats {
                rater: r.name.clone(),
                included: r.included,
                median_time_s: r.times.median(),
                skip_rate: (r.finished > 0).then(|| r.skipped as f64 / r.finished as f64),
                out_of_scope_rate: (r.finished > 0)
                    .then(|| r.out_of_scope as f64 / r.finished as f64),
                agreement_with_others: (r.pairs > 0).then(|| r.equal as f64 / r.pairs as f64),
                pairs_with_others: r.pairs,
            })
            .collect();
        raters.sort_by(|x, y| x.rater.cmp(&y.rater));

        let several = self.preferences.len() > 1;
        let mut preferences = BTreeMap::new();
        let mut pooled_pairs: BTreeMap<(String, String), PairTally> = BTreeMap::new();
        let (mut pooled_decisive, mut pooled_first) = (0, 0);
        let mut only = None;
        for (qi, tally) in &self.preferences {
            let q = &self.questions[*qi];
            let mut summary = self.preference_summary(*qi, &self.tallies[*qi]);
            let bias = position_bias(q, tally);
            let models = models(&tally.model_pairs, !several);
            if several {
                summary.position_bias = Some(bias);
                summary.models = Some(models);
                for (pair, answers) in &tally.model_pairs {
                    let pooled = pooled_pairs.entry(pair.clone()).or_default();
                    pooled.a_wins += answers.a_wins;
                    pooled.ties += answers.ties;
                    pooled.b_wins += answers.b_wins;
                }
                pooled_decisive += tally.decisive;
                pooled_first += tally.shown_first;
            } else {
                only = Some((bias, models));
            }
            preferences.insert(q.key.clone(), summary);
        }
        let (position_bias, models) = match only {
            Some((bias, models)) => (Some(bias), Some(models)),
            None if several => (
                Some(PositionBias::Shares {
                    decisive: pooled_decisive,
                    shown_first: stats::share(pooled_first, pooled_decisive),
                }),
                Some(models(&pooled_pairs, false)),
            ),
            None => (None, None),
        };
        let scores = self
            .score_models
            .iter()
            .map(|(qi, by_model)| {
                let q = &self.questions[*qi];
                (q.path.clone(), self.score_summary(*qi, by_model))
            })
            .collect();
        Metrics {
            rubric: self.rubric.clone(),
            counts,
            preferences,
            scores,
            yes_shares,
            fields,
            agreement,
            raters,
            position_bias,
            models,
            judges: BTreeMap::new(),
            bias: self.bias.finish(),
            gold: gold::GoldMetrics::default(),
        }
    }

    /// The values given to question `qi` by included ratings.
    fn values_of(&self, qi: usize) -> Histogram {
        let q = &self.questions[qi];
        let mut values = Histogram::default();
        for (code, &n) in self.tallies[qi].iter().enumerate() {
            if let Some(value) = q.value(code as u8) {
                values.add_times(value, n);
            }
        }
        values
    }

    fn preference_summary(&self, qi: usize, tally: &[u64]) -> PreferenceSummary {
        let q = &self.questions[qi];
        let mut distribution = BTreeMap::new();
        let (mut a, mut t, mut b) = (0, 0, 0);
        for (code, &n) in tally.iter().enumerate().skip(1) {
            // A scale lists every value; a choice the options given.
            if n > 0 || matches!(q.reading, Reading::Scale { .. }) {
                distribution.insert(q.names[code - 1].clone(), n);
            }
            match q.favours(code as u8) {
                Some(Favours::A) => a += n,
                Some(Favours::Tie) => t += n,
                Some(Favours::B) => b += n,
                None => {}
            }
        }
        let n = a + t + b;
        let mean = match q.reading {
            Reading::Scale { .. } => self.values_of(qi).mean(),
            _ => None,
        };
        PreferenceSummary {
            n,
            mean,
            distribution,
            a_wins: stats::share(a, n),
            ties: stats::share(t, n),
            b_wins: stats::share(b, n),
            position_bias: None,
            models: None,
        }
    }

    fn score_summary(&self, qi: usize, by_model: &BTreeMap<String, Histogram>) -> ScoreSummary {
        let q = &self.questions[qi];
        let values = self.values_of(qi);
        let distribution = q
            .names
            .iter()
            .zip(&self.tallies[qi][1..])
            .map(|(name, n)| (name.clone(), *n))
            .collect();
        let mut models: Vec<ModelScore> = by_model
            .iter()
            .map(|(model, values)| ModelScore {
                rank: 0,
                model: model.clone(),
                n: values.len(),
                mean: values.mean(),
            })
            .collect();
        models.sort_by(|x, y| {
            let mean = |m: &ModelScore| m.mean.map_or(f64::NEG_INFINITY, |e| e.value);
            mean(y)
                .total_cmp(&mean(x))
                .then_with(|| x.model.cmp(&y.model))
        });
        for (i, m) in models.iter_mut().enumerate() {
            m.rank = i + 1;
        }
        ScoreSummary {
            n: values.len(),
            mean: values.mean(),
            distribution,
            models,
        }
    }
}

/// The lean of one preference question to the response shown first.
fn position_bias(q: &Question, tally: &PreferenceTally) -> PositionBias {
    match q.reading {
        Reading::Scale { .. } => {
            let side = |(n, sum): (u64, i64)| Side {
                n,
                mean: (n > 0).then(|| sum as f64 / n as f64),
            };
            PositionBias::Scale {
                not_swapped: side(tally.by_swap[0]),
                swapped: side(tally.by_swap[1]),
                shown_mean: tally.shown_scores.mean(),
            }
        }
        _ => PositionBias::Shares {
            decisive: tally.decisive,
            shown_first: stats::share(tally.shown_first, tally.decisive),
        },
    }
}

/// The model table of answers by unordered pair: counts, shares, the mean of scale
/// scores (when `with_mean`), and a Bradley-Terry ranking of more than two models.
fn models(by_pair: &BTreeMap<(String, String), PairTally>, with_mean: bool) -> Models {
    let pairs: Vec<ModelPair> = by_pair
        .iter()
        .map(|((a, b), tally)| {
            let n = tally.n();
            let (aw, t, bw) = (tally.a_wins, tally.ties, tally.b_wins);
            ModelPair {
                model_a: a.clone(),
                model_b: b.clone(),
                n,
                a_wins: aw,
                ties: t,
                b_wins: bw,
                mean: if with_mean { tally.scores.mean() } else { None },
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
    Models { pairs, ranking }
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
            id: Uuid::now_v7(),
            task_id: Uuid::from_u128(task),
            rater: rater.into(),
            outcome: outcome.parse().unwrap(),
            status: status.parse().unwrap(),
            answers: answers.to_string(),
            swapped,
            time_spent_s: 60,
            model_a: Some("m1".into()),
            model_b: Some("m2".into()),
            len_a: 100,
            len_b: 200,
            counted: true,
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
        assert_eq!(m.preferences["sxs"].n, 2, "no excluded score leaks in");
        assert_eq!(m.preferences["sxs"].distribution["7"], 0);
        assert_eq!(m.fields["a.correctness"]["no_issues"], 2);
    }

    #[test]
    fn position_bias_compares_canonical_means_and_the_shown_lean() {
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &[]);
        // Every rater prefers what is shown first (shown 2): canonical 2 or 6.
        acc.add(&row(1, "r1", "rated", "submitted", scored(2), false));
        acc.add(&row(2, "r1", "rated", "submitted", scored(6), true));
        let m = acc.finish(2);
        let Some(PositionBias::Scale {
            not_swapped,
            swapped,
            shown_mean,
        }) = &m.position_bias
        else {
            panic!("a scale's lean: {:?}", m.position_bias)
        };
        assert_eq!(not_swapped.mean, Some(2.0));
        assert_eq!(swapped.mean, Some(6.0));
        assert_eq!(shown_mean.unwrap().value, 2.0);
        assert_eq!(m.preferences["sxs"].mean.unwrap().value, 4.0);
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
        let models = m.models.unwrap();
        assert_eq!((models.pairs[0].a_wins, models.pairs[0].b_wins), (2, 1));
        assert!(models.ranking.is_none(), "two models: no ranking");
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
        let pairs = acc.finish(4).models.unwrap().pairs;
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

    /// A batch of blackhat ratings as varied as a real one: three raters, overlap on most
    /// tasks, swaps, four models, every option, classifications, drafts and skips.
    fn varied_blackhat_batch() -> Vec<RatingFacts> {
        let mut seed: u64 = 20261125;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let executability = ["yes_fully", "yes_partially", "no", "no_code"];
        let following = [
            "no_issues",
            "minor_issues",
            "major_issues",
            "not_applicable",
        ];
        let correctness = [
            "no_issues",
            "minor_issues",
            "major_issues",
            "cannot_assess",
            "not_applicable",
        ];
        let models = ["alpha", "beta", "gamma", "delta"];
        let mut rows = Vec::new();
        for task in 0..60u128 {
            let (ma, mb) = (
                models[(task % 4) as usize],
                models[((task / 4 + 1 + task) % 4) as usize],
            );
            let mb = if ma == mb {
                models[((task + 1) % 4) as usize]
            } else {
                mb
            };
            for rater in ["r1", "r2", "r3"] {
                if next(5) == 0 {
                    continue;
                }
                let side = |next: &mut dyn FnMut(u64) -> u64| {
                    json!({"executability": executability[next(4) as usize],
                           "instruction_following": following[next(4) as usize],
                           "correctness": correctness[next(5) as usize]})
                };
                let a = side(&mut next);
                let b = side(&mut next);
                let language = ["python", "rust"][next(2) as usize];
                let answers = json!({"a": a, "b": b, "sxs": 1 + next(7),
                    "classifications": {"language": language}});
                let (outcome, status) = match next(12) {
                    0 => ("skipped", "submitted"),
                    1 => ("out_of_scope", "submitted"),
                    2 => ("rated", "draft"),
                    3 => ("rated", "returned"),
                    4 => ("rated", "rejected"),
                    5 | 6 => ("rated", "accepted"),
                    _ => ("rated", "submitted"),
                };
                rows.push(RatingFacts {
                    id: Uuid::now_v7(),
                    task_id: Uuid::from_u128(task + 1),
                    rater: rater.into(),
                    outcome: outcome.parse().unwrap(),
                    status: status.parse().unwrap(),
                    answers: answers.to_string(),
                    swapped: next(2) == 1,
                    time_spent_s: 30 + next(900) as i32,
                    model_a: Some(ma.into()),
                    model_b: Some(mb.into()),
                    // From the task alone: the seeded answers above stay as they were.
                    len_a: 200 + (task * 37 % 300) as i64,
                    len_b: 200 + (task * 53 % 300) as i64,
                    counted: true,
                });
            }
        }
        rows
    }

    fn language() -> Vec<crate::rubric::Classification> {
        vec![crate::rubric::Classification {
            key: "language".into(),
            label: "Language".into(),
            multiple: false,
            required: true,
            options: vec!["python".into(), "rust".into()],
        }]
    }

    /// Folds `rows` in the way a batch's ratings reach an instance that keeps them over
    /// time: in a shuffled order, most of them first in an earlier state (a draft with
    /// other answers, a submission later returned or rejected, one held out of the
    /// figures), then again as they are now in another order, with ratings that come and
    /// go again (added, then taken out or leaving the figures). Checking the figures at
    /// every step costs nothing to the result.
    fn fold_over_time(acc: &mut Accumulator, rows: &[RatingFacts]) {
        let mut seed = 11u64;
        let mut next = move |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % n as u64) as usize
        };
        let mut order: Vec<usize> = (0..rows.len()).collect();
        let shuffle = |order: &mut Vec<usize>, next: &mut dyn FnMut(usize) -> usize| {
            for i in (1..order.len()).rev() {
                order.swap(i, next(i + 1));
            }
        };
        shuffle(&mut order, &mut next);
        let mut passing = Vec::new();
        for (step, &i) in order.iter().enumerate() {
            let now = &rows[i];
            let mut before = now.clone();
            match next(5) {
                0 => before.status = Status::Draft,
                1 => before.status = Status::Returned,
                2 => before.counted = false,
                3 => {
                    before.outcome = Outcome::Rated;
                    before.status = Status::Submitted;
                    before.time_spent_s += 17;
                }
                _ => continue,
            }
            // Other answers: every question and the classification differ.
            before.answers = varied_answers(&mut next).to_string();
            acc.add(&before);
            if step % 7 == 0 {
                // A rating that comes and goes: a second rater's on the same task.
                let extra = RatingFacts {
                    id: Uuid::from_u128(1_000_000 + step as u128),
                    rater: format!("passing{}", step % 3),
                    answers: varied_answers(&mut next).to_string(),
                    ..now.clone()
                };
                acc.add(&extra);
                passing.push(extra);
            }
            let _ = acc.finish(60);
        }
        shuffle(&mut order, &mut next);
        for (step, &i) in order.iter().enumerate() {
            acc.add(&rows[i]);
            if let Some(extra) = passing.pop() {
                if step % 2 == 0 {
                    acc.remove(extra.id);
                } else {
                    acc.add(&RatingFacts {
                        counted: false,
                        ..extra
                    });
                }
            }
            let _ = acc.finish(60);
        }
        for extra in passing {
            acc.remove(extra.id);
        }
        assert_eq!(acc.len(), rows.len());
    }

    /// Blackhat answers drawn at random.
    fn varied_answers(next: &mut dyn FnMut(usize) -> usize) -> Value {
        let issues = ["no_issues", "minor_issues", "major_issues"];
        let mut side = || {
            let executability = ["yes_fully", "yes_partially", "no", "no_code"][next(4)];
            let (following, correctness) = (issues[next(3)], issues[next(3)]);
            json!({"executability": executability, "instruction_following": following,
                   "correctness": correctness})
        };
        let (a, b) = (side(), side());
        let language = ["python", "rust"][next(2)];
        json!({"a": a, "b": b, "sxs": 1 + next(7), "classifications": {"language": language}})
    }

    /// The figures as JSON without those the fixture predates.
    fn fixture_figures(metrics: Metrics) -> Value {
        let mut got = serde_json::to_value(metrics).unwrap();
        // The bias figures came after the fixture (they are tested in `bias` and
        // `tests/api/bias.rs`); every figure that was there must be unchanged.
        assert!(got["bias"]["raters"].is_array());
        got.as_object_mut().unwrap().remove("bias");
        // So did the gold figures (tests in `gold` and `tests/api/gold.rs`); the
        // accumulator leaves them empty for the page to fill in.
        assert_eq!(got["gold"]["raters"], serde_json::json!([]));
        got.as_object_mut().unwrap().remove("gold");
        got
    }

    /// Whether two figures are the same: every key, every count and every text equal,
    /// and every fraction equal to 12 significant digits. (A mean's interval once summed
    /// the squared deviations in the order ratings came in, so its last digit depended on
    /// that order; it is now summed in whole numbers.)
    fn same_figures(got: &Value, want: &Value, at: &str) {
        match (got, want) {
            (Value::Object(x), Value::Object(y)) => {
                let keys =
                    |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
                assert_eq!(keys(x), keys(y), "{at}");
                for (k, v) in x {
                    same_figures(v, &y[k], &format!("{at}.{k}"));
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    same_figures(u, v, &format!("{at}[{i}]"));
                }
            }
            (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!(
                    (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                    "{at}: {x} against {y}"
                );
            }
            _ => assert_eq!(got, want, "{at}"),
        }
    }

    /// The blackhat metrics of a varied batch, figure for figure, as they were before
    /// rubrics became documents (`tests/fixtures/metrics/blackhat.json`; written anew
    /// only with `VERDICT_WRITE_METRICS_FIXTURE=1`, after a change meant to alter them),
    /// whether the ratings are folded in once each or changed over time.
    #[test]
    fn blackhat_metrics_are_unchanged() {
        let rows = varied_blackhat_batch();
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
        for row in &rows {
            acc.add(row);
        }
        let once = acc.finish(60);
        let got = fixture_figures(once.clone());
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/metrics/blackhat.json"
        );
        if std::env::var_os("VERDICT_WRITE_METRICS_FIXTURE").is_some() {
            std::fs::write(path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        }
        let mut expected: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // Raters were listed in the order their first rating came in; they are listed by
        // name since ratings are folded in any order (and changed in place).
        expected["raters"]
            .as_array_mut()
            .unwrap()
            .sort_by(|x, y| x["rater"].as_str().cmp(&y["rater"].as_str()));
        same_figures(&got, &expected, "metrics");

        // Changed over time, the same to the last digit, bias figures included.
        let mut over_time = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
        fold_over_time(&mut over_time, &rows);
        let changed = serde_json::to_value(over_time.finish(60)).unwrap();
        assert_eq!(changed, serde_json::to_value(&once).unwrap());
        same_figures(
            &fixture_figures(over_time.finish(60)),
            &expected,
            "over time",
        );
    }

    /// Taking out every rating leaves nothing behind: the figures of no ratings.
    #[test]
    fn a_rating_taken_out_leaves_nothing_behind() {
        let rows = varied_blackhat_batch();
        let empty = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &language());
        fold_over_time(&mut acc, &rows);
        for row in &rows {
            acc.remove(row.id);
        }
        assert!(acc.is_empty());
        assert_eq!(
            serde_json::to_value(acc.finish(60)).unwrap(),
            serde_json::to_value(empty.finish(60)).unwrap()
        );
    }

    /// The ratings of `tests/fixtures/krippendorff/rubrics.json` for `rubric`, through the
    /// metrics, give the alpha the `krippendorff` package gives (1e-9).
    fn agreement_matches_the_reference(rubric: &str) {
        let text = include_str!("../../../../tests/fixtures/krippendorff/rubrics.json");
        let cases: Value = serde_json::from_str(text).unwrap();
        let case = &cases[rubric];
        let rows: Vec<RatingFacts> = case["ratings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| RatingFacts {
                id: Uuid::now_v7(),
                task_id: Uuid::from_u128(r["task"].as_u64().unwrap().into()),
                rater: r["rater"].as_str().unwrap().into(),
                outcome: Outcome::Rated,
                status: Status::Submitted,
                answers: r["answers"].to_string(),
                swapped: false,
                time_spent_s: 60,
                model_a: None,
                model_b: None,
                len_a: 0,
                len_b: 0,
                counted: true,
            })
            .collect();
        let mut once = Accumulator::new(by_name(rubric).unwrap(), 1, &[]);
        for row in &rows {
            once.add(row);
        }
        // The same ratings changed over time: each first given another rater's answers
        // to another task, or held as a draft, then given its own.
        let mut over_time = Accumulator::new(by_name(rubric).unwrap(), 1, &[]);
        for (i, row) in rows.iter().enumerate() {
            let other = &rows[(i * 7 + 3) % rows.len()];
            over_time.add(&RatingFacts {
                answers: other.answers.clone(),
                status: if i % 3 == 0 {
                    Status::Draft
                } else {
                    Status::Submitted
                },
                ..row.clone()
            });
        }
        for row in rows.iter().rev() {
            over_time.add(row);
        }
        let expected = case["alpha"].as_object().unwrap();
        assert!(expected.len() >= 6, "{rubric}: {expected:?}");
        for m in [once.finish(40), over_time.finish(40)] {
            for (key, alpha) in expected {
                let got = m.agreement[key].krippendorff_alpha.unwrap();
                let want = alpha.as_f64().unwrap();
                assert!((got - want).abs() < 1e-9, "{rubric} {key}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn additive_agreement_matches_the_krippendorff_package() {
        agreement_matches_the_reference("additive-5");
    }

    #[test]
    fn aspect_agreement_matches_the_krippendorff_package() {
        agreement_matches_the_reference("pairwise-aspects");
    }

    fn aspects(choices: [&str; 6]) -> Value {
        json!({"helpfulness": choices[0], "clarity": choices[1], "factuality": choices[2],
               "depth": choices[3], "engagement": choices[4], "safety": choices[5],
               "rationale": "why"})
    }

    #[test]
    fn each_aspect_has_shares_a_lean_and_models_and_all_are_pooled() {
        let mut acc = Accumulator::new(by_name("pairwise-aspects").unwrap(), 2, &[]);
        let with = |task: u128, a: &str, b: &str, answers: Value, swapped: bool| RatingFacts {
            model_a: Some(a.into()),
            model_b: Some(b.into()),
            ..row(task, "r1", "rated", "submitted", answers, swapped)
        };
        // Helpfulness always goes to whatever was shown first; safety is always a tie.
        let shown_first = |swapped: bool| if swapped { "b" } else { "a" };
        for (task, (ma, mb, swapped)) in [
            ("x", "y", false),
            ("x", "y", true),
            ("y", "z", false),
            ("z", "x", true),
            ("x", "z", false),
        ]
        .into_iter()
        .enumerate()
        {
            let first = shown_first(swapped);
            let answers = aspects([first, "a", "b", "tie", "a", "tie"]);
            acc.add(&with(task as u128 + 1, ma, mb, answers, swapped));
        }
        let m = acc.finish(5);
        assert_eq!(m.rubric.version, 2);
        let help = &m.preferences["helpfulness"];
        assert_eq!((help.n, help.mean), (5, None));
        assert_eq!(
            help.distribution,
            BTreeMap::from([("a".into(), 3), ("b".into(), 2)])
        );
        assert!((help.a_wins.unwrap().value - 0.6).abs() < 1e-12);
        let Some(PositionBias::Shares {
            decisive,
            shown_first,
        }) = &help.position_bias
        else {
            panic!("{:?}", help.position_bias)
        };
        assert_eq!(
            (*decisive, shown_first.unwrap().value),
            (5, 1.0),
            "always the first shown"
        );
        let Some(PositionBias::Shares { decisive, .. }) = &m.preferences["safety"].position_bias
        else {
            panic!()
        };
        assert_eq!(*decisive, 0, "ties are not decisive");
        let clarity = m.preferences["clarity"].models.as_ref().unwrap();
        assert!(
            clarity.ranking.is_some(),
            "three models: a ranking per aspect"
        );
        // Clarity always favours the task's A: read with the first model by name as A,
        // z-x (z was A) counts as a win for z over x, i.e. a B win in the x-z row.
        let xz = clarity
            .pairs
            .iter()
            .find(|p| p.model_a == "x" && p.model_b == "z")
            .unwrap();
        assert_eq!((xz.a_wins, xz.ties, xz.b_wins), (1, 0, 1));
        let pooled = m.models.as_ref().unwrap();
        let xy = pooled
            .pairs
            .iter()
            .find(|p| p.model_a == "x" && p.model_b == "y")
            .unwrap();
        assert_eq!(xy.n, 12, "two tasks, six aspects");
        assert!(xy.mean.is_none());
        assert!(pooled.ranking.is_some(), "and an overall ranking");
        let Some(PositionBias::Shares { decisive, .. }) = &m.position_bias else {
            panic!()
        };
        // Per task: helpfulness, clarity, factuality and engagement choose a side.
        assert_eq!(*decisive, 20);
        assert!(m.scores.is_empty() && m.yes_shares.is_empty());
        let json = serde_json::to_value(&m).unwrap();
        assert!(
            json["helpfulness"]["models"]["pairs"].is_array(),
            "each aspect under its key"
        );
        assert!(json.get("sxs").is_none());
    }

    #[test]
    fn the_additive_score_has_its_mean_per_model_and_yes_shares() {
        let mut acc = Accumulator::new(by_name("additive-5").unwrap(), 1, &[]);
        let scored = |task: u128, rater: &str, model: &str, met: usize, repetitive: bool| {
            let mut answers = json!({"justification": "why", "repetitive": repetitive});
            for (i, key) in [
                "relevant",
                "substantial",
                "useful",
                "comprehensive",
                "expert",
            ]
            .iter()
            .enumerate()
            {
                answers[*key] = json!(i < met);
            }
            answers["score"] = json!(if repetitive { 0 } else { met });
            RatingFacts {
                model_a: Some(model.into()),
                model_b: None,
                ..row(task, rater, "rated", "submitted", answers, false)
            }
        };
        acc.add(&scored(1, "r1", "small", 2, false));
        acc.add(&scored(1, "r2", "small", 2, false));
        acc.add(&scored(2, "r1", "large", 5, false));
        acc.add(&scored(2, "r2", "large", 4, false));
        acc.add(&scored(3, "r1", "small", 3, true));
        let m = acc.finish(3);
        assert!(m.preferences.is_empty() && m.position_bias.is_none() && m.models.is_none());
        let score = &m.scores["score"];
        assert_eq!(score.n, 5);
        assert!((score.mean.unwrap().value - 13.0 / 5.0).abs() < 1e-12);
        assert_eq!(score.distribution.len(), 6, "every value from 0 to 5");
        assert_eq!((score.distribution["0"], score.distribution["2"]), (1, 2));
        let ranks: Vec<(usize, &str, u64)> = score
            .models
            .iter()
            .map(|m| (m.rank, m.model.as_str(), m.n))
            .collect();
        assert_eq!(ranks, [(1, "large", 2), (2, "small", 3)]);
        assert!((score.models[0].mean.unwrap().value - 4.5).abs() < 1e-12);
        assert!((m.yes_shares["relevant"].value - 1.0).abs() < 1e-12);
        assert!((m.yes_shares["repetitive"].value - 0.2).abs() < 1e-12);
        assert_eq!(m.agreement["score"].level, agreement::Level::Interval);
        assert_eq!(
            m.agreement["score:ordinal"].level,
            agreement::Level::Ordinal
        );
        assert_eq!(m.agreement["relevant"].level, agreement::Level::Nominal);
        let r1 = m.raters.iter().find(|r| r.rater == "r1").unwrap();
        assert_eq!(
            (r1.pairs_with_others, r1.agreement_with_others),
            (2, Some(0.5)),
            "compared on the score"
        );
    }
}
