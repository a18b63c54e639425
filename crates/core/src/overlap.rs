//! Adaptive overlap: a batch asks `overlap` raters of every task first, and one more at a
//! time, up to `max_overlap`, while the answers a task has disagree by the batch's rule.
//!
//! A rule names what disagreement is and on which question (its path in an answer set,
//! e.g. `sxs` or `a.correctness`), written as `<rule>[:<question>][:<n>]`:
//!
//! - `side`: the answers of a preference favour different sides (A, neither, B);
//! - `points:<n>`: the answers of a preference scale differ by `n` points or more;
//! - `no_majority`: no answer was given by more than half of the raters;
//! - `spread:<n>`: the answers of a number (a scale or a score the server adds up)
//!   differ by `n` or more.
//!
//! Without a question, `side` and `points` read the rubric's first preference,
//! `no_majority` its first choice with a metrics role, and `spread` its first score.
//! Without a rule, a batch escalates on `side` when its rubric has a preference and
//! otherwise on `no_majority`.
//!
//! Only answers of the outcome `rated` are compared; a task escalates when every slot it
//! has is finished (so always after the first raters, one rater at a time).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::rubric::{Answer, Answers, Favours, Role, Rubric, Slot};

/// What counts as disagreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Side,
    Points(u32),
    NoMajority,
    Spread(u32),
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Side => "side",
            Rule::Points(_) => "points",
            Rule::NoMajority => "no_majority",
            Rule::Spread(_) => "spread",
        }
    }

    fn n(self) -> Option<u32> {
        match self {
            Rule::Points(n) | Rule::Spread(n) => Some(n),
            Rule::Side | Rule::NoMajority => None,
        }
    }

    /// Whether the rule can read `slot`'s answers.
    fn reads(self, slot: &Slot<'_>) -> bool {
        let preference = matches!(slot.metrics(), Some(Role::Preference { .. }));
        let scale = matches!(
            slot,
            Slot::Asked {
                question,
                ..
            } if matches!(question.answer, Answer::Scale { .. })
        );
        match self {
            Rule::Side => preference,
            Rule::Points(_) => preference && scale,
            Rule::NoMajority => {
                slot.metrics().is_some()
                    && matches!(
                        slot,
                        Slot::Asked { question, .. }
                            if matches!(question.answer, Answer::Choice { .. } | Answer::YesNo { .. } | Answer::Scale { .. })
                    )
            }
            Rule::Spread(_) => scale || matches!(slot, Slot::Derived(_)),
        }
    }

    /// What the rule reads, in words, for an error naming a question it cannot read.
    fn wants(self) -> &'static str {
        match self {
            Rule::Side => "a preference",
            Rule::Points(_) => "a preference scale",
            Rule::NoMajority => "a choice, yes/no or scale question with a metrics role",
            Rule::Spread(_) => "a scale or a score",
        }
    }

    /// The question it reads when none is named: `side` and `points` the first
    /// preference, `no_majority` the first choice, `spread` the first score.
    fn default_slot<'r>(self, rubric: &'r Rubric) -> Option<Slot<'r>> {
        let slots = rubric.slots();
        match self {
            Rule::NoMajority => slots.into_iter().find(|s| {
                matches!(s, Slot::Asked { question, .. } if matches!(question.answer, Answer::Choice { .. }))
                    && self.reads(s)
            }),
            Rule::Spread(_) => slots
                .iter()
                .find(|s| matches!(s.metrics(), Some(Role::Score)) && self.reads(s))
                .or_else(|| slots.iter().find(|s| self.reads(s)))
                .copied(),
            Rule::Side | Rule::Points(_) => slots.into_iter().find(|s| self.reads(s)),
        }
    }
}

/// A batch's rule for one more rater: what disagreement is, on which question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    pub rule: Rule,
    /// The question's path in an answer set.
    pub question: String,
}

/// The longest rule text read (a question's path is short).
const MAX_RULE_LEN: usize = 200;

impl Escalation {
    /// The rule a batch of `rubric` escalates on when it names none: `side` on its first
    /// preference, else `no_majority` on its first choice.
    pub fn default_for(rubric: &Rubric) -> Option<Self> {
        [Rule::Side, Rule::NoMajority].into_iter().find_map(|rule| {
            Some(Escalation {
                rule,
                question: rule.default_slot(rubric)?.path(),
            })
        })
    }

