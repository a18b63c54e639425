//! Majority vote and Dawid-Skene read off the folded ratings: each counted rating's
//! code for a question is already held, with its task and rater as indices, so the
//! aggregation takes no second read of the ratings and no string keys.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::*;
use crate::metrics::aggregate::{self, Coded, Label, QuestionAggregation};

impl Accumulator {
    /// Each aggregated question's summary (see [`aggregate::questions`]), by path, over
    /// the ratings that count: the same figures [`aggregate::summarise`] gives of those
    /// ratings' answers. A question's classes are the codes given, in the rubric's
    /// option order. Scores are not classes: they come to their middle answer in the
    /// aggregated export and have no summary here.
    ///
    /// The questions are worked out on every core: each question's Dawid-Skene iterates
    /// over every answer and owes nothing to the others (and each shares its iterations
    /// out in turn, so one long question keeps every core busy too).
    pub fn aggregation(&self, rubric: &Rubric) -> BTreeMap<String, QuestionAggregation> {
        let found: Vec<(String, usize)> = aggregate::questions(rubric)
            .into_iter()
            .filter(|question| question.kind == aggregate::Kind::Classes)
            .filter_map(|question| {
                let qi = self
                    .questions
                    .iter()
                    .position(|q| q.path == question.path)?;
                Some((question.path, qi))
            })
            .collect();
        // The counted ratings by task id, then rating id: the sums the methods make then
        // come out to the last bit the same however the ratings were folded in, so an
        // instance that followed the batch and a fresh one agree exactly.
        let mut units: Vec<&Unit> = self
            .tasks
            .iter()
            .filter(|u| !u.members.is_empty())
            .collect();
        units.sort_unstable_by_key(|u| u.id);
        let mut held: Vec<&Entry> = Vec::with_capacity(self.entries.len());
        let mut ids = Vec::new();
        let mut ends = Vec::with_capacity(units.len());
        for unit in units {
            ids.clone_from(&unit.members);
            ids.sort_unstable();
            held.extend(ids.iter().map(|id| &self.entries[id]));
            ends.push(held.len());
        }
        let canonical = (&held[..], &ends[..]);
        found
            .par_iter()
            .map(|(path, qi)| (path.clone(), self.aggregate(*qi, canonical)))
            .collect()
    }

    /// Question `qi`'s summary, of the counted ratings `held` one task after another
    /// (each task's end in `ends`).
    fn aggregate(&self, qi: usize, (held, ends): (&[&Entry], &[usize])) -> QuestionAggregation {
        let q = &self.questions[qi];
        // Codes whose answer is a class (a yes/no, a whole number or a text).
        let is_class: Vec<bool> = std::iter::once(false)
            .chain(q.texts.iter().map(|text| {
                serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| Label::from_json(&v))
                    .is_some()
            }))
            .collect();
        let mut answers: Vec<Coded> = Vec::new();
        let mut given = vec![false; is_class.len()];
        let mut rater_at = vec![u32::MAX; self.raters.len()];
        let mut raters: Vec<&str> = Vec::new();
        let mut tasks = 0u32;
        let mut start = 0;
        for &end in ends {
            let mut answered = false;
            for entry in &held[start..end] {
                let code = usize::from(entry.codes[qi]);
                if !is_class[code] {
                    continue;
                }
                given[code] = true;
                let r = entry.rater as usize;
                if rater_at[r] == u32::MAX {
                    rater_at[r] = raters.len() as u32;
                    raters.push(&self.raters[r].name);
                }
                answers.push(Coded {
                    task: tasks,
                    rater: rater_at[r],
                    class: code as u32,
                });
                answered = true;
            }
            tasks += u32::from(answered);
            start = end;
        }
        // Codes to classes: the codes given, in order.
        let mut class_of = vec![0u32; given.len()];
        let mut classes = 0u32;
        for (code, given) in given.iter().enumerate() {
            if *given {
                class_of[code] = classes;
                classes += 1;
            }
        }
        for answer in &mut answers {
            answer.class = class_of[answer.class as usize];
        }
        aggregate::summary(tasks as usize, &raters, classes as usize, &answers)
    }
}
