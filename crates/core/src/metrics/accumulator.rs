//! The fold: ratings added, changed or taken out one at a time ([`Accumulator`]), and
//! the figures read off it whenever asked (`figures`).

use std::collections::BTreeMap;

use foldhash::{HashMap, HashMapExt};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::agreement;
use super::stats::{self, Histogram};
use super::*;
use crate::lifecycle::{Exclusion, Outcome, Status};
use crate::rubric::{Favours, Rubric, Subject};

mod aggregation;
mod figures;

/// A JSON object's members, each value left as its raw text.
///
/// A rating's answers are objects of a handful of members, read once each: looking along
/// them finds a key sooner than hashing it, and a cold read of a million ratings hashed
/// about ten keys a rating. Written here because serde_json offers no borrowed object of
/// raw values other than a map.
#[derive(Default)]
pub(super) struct RawMap<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'a> RawMap<'a> {
    /// The value of `key`: of its last occurrence, as a map read from the same text
    /// would keep it.
    pub(super) fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for RawMap<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Members<'a> {
            type Value = RawMap<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(member) = map.next_entry::<&'de str, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(RawMap(members))
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// One model pair's answers to a preference, read with the first model by name as A.
#[derive(Default)]
pub(super) struct PairTally {
    pub(super) a_wins: u64,
    pub(super) ties: u64,
    pub(super) b_wins: u64,
    /// Scale scores (a choice has none).
    pub(super) scores: Histogram,
}

impl PairTally {
    pub(super) fn n(&self) -> u64 {
        self.a_wins + self.ties + self.b_wins
    }

    pub(super) fn change(&mut self, (favours, score): PairAnswer, add: bool) {
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
pub(super) type PairAnswer = (Favours, Option<i64>);

/// What a preference question gathers beyond its codes.
#[derive(Default)]
pub(super) struct PreferenceTally {
    /// Scale answers as the raters saw them (for the lean).
    pub(super) shown_scores: Histogram,
    /// Canonical score counts and sums, by whether A and B were swapped.
    pub(super) by_swap: [(u64, i64); 2],
    /// Decisive answers, and those that favour the response shown first.
    pub(super) decisive: u64,
    pub(super) shown_first: u64,
    /// Per unordered pair of models (by name).
    pub(super) model_pairs: BTreeMap<(String, String), PairTally>,
}

/// The model of the response an answer at `side` is about: its side's, or the one
/// response's; none for an answer about the pair. `models` are (A's, B's).
fn model_of<'m>(
    side: Option<&str>,
    subject: Subject,
    models: (Option<&'m str>, Option<&'m str>),
) -> Option<&'m str> {
    match (side, subject) {
        (Some("a"), _) | (None, Subject::Single) => models.0,
        (Some(_), _) => models.1,
        (None, Subject::Pair) => None,
    }
}

/// Adds 1 to `n`, or takes 1 away.
pub(super) fn count(n: &mut u64, add: bool) {
    if add {
        *n += 1;
    } else {
        *n -= 1;
    }
}

/// One rating as folded in: enough to take it out again exactly when it changes.
pub(super) struct Entry {
    pub(super) task: u32,
    pub(super) rater: u32,
    pub(super) outcome: Outcome,
    pub(super) status: Status,
    pub(super) swapped: bool,
    pub(super) time_spent_s: i32,
    /// The task's models (response A's, response B's), by index into the accumulator's
    /// names.
    pub(super) models: (Option<u32>, Option<u32>),
    pub(super) lengths: (i64, i64),
    /// One code per question; empty for a rating that does not count.
    pub(super) codes: Box<[u8]>,
    /// The classification options chosen: (question, option) by index.
    pub(super) classes: Box<[(u16, u16)]>,
    /// Per question of several choices: whether it was asked, and what was picked.
    pub(super) picks: Box<[several::Picks]>,
    /// A skip's reason.
    pub(super) skip_reason: Option<crate::lifecycle::SkipReason>,
}

impl Entry {
    pub(super) fn included(&self) -> bool {
        crate::lifecycle::counts_in_metrics(self.outcome, self.status)
    }
}

/// One task: its id and the ratings of it that count.
pub(super) struct Unit {
    pub(super) id: Uuid,
    pub(super) members: Vec<Uuid>,
}

/// Folds rating rows into metrics, and keeps them folded: a rating can be added, changed
/// or taken out at any time, and [`Accumulator::finish`] gives the figures of the ratings
/// it holds then, whatever order they came in. Every figure is kept as counts (per code,
/// per value, per task for agreement), so a change costs what one rating and its task's
/// few other ratings cost, and the figures take no pass over the ratings. Per rating it
/// keeps a few dozen bytes (its codes, orientation, time, models and lengths), to take it
/// out again.
pub struct Accumulator {
    pub(super) rubric: RubricRef,
    pub(super) subject: Subject,
    pub(super) questions: Vec<Question>,
    pub(super) counts: Counts,
    /// Per question, per code (index 0 unused): how often it was given.
    pub(super) tallies: Vec<Vec<u64>>,
    /// Every rating held, by id. These maps (foldhash, not the standard SipHash) are
    /// looked up for every rating folded; their keys are ids and names the server made
    /// or checked, and SipHash was the larger part of a cold fold's hashing.
    pub(super) entries: HashMap<Uuid, Entry>,
    pub(super) tasks: Vec<Unit>,
    pub(super) task_index: HashMap<Uuid, u32>,
    pub(super) raters: Vec<RaterTally>,
    pub(super) rater_index: HashMap<String, u32>,
    pub(super) models: Vec<String>,
    pub(super) model_index: HashMap<String, u32>,
    /// The preference questions (by index into `questions`) and what each gathers.
    pub(super) preferences: Vec<(usize, PreferenceTally)>,
    /// Per score question: per model, the values given.
    pub(super) score_models: Vec<(usize, BTreeMap<String, Histogram>)>,
    /// The question raters are compared on.
    pub(super) primary: Option<usize>,
    /// Agreement per question (a score also at the ordinal level, under
    /// `<path>:ordinal`): its key, its question and its coincidences.
    pub(super) agreement: Vec<(String, usize, agreement::Builder)>,
    /// The batch's classification questions, and per question how often each option
    /// was chosen.
    pub(super) classifications: Vec<crate::rubric::Classification>,
    pub(super) class_tallies: Vec<Vec<u64>>,
    /// The questions of several choices (at each place they sit), and what each
    /// gathers.
    pub(super) several: Vec<several::SeveralQuestion>,
    pub(super) several_tallies: Vec<several::SeveralTally>,
    /// The bias figures, per rater and for the batch.
    pub(super) bias: bias::BiasTally,
    /// The questions straight-lining reads (each one raters answer), by index into
    /// `questions`, each with the question whose code gives its answer as shown when B
    /// was shown first (for one asked of each response, the other response's).
    pub(super) lines: Vec<(usize, usize)>,
    /// Room for one rating's answers as shown, reused from rating to rating.
    pub(super) shown: Vec<u8>,
    /// Room for one task's values of one question.
    pub(super) values: Vec<usize>,
}

#[derive(Default)]
pub(super) struct RaterTally {
    pub(super) name: String,
    /// Every rating held, drafts included.
    pub(super) ratings: u64,
    pub(super) included: u64,
    pub(super) finished: u64,
    pub(super) skipped: u64,
    pub(super) out_of_scope: u64,
    pub(super) times: Histogram,
    /// Pairs with other raters on the primary question, and the equal ones.
    pub(super) pairs: u64,
    pub(super) equal: u64,
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
        let several = several::SeveralQuestion::of(rubric);
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
            several_tallies: several.iter().map(|_| Default::default()).collect(),
            several,
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

