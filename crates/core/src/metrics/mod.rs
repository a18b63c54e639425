//! A batch's metrics, computed from its ratings one row at a time, for any rubric: what
//! each question's metrics role says is measured (see [`crate::rubric::Role`]). The
//! ratings stay folded ([`Accumulator`]): a rating can be added, changed or taken out
//! later, which is how an instance keeps a batch's metrics up to date (the app's
//! `heavy::live`).
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

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::lifecycle::{Outcome, Status};
use crate::rubric::{Answer, Favours, Role, Rubric, Slot};

mod accumulator;
pub mod aggregate;
pub mod agreement;
pub mod bias;
pub mod bradley_terry;
pub mod gold;
pub mod judges;
pub mod pairwise;
pub mod several;
pub mod stats;

pub use accumulator::Accumulator;
use agreement::Agreement;
use stats::Estimate;

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
    /// Why a skip was skipped.
    pub skip_reason: Option<crate::lifecycle::SkipReason>,
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
    /// The skips left out, by their reason (the rubric's value, e.g. `cannot_assess`).
    pub skip_reasons: BTreeMap<String, u64>,
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
    /// Per aggregated question (by path), how often the rater's answers that count
    /// equal the final answers leads recorded (see [`aggregate::vs_final`]); absent
    /// where no task they rated was adjudicated.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub vs_final: BTreeMap<String, aggregate::FinalAgreement>,
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
    /// counting half a win to each, with the prior they were fitted with (see
    /// [`bradley_terry`]).
    pub ranking: Option<bradley_terry::Ranking>,
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
    /// Per question of several choices (issue categories): how often each option was
    /// picked of the ratings asked it, per response (`a.<key>`, `b.<key>`) and pooled
    /// over both (`<key>`), each also per model.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub choices: BTreeMap<String, several::ChoicesSummary>,
    /// Per question (`a.correctness`, ..., and the batch's classifications as
    /// `classifications.<key>`): answers per option (for several choices, the ratings
    /// that picked each).
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
    /// The raters the batch asks for, with adaptive overlap against a fixed most (see
    /// [`crate::overlap`]).
    pub overlap: OverlapFigures,
    /// What skills routing did (see [`crate::routing`]); absent when the batch does not
    /// route its tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<crate::routing::RoutingFigures>,
    /// Per question with one answer per task to agree on (a preference, an ordinal or a
    /// nominal question, yes/no included; by path): how many tasks have an aggregated
    /// answer, how often majority vote and Dawid-Skene differ, each method's mean
    /// confidence, and each rater's estimated accuracy (see [`aggregate`]). Worked out
    /// at each read from the ratings the figures above count, not folded.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub aggregation: BTreeMap<String, aggregate::QuestionAggregation>,
}

/// What adaptive overlap asked: the raters a batch's tasks need now (each its overlap,
/// and those it gained while its answers disagreed) against asking every task of the
/// most from the start. Gold tasks are left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OverlapFigures {
    /// Raters every task is asked of first.
    pub overlap: i32,
    /// The most a task is asked of (`overlap` when the batch does not escalate).
    pub max_overlap: i32,
    /// The rule for one more rater, written out (`side:sxs`); absent when the batch
    /// does not escalate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalate: Option<String>,
    pub tasks: i64,
    /// Tasks that gained at least one rater.
    pub escalated: i64,
    /// The raters gained, over all tasks.
    pub raters_added: i64,
    /// Ratings the tasks need now: `tasks * overlap + raters_added`.
    pub ratings_needed: i64,
    /// Ratings a fixed overlap of `max_overlap` would need: `tasks * max_overlap`.
    pub ratings_at_max: i64,
    /// `ratings_at_max - ratings_needed`.
    pub ratings_saved: i64,
}

impl OverlapFigures {
    /// The figures of a batch with `tasks` tasks of which `escalated` gained
    /// `raters_added` raters in all, under `plan`.
    pub fn new(
        plan: &crate::overlap::Plan<'_>,
        tasks: i64,
        escalated: i64,
        raters_added: i64,
    ) -> Self {
        let ratings_needed = tasks * i64::from(plan.overlap) + raters_added;
        let ratings_at_max = tasks * i64::from(plan.max_overlap);
        OverlapFigures {
            overlap: plan.overlap,
            max_overlap: plan.max_overlap,
            escalate: plan.escalation.as_ref().map(ToString::to_string),
            tasks,
            escalated,
            raters_added,
            ratings_needed,
            ratings_at_max,
            ratings_saved: ratings_at_max - ratings_needed,
        }
    }
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

#[cfg(test)]
mod tests;
