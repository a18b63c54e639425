//! Questions of several choices (seed 002's issue categories): how often each option was
//! picked, of the ratings that were asked the question, per response and per model.
//!
//! Such a question has no single answer to code, so it sits beside the coded questions
//! of [`super::Accumulator`]: each rating keeps, per question, whether it was asked (its
//! `applies_when` held) and which options it picked, as bits.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::accumulator::{RawMap, count};
use super::stats::{self, Estimate};
use crate::rubric::{Answer, Matches, Rubric, Slot};

/// How often the options of one question of several choices were picked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ChoiceCounts {
    /// Included ratings that were asked it (every one, unless it is asked only when
    /// another answer allows it).
    pub asked: u64,
    /// Of those, the ratings that picked at least one option.
    pub answered: u64,
    /// Per option (every option listed, in the rubric's order of values): the ratings
    /// that picked it.
    pub options: BTreeMap<String, u64>,
    /// Per option: the share of the ratings asked that picked it, with a Wilson interval.
    pub shares: BTreeMap<String, Estimate>,
}

/// One question of several choices, for one response (`a.issue_categories`) or pooled
/// over both (`issue_categories`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ChoicesSummary {
    #[serde(flatten)]
    pub counts: ChoiceCounts,
    /// The same counts per model: the model of the response the answers are about.
    pub models: BTreeMap<String, ChoiceCounts>,
}

/// A question of several choices, at one place in the stored answers.
pub(super) struct SeveralQuestion {
    pub(super) path: String,
    pub(super) key: String,
    pub(super) side: Option<&'static str>,
    pub(super) options: Vec<String>,
    /// When it is asked: answers in the same object, by key.
    pub(super) applies_when: Vec<(String, Matches)>,
}

/// A rating's answer to one: `None` when it was not asked, else the options picked as
/// bits (bit i for option i; 0 for none).
pub(super) type Picks = Option<u32>;

impl SeveralQuestion {
    /// Every question of several choices of `rubric`, at each place its answers sit.
    pub(super) fn of(rubric: &Rubric) -> Vec<Self> {
        rubric
            .slots()
            .into_iter()
            .filter_map(|slot| {
                let Slot::Asked { question, side } = slot else {
                    return None;
                };
                let Answer::MultiChoice { options } = &question.answer else {
                    return None;
                };
                Some(Self {
                    path: slot.path(),
                    key: question.key.clone(),
                    side: side.map(crate::rubric::Side::key),
                    options: options.iter().map(|o| o.value.clone()).collect(),
                    applies_when: question
                        .applies_when
                        .iter()
                        .map(|(k, m)| (k.clone(), m.clone()))
                        .collect(),
                })
            })
            .collect()
    }

    /// What `holder` (the object its answers sit in) says of it.
    pub(super) fn picks(&self, holder: &RawMap) -> Picks {
        let asked = self.applies_when.iter().all(|(key, matches)| {
            let value = holder
                .get(key.as_str())
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
            matches.matches(value.as_ref())
        });
        if !asked {
            return None;
        }
        let chosen: Vec<String> = holder
            .get(self.key.as_str())
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        Some(
            self.options
                .iter()
                .enumerate()
                .filter(|(_, o)| chosen.contains(o))
                .fold(0, |bits, (i, _)| bits | (1 << i)),
        )
    }
}

/// What is folded of one question: the options picked, in all and per model.
#[derive(Default)]
pub(super) struct SeveralTally {
    all: Tally,
    models: BTreeMap<String, Tally>,
}

#[derive(Default, Clone)]
struct Tally {
    asked: u64,
    answered: u64,
    picked: Vec<u64>,
}

impl Tally {
    fn change(&mut self, bits: u32, options: usize, add: bool) {
        self.picked.resize(options, 0);
        count(&mut self.asked, add);
        if bits != 0 {
            count(&mut self.answered, add);
        }
        for (i, n) in self.picked.iter_mut().enumerate() {
            if bits & (1 << i) != 0 {
                count(n, add);
            }
        }
    }

    fn add(&mut self, other: &Tally) {
        self.picked
            .resize(other.picked.len().max(self.picked.len()), 0);
        self.asked += other.asked;
        self.answered += other.answered;
        for (n, m) in self.picked.iter_mut().zip(&other.picked) {
            *n += m;
        }
    }

    fn counts(&self, options: &[String]) -> ChoiceCounts {
        let picked = |i: usize| self.picked.get(i).copied().unwrap_or(0);
        ChoiceCounts {
            asked: self.asked,
            answered: self.answered,
            options: options
                .iter()
                .enumerate()
                .map(|(i, o)| (o.clone(), picked(i)))
                .collect(),
            shares: options
                .iter()
                .enumerate()
                .filter_map(|(i, o)| Some((o.clone(), stats::share(picked(i), self.asked)?)))
                .collect(),
        }
    }
}

impl SeveralTally {
    /// Adds one rating's answer (about a response of `model`), or takes it out.
    pub(super) fn change(&mut self, picks: Picks, options: usize, model: Option<&str>, add: bool) {
        let Some(bits) = picks else { return };
        self.all.change(bits, options, add);
        if let Some(model) = model {
            let tally = self.models.entry(model.to_owned()).or_default();
            tally.change(bits, options, add);
            if tally.asked == 0 {
                self.models.remove(model);
            }
        }
    }
}

/// The summaries of every question of several choices: one per place (`a.x`, `b.x`),
/// and for a question asked of each response, one pooled over both under its key.
pub(super) fn summaries(
    questions: &[SeveralQuestion],
    tallies: &[SeveralTally],
) -> BTreeMap<String, ChoicesSummary> {
    let summary = |tally: &SeveralTally, options: &[String]| ChoicesSummary {
        counts: tally.all.counts(options),
        models: tally
            .models
            .iter()
            .map(|(m, t)| (m.clone(), t.counts(options)))
            .collect(),
    };
    let mut out = BTreeMap::new();
    let mut pooled: BTreeMap<&str, (SeveralTally, &[String])> = BTreeMap::new();
    for (q, tally) in questions.iter().zip(tallies) {
        out.insert(q.path.clone(), summary(tally, &q.options));
        if q.side.is_some() {
            let (sum, _) = pooled
                .entry(q.key.as_str())
                .or_insert_with(|| (SeveralTally::default(), &q.options));
            sum.all.add(&tally.all);
            for (model, t) in &tally.models {
                sum.models.entry(model.clone()).or_default().add(t);
            }
        }
    }
    for (key, (tally, options)) in pooled {
        out.insert(key.to_owned(), summary(&tally, options));
    }
    out
}