    /// Makes room for about `ratings` more ratings at once, rather than growing as they
    /// come (a cold read of a batch knows roughly how many there are).
    pub fn reserve(&mut self, ratings: usize) {
        self.entries.reserve(ratings);
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
    pub(super) fn entry(&mut self, row: &RatingFacts) -> Entry {
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
            picks: Box::default(),
            skip_reason: row
                .skip_reason
                .clone()
                .filter(|_| row.outcome == Outcome::Skipped),
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
            // The object an answer at `place` (`a`, `b`, or the top) sits in.
            let holder = |place: Option<&str>| match place {
                Some("a") => &a,
                Some(_) => &b,
                None => &top,
            };
            entry.codes = self
                .questions
                .iter()
                .map(|q| {
                    holder(q.side)
                        .get(q.key.as_str())
                        .map_or(0, |raw| q.code(raw))
                })
                .collect();
            entry.classes = self.classes(top.get("classifications"));
            entry.picks = self
                .several
                .iter()
                .map(|q| q.picks(holder(q.side)))
                .collect();
        }
        entry
    }

    /// The options chosen for each classification question (one, or several).
    pub(super) fn classes(&self, given: Option<&RawValue>) -> Box<[(u16, u16)]> {
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

    pub(super) fn rater(&mut self, name: &str) -> u32 {
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

    pub(super) fn model(&mut self, name: &str) -> u32 {
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
    pub(super) fn change(&mut self, e: &Entry, add: bool) {
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
                    Exclusion::Skipped => {
                        if let Some(reason) = &e.skip_reason {
                            let n = c
                                .skip_reasons
                                .entry(reason.as_str().to_owned())
                                .or_default();
                            count(n, add);
                            if *n == 0 {
                                c.skip_reasons.remove(reason.as_str());
                            }
                        }
                        &mut c.skipped
                    }
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
        for ((q, tally), &picks) in self
            .several
            .iter()
            .zip(&mut self.several_tallies)
            .zip(&e.picks)
        {
            let model = model_of(q.side, self.subject, (model_a, model_b));
            tally.change(picks, q.options.len(), model, add);
        }
        for (qi, by_model) in &mut self.score_models {
            let q = &self.questions[*qi];
            let Some(value) = q.value(e.codes[*qi]) else {
                continue;
            };
            if let Some(model) = model_of(q.side, self.subject, (model_a, model_b)) {
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
    pub(super) fn change_bias(&mut self, e: &Entry, add: bool) {
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
    pub(super) fn change_unit(&mut self, task: u32, add: bool) {
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
}

#[cfg(test)]
mod tests {
    use super::RawMap;

    #[test]
    fn a_raw_map_finds_members_and_keeps_a_repeated_key_last() {
        let text = r#"{"a": {"x": 1}, "sxs": 5, "note": "t\"ext", "sxs": 6}"#;
        let map: RawMap = serde_json::from_str(text).unwrap();
        assert_eq!(map.get("a").map(|v| v.get()), Some(r#"{"x": 1}"#));
        assert_eq!(map.get("note").map(|v| v.get()), Some(r#""t\"ext""#));
        assert_eq!(map.get("sxs").map(|v| v.get()), Some("6"));
        assert!(map.get("b").is_none());
        // Anything but an object is not one.
        assert!(serde_json::from_str::<RawMap>("[1, 2]").is_err());
        assert!(serde_json::from_str::<RawMap>("7").is_err());
    }
}