    /// Reads `<rule>[:<question>][:<n>]` for `rubric`; the error says what is wrong in
    /// words, for the field that gave it.
    pub fn parse(text: &str, rubric: &Rubric) -> Result<Self, String> {
        let text = text.trim();
        if text.len() > MAX_RULE_LEN {
            return Err(format!("at most {MAX_RULE_LEN} characters"));
        }
        let mut parts: Vec<&str> = text.split(':').map(str::trim).collect();
        let name = parts.remove(0);
        let counted = matches!(name, "points" | "spread");
        let n = if counted {
            let Some(last) = parts.pop() else {
                return Err(format!(
                    "{name} needs a number of points: {name}:<n> or {name}:<question>:<n>"
                ));
            };
            match last.parse::<u32>() {
                Ok(n) if (1..=1000).contains(&n) => n,
                _ => return Err(format!("{last:?} is not a whole number from 1 to 1000")),
            }
        } else {
            0
        };
        let rule = match name {
            "side" => Rule::Side,
            "no_majority" => Rule::NoMajority,
            "points" => Rule::Points(n),
            "spread" => Rule::Spread(n),
            other => {
                return Err(format!(
                    "unknown rule {other:?}: use side, points:<n>, no_majority or spread:<n>, each optionally with :<question> after the rule's name"
                ));
            }
        };
        let slot = match parts.as_slice() {
            [] => rule.default_slot(rubric).ok_or_else(|| {
                format!(
                    "{} reads {}, and the rubric {} has none",
                    rule.name(),
                    rule.wants(),
                    rubric.name
                )
            })?,
            [question] => {
                let slots = rubric.slots();
                let slot = slots
                    .iter()
                    .find(|s| s.path() == *question)
                    .ok_or_else(|| {
                        format!(
                            "the rubric {} has no question {question:?}: use one of {}",
                            rubric.name,
                            slots
                                .iter()
                                .filter(|s| rule.reads(s))
                                .map(Slot::path)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })?;
                if !rule.reads(slot) {
                    return Err(format!(
                        "{} reads {}, and {question} is not one",
                        rule.name(),
                        rule.wants()
                    ));
                }
                *slot
            }
            _ => {
                return Err(format!(
                    "{text:?} has too many parts: <rule>[:<question>][:<n>]"
                ));
            }
        };
        Ok(Escalation {
            rule,
            question: slot.path(),
        })
    }

    /// Whether the answers of a task's raters (each an answer set in the task's
    /// orientation) disagree by the rule, so that the task needs one more rater.
    pub fn disagree<'a>(
        &self,
        rubric: &Rubric,
        answers: impl IntoIterator<Item = &'a Answers>,
    ) -> bool {
        let slots = rubric.slots();
        let Some(slot) = slots.iter().find(|s| s.path() == self.question) else {
            return false;
        };
        let values: Vec<&Value> = answers.into_iter().filter_map(|a| slot.value(a)).collect();
        match self.rule {
            Rule::Side => {
                let Some(role) = slot.metrics() else {
                    return false;
                };
                let sides: Vec<Favours> = values.iter().filter_map(|v| role.favours(v)).collect();
                sides.windows(2).any(|w| w[0] != w[1])
            }
            Rule::Points(n) | Rule::Spread(n) => {
                let numbers: Vec<f64> = values.iter().filter_map(|v| v.as_f64()).collect();
                let (Some(low), Some(high)) = (
                    numbers.iter().copied().reduce(f64::min),
                    numbers.iter().copied().reduce(f64::max),
                ) else {
                    return false;
                };
                high - low >= f64::from(n)
            }
            Rule::NoMajority => {
                let mut counts = BTreeMap::<String, usize>::new();
                for value in &values {
                    *counts.entry(value.to_string()).or_default() += 1;
                }
                let most = counts.values().copied().max().unwrap_or(0);
                !values.is_empty() && most * 2 <= values.len()
            }
        }
    }
}

impl fmt::Display for Escalation {
    /// The rule as it is written: `<rule>:<question>[:<n>]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.rule.name(), self.question)?;
        if let Some(n) = self.rule.n() {
            write!(f, ":{n}")?;
        }
        Ok(())
    }
}

impl Escalation {
    /// The rule in words, for pages.
    pub fn words(&self) -> String {
        match self.rule {
            Rule::Side => format!("the answers to {} favour different sides", self.question),
            Rule::Points(n) => format!(
                "the answers to {} differ by {n} points or more",
                self.question
            ),
            Rule::NoMajority => format!("no answer to {} has a majority", self.question),
            Rule::Spread(n) => format!("the answers to {} differ by {n} or more", self.question),
        }
    }
}

/// How many raters the tasks of a batch need, and when one needs one more.
#[derive(Debug, Clone)]
pub struct Plan<'r> {
    /// Raters every task is asked of first.
    pub overlap: i32,
    /// The most any task is asked of (`overlap` when the batch does not escalate).
    pub max_overlap: i32,
    /// The rule, when the batch escalates (`max_overlap` above `overlap`).
    pub escalation: Option<Escalation>,
    /// The batch's rubric, whose answers the rule reads.
    pub rubric: &'r Rubric,
}

impl<'r> Plan<'r> {
    /// The plan of `batch` with its rubric. A stored rule the rubric no longer reads (it
    /// is checked when set, against the version the batch pins) escalates nothing.
    pub fn of(batch: &crate::batch::Batch, rubric: &'r Rubric) -> Self {
        let max_overlap = batch.most_raters();
        let escalation = (max_overlap > batch.overlap)
            .then(|| match &batch.escalate {
                Some(text) => Escalation::parse(text, rubric).ok(),
                None => Escalation::default_for(rubric),
            })
            .flatten();
        Plan {
            overlap: batch.overlap,
            max_overlap,
            escalation,
            rubric,
        }
    }

    /// The most raters a task may gain beyond `overlap`.
    pub fn max_extra(&self) -> i32 {
        if self.escalation.is_some() {
            self.max_overlap - self.overlap
        } else {
            0
        }
    }

    /// Whether a task that needs `overlap + extra` raters and has `finished` of them
    /// (their slots held to the end: rated or out of scope), with `rated` the answer sets
    /// of those rated, needs one more.
    pub fn needs_one_more<'a>(
        &self,
        extra: i32,
        finished: usize,
        rated: impl IntoIterator<Item = &'a Answers>,
    ) -> bool {
        let Some(escalation) = &self.escalation else {
            return false;
        };
        let needed = self.overlap + extra;
        extra < self.max_extra()
            && usize::try_from(needed).is_ok_and(|n| finished >= n)
            && escalation.disagree(self.rubric, rated)
    }
}

#[cfg(test)]
mod tests;
