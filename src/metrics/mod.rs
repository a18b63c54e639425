//! A batch's metrics, computed from its ratings one row at a time, for any rubric: what
//! each question's metrics role says is measured (see [`crate::rubric::Role`]).
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
    /// The two responses' lengths in characters (for the length lean).
    pub len_a: i64,
    pub len_b: i64,
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
                crate::rubric::orient(rubric, one, true)
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

/// One answer to a preference as a model table counts it: what it favours, read with the
/// first model by name as A, and its score on a scale.
type PairAnswer = (Favours, Option<f64>);

/// What a preference question gathers beyond its codes.
#[derive(Default)]
struct PreferenceTally {
    /// Scale answers as the raters saw them (for the lean).
    shown_scores: Vec<f64>,
    /// Canonical score sums and counts, by whether A and B were swapped.
    by_swap: [(u64, f64); 2],
    /// Decisive answers, and those that favour the response shown first.
    decisive: u64,
    shown_first: u64,
    /// Per unordered pair of models (by name).
    model_pairs: BTreeMap<(String, String), Vec<PairAnswer>>,
}

/// Folds rating rows into metrics. Per included rating it keeps a few bytes (task,
/// rater, one code per question); agreement is built at the end, task by task.
pub struct Accumulator {
    rubric: RubricRef,
    subject: Subject,
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
    /// The preference questions (by index into `questions`) and what each gathers.
    preferences: Vec<(usize, PreferenceTally)>,
    /// Per score question: per model, the values given.
    score_models: Vec<(usize, BTreeMap<String, Vec<f64>>)>,
    /// The question raters are compared on.
    primary: Option<usize>,
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
            task_index: HashMap::new(),
            keys: Vec::new(),
            codes: Vec::new(),
            raters: Vec::new(),
            rater_index: HashMap::new(),
            preferences,
            score_models,
            primary,
            class_tallies: classifications
                .iter()
                .map(|q| vec![0; q.options.len()])
                .collect(),
            classifications: classifications.to_vec(),
            bias,
            shown: Vec::with_capacity(lines.len()),
            lines,
        }
    }

    /// Adds an included rating, whose codes start at `first` in `codes`, to the bias
    /// figures.
    fn add_bias(&mut self, row: &RatingFacts, first: usize) {
        let codes = &self.codes[first..];
        let turn = row.swapped && self.subject == Subject::Pair;
        self.shown.clear();
        for &(i, other) in &self.lines {
            self.shown.push(if turn {
                self.questions[i].turned[usize::from(codes[other])]
            } else {
                codes[i]
            });
        }
        let preference = self
            .preferences
            .first()
            .and_then(|(qi, _)| self.questions[*qi].favours(codes[*qi]));
        let observation = bias::Observation {
            preference,
            swapped: row.swapped,
            lengths: (row.len_a, row.len_b),
            time_spent_s: row.time_spent_s,
            models: row.model_a.as_deref().zip(row.model_b.as_deref()),
            shown: &self.shown,
        };
        self.bias.add(&row.rater, &observation);
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
        let first = self.codes.len();
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
        let codes = &self.codes[first..];
        for (qi, tally) in &mut self.preferences {
            let q = &self.questions[*qi];
            let code = codes[*qi];
            let Some(favours) = q.favours(code) else {
                continue;
            };
            let score = q.value(code);
            if let (Reading::Scale { .. }, Some(score)) = (&q.reading, score) {
                let shown = if row.swapped {
                    q.mirrored(score)
                } else {
                    score
                };
                tally.shown_scores.push(shown as f64);
                let side = &mut tally.by_swap[usize::from(row.swapped)];
                side.0 += 1;
                side.1 += score as f64;
            }
            let shown = as_shown(favours, row.swapped);
            if shown != Favours::Tie {
                tally.decisive += 1;
                tally.shown_first += u64::from(shown == Favours::A);
            }
            if let (Some(a), Some(b)) = (&row.model_a, &row.model_b) {
                // One row per pair whichever way round a task had it: the first by name
                // is A.
                let (key, read) = if a <= b {
                    ((a, b), (favours, score))
                } else {
                    ((b, a), (favours.flipped(), score.map(|s| q.mirrored(s))))
                };
                let read = (read.0, read.1.map(|s| s as f64));
                match tally.model_pairs.get_mut(&(key.0.clone(), key.1.clone())) {
                    Some(answers) => answers.push(read),
                    None => {
                        tally
                            .model_pairs
                            .insert((key.0.clone(), key.1.clone()), vec![read]);
                    }
                }
            }
        }
        for (qi, models) in &mut self.score_models {
            let q = &self.questions[*qi];
            let Some(value) = q.value(codes[*qi]) else {
                continue;
            };
            // The response the score is of: its side's model, or the one response's.
            let model = match (q.side, self.subject) {
                (Some("a"), _) | (None, Subject::Single) => row.model_a.as_ref(),
                (Some(_), _) => row.model_b.as_ref(),
                (None, Subject::Pair) => None,
            };
            if let Some(model) = model {
                models.entry(model.clone()).or_default().push(value as f64);
            }
        }
        self.add_bias(row, first);
    }

    pub fn finish(mut self, tasks: i64) -> Metrics {
        self.counts.tasks = tasks;
        let nq = self.questions.len();
        // Agreement, task by task: order the ratings by task and walk the groups. A score
        // is also measured at the ordinal level.
        let mut order: Vec<u32> = (0..self.keys.len() as u32).collect();
        order.sort_unstable_by_key(|&i| self.keys[i as usize].0);
        let mut builders: Vec<(String, usize, agreement::Builder)> = Vec::new();
        for (qi, q) in self.questions.iter().enumerate() {
            let domain: Vec<i64> = (1..=q.names.len() as i64).collect();
            builders.push((
                q.path.clone(),
                qi,
                agreement::Builder::new(domain.clone(), q.level),
            ));
            if matches!(q.reading, Reading::Score { .. }) {
                builders.push((
                    format!("{}:ordinal", q.path),
                    qi,
                    agreement::Builder::new(domain, agreement::Level::Ordinal),
                ));
            }
        }
        let mut pairs = vec![(0u64, 0u64); self.raters.len()];
        let mut values = Vec::new();
        for group in order.chunk_by(|&x, &y| self.keys[x as usize].0 == self.keys[y as usize].0) {
            for (_, qi, builder) in builders.iter_mut() {
                let q = &self.questions[*qi];
                values.clear();
                for &r in group {
                    let code = self.codes[r as usize * nq + *qi];
                    if code > 0 && !q.unscaled[usize::from(code) - 1] {
                        values.push(usize::from(code) - 1);
                    }
                }
                builder.add_unit(&values);
            }
            if let Some(pi) = self.primary {
                for (i, &x) in group.iter().enumerate() {
                    for &y in &group[i + 1..] {
                        let (cx, cy) = (
                            self.codes[x as usize * nq + pi],
                            self.codes[y as usize * nq + pi],
                        );
                        if cx == 0 || cy == 0 {
                            continue;
                        }
                        for r in [self.keys[x as usize].1, self.keys[y as usize].1] {
                            pairs[r as usize].0 += 1;
                            pairs[r as usize].1 += u64::from(cx == cy);
                        }
                    }
                }
            }
        }
        let agreement = builders
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

        let several = self.preferences.len() > 1;
        let mut preferences = BTreeMap::new();
        let mut pooled_pairs: BTreeMap<(String, String), Vec<PairAnswer>> = BTreeMap::new();
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
                    pooled_pairs
                        .entry(pair.clone())
                        .or_default()
                        .extend(answers.iter().map(|(f, _)| (*f, None)));
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
            rubric: self.rubric,
            counts: self.counts,
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

    /// The values given to question `qi` by included ratings, in order.
    fn values_of(&self, qi: usize) -> Vec<f64> {
        let q = &self.questions[qi];
        self.codes
            .chunks(self.questions.len())
            .filter_map(|c| q.value(c[qi]))
            .map(|v| v as f64)
            .collect()
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
            Reading::Scale { .. } => stats::mean(&self.values_of(qi)),
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

    fn score_summary(&self, qi: usize, by_model: &BTreeMap<String, Vec<f64>>) -> ScoreSummary {
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
                n: values.len() as u64,
                mean: stats::mean(values),
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
            n: values.len() as u64,
            mean: stats::mean(&values),
            distribution,
            models,
        }
    }
}

/// The lean of one preference question to the response shown first.
fn position_bias(q: &Question, tally: &PreferenceTally) -> PositionBias {
    match q.reading {
        Reading::Scale { .. } => {
            let side = |(n, sum): (u64, f64)| Side {
                n,
                mean: (n > 0).then(|| sum / n as f64),
            };
            PositionBias::Scale {
                not_swapped: side(tally.by_swap[0]),
                swapped: side(tally.by_swap[1]),
                shown_mean: stats::mean(&tally.shown_scores),
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
fn models(by_pair: &BTreeMap<(String, String), Vec<PairAnswer>>, with_mean: bool) -> Models {
    let pairs: Vec<ModelPair> = by_pair
        .iter()
        .map(|((a, b), answers)| {
            let n = answers.len() as u64;
            let count = |f: Favours| answers.iter().filter(|(x, _)| *x == f).count() as u64;
            let (aw, t, bw) = (count(Favours::A), count(Favours::Tie), count(Favours::B));
            let scores: Vec<f64> = answers.iter().filter_map(|(_, s)| *s).collect();
            ModelPair {
                model_a: a.clone(),
                model_b: b.clone(),
                n,
                a_wins: aw,
                ties: t,
                b_wins: bw,
                mean: if with_mean {
                    stats::mean(&scores)
                } else {
                    None
                },
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
                });
            }
        }
        rows
    }

    /// The blackhat metrics of a varied batch, figure for figure, as they were before
    /// rubrics became documents (`tests/fixtures/metrics/blackhat.json`; written anew
    /// only with `VERDICT_WRITE_METRICS_FIXTURE=1`, after a change meant to alter them).
    #[test]
    fn blackhat_metrics_are_unchanged() {
        let questions = vec![crate::rubric::Classification {
            key: "language".into(),
            label: "Language".into(),
            multiple: false,
            required: true,
            options: vec!["python".into(), "rust".into()],
        }];
        let mut acc = Accumulator::new(by_name("blackhat").unwrap(), 1, &questions);
        for row in varied_blackhat_batch() {
            acc.add(&row);
        }
        let mut got = serde_json::to_value(acc.finish(60)).unwrap();
        // The bias figures came after the fixture (they are tested in `bias` and
        // `tests/api/bias.rs`); every figure that was there must be unchanged.
        assert!(got["bias"]["raters"].is_array());
        got.as_object_mut().unwrap().remove("bias");
        // So did the gold figures (tests in `gold` and `tests/api/gold.rs`); the
        // accumulator leaves them empty for the page to fill in.
        assert_eq!(got["gold"]["raters"], serde_json::json!([]));
        got.as_object_mut().unwrap().remove("gold");
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/metrics/blackhat.json"
        );
        if std::env::var_os("VERDICT_WRITE_METRICS_FIXTURE").is_some() {
            std::fs::write(path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(got, expected);
    }

    /// The ratings of `tests/fixtures/krippendorff/rubrics.json` for `rubric`, through the
    /// metrics, give the alpha the `krippendorff` package gives (1e-9).
    fn agreement_matches_the_reference(rubric: &str) {
        let text = include_str!("../../tests/fixtures/krippendorff/rubrics.json");
        let cases: Value = serde_json::from_str(text).unwrap();
        let case = &cases[rubric];
        let mut acc = Accumulator::new(by_name(rubric).unwrap(), 1, &[]);
        for r in case["ratings"].as_array().unwrap() {
            acc.add(&RatingFacts {
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
            });
        }
        let m = acc.finish(40);
        let expected = case["alpha"].as_object().unwrap();
        assert!(expected.len() >= 6, "{rubric}: {expected:?}");
        for (key, alpha) in expected {
            let got = m.agreement[key].krippendorff_alpha.unwrap();
            let want = alpha.as_f64().unwrap();
            assert!((got - want).abs() < 1e-9, "{rubric} {key}: {got} vs {want}");
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
