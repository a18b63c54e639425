//! Work-quality flags a lead can act on, per rater of a batch: far faster than the
//! batch, and the same explanation written across tasks. (Straight-lining, the third
//! flag, is the metrics' own: [`crate::metrics::bias`] finds it; the app only names the
//! ratings behind it.)

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use unicode_segmentation::UnicodeSegmentation;
use uuid::Uuid;

use crate::metrics::stats;

/// A rater is far faster than the batch when their median active time per rated task is
/// below this share of the batch's median: a third leaves room for a quick, expert
/// rater (who may well take half the time of the batch) while catching one who cannot
/// have read the responses.
pub const FAST_SHARE: f64 = 1.0 / 3.0;

/// The fewest rated tasks a rater is judged fast on: under five, one or two quick tasks
/// (an obvious case) would decide it.
pub const FAST_MIN_RATED: usize = 5;

/// Explanations are compared as sets of runs of this many consecutive words
/// (shingles). Three words is long enough that unrelated explanations about code share
/// almost none ("the function returns" aside), and short enough that a sentence with one
/// word changed still shares most of its runs.
pub const SHINGLE_WORDS: usize = 3;

/// Two explanations are the same text reworded when the Jaccard similarity of their
/// shingle sets is at least this. Changing one word of a sentence of n words removes up
/// to three of its n - 2 shingles and adds as many, so a 12-word sentence with one word
/// swapped scores 7/13 = 0.54 and stays above it, while explanations written for
/// different code, which share a run or two of words, score well under 0.2.
pub const SIMILAR: f64 = 0.5;

/// The fewest of a rater's tasks an explanation (or its rewordings) must appear on to be
/// flagged: once is the task's, twice may be chance on similar tasks, three times is a
/// sentence that says nothing about any one task.
pub const MIN_REPEATS: usize = 3;

/// The longest explanation text compared, in words: a template is short, and this
/// bounds the work on long essays.
const MAX_WORDS: usize = 400;

/// One rated task of a rater, with its active time.
#[derive(Debug, Clone)]
pub struct Timed {
    pub rating_id: Uuid,
    pub rater: String,
    pub time_spent_s: i32,
}

/// A rater far faster than the batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Fast {
    pub rater: String,
    pub median_s: f64,
    /// The rater's rated tasks, quickest first.
    pub ratings: Vec<Uuid>,
}

/// The batch's median active seconds per rated task (every rater's pooled), and the
/// raters whose own median is below [`FAST_SHARE`] of it, with at least
/// [`FAST_MIN_RATED`] rated tasks, by name.
pub fn fast(rated: &[Timed]) -> (Option<f64>, Vec<Fast>) {
    let mut all: Vec<f64> = rated.iter().map(|t| f64::from(t.time_spent_s)).collect();
    let Some(batch) = stats::median(&mut all) else {
        return (None, Vec::new());
    };
    let mut by_rater: BTreeMap<&str, Vec<&Timed>> = BTreeMap::new();
    for t in rated {
        by_rater.entry(&t.rater).or_default().push(t);
    }
    let flagged = by_rater
        .into_iter()
        .filter(|(_, tasks)| tasks.len() >= FAST_MIN_RATED)
        .filter_map(|(rater, mut tasks)| {
            let mut times: Vec<f64> = tasks.iter().map(|t| f64::from(t.time_spent_s)).collect();
            let median = stats::median(&mut times)?;
            (median < batch * FAST_SHARE).then(|| {
                tasks.sort_by_key(|t| (t.time_spent_s, t.rating_id));
                Fast {
                    rater: rater.to_owned(),
                    median_s: median,
                    ratings: tasks.iter().map(|t| t.rating_id).collect(),
                }
            })
        })
        .collect();
    (Some(batch), flagged)
}

/// One rating's explanations.
#[derive(Debug, Clone)]
pub struct Explained {
    pub rating_id: Uuid,
    pub rater: String,
    /// Each explanation the rating holds, as written.
    pub texts: Vec<String>,
}

/// A rater's explanation repeated across their tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Repeated {
    pub rater: String,
    /// The wording they used most often (as written).
    pub example: String,
    /// The ratings holding it or a rewording of it, in the order given.
    pub ratings: Vec<Uuid>,
}

/// The words of a text, lower-cased, punctuation aside.
fn words(text: &str) -> Vec<String> {
    text.unicode_words()
        .take(MAX_WORDS)
        .map(str::to_lowercase)
        .collect()
}

/// The text's shingles: runs of [`SHINGLE_WORDS`] words; a shorter text is one shingle.
fn shingles(words: &[String]) -> HashSet<String> {
    if words.len() <= SHINGLE_WORDS {
        return HashSet::from([words.join(" ")]);
    }
    words
        .windows(SHINGLE_WORDS)
        .map(|run| run.join(" "))
        .collect()
}

/// Finds the set a text belongs to (union-find, with path halving).
fn root(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Per rater, the explanations that recur, reworded or not, on at least
/// [`MIN_REPEATS`] of their ratings; by rater, then by how many ratings.
///
/// Similarity is the exact Jaccard similarity of shingle sets: each text is compared
/// only with the texts that share a shingle with it (found through an index of
/// shingles), and the pairs at least [`SIMILAR`] join one group (transitively). Two
/// raters writing alike are never compared: the flag is about one rater's own tasks.
pub fn repeated(explained: &[Explained]) -> Vec<Repeated> {
    let mut by_rater: BTreeMap<&str, Vec<&Explained>> = BTreeMap::new();
    for e in explained {
        by_rater.entry(&e.rater).or_default().push(e);
    }
    let mut out = Vec::new();
    for (rater, ratings) in by_rater {
        // Distinct wordings (by their words), each with the ratings that hold it and how
        // it was first written.
        let mut index: HashMap<Vec<String>, usize> = HashMap::new();
        let mut texts: Vec<(&str, Vec<usize>)> = Vec::new();
        for (r, rating) in ratings.iter().enumerate() {
            for text in &rating.texts {
                let key = words(text);
                if key.is_empty() {
                    continue;
                }
                let i = *index.entry(key).or_insert_with(|| {
                    texts.push((text.trim(), Vec::new()));
                    texts.len() - 1
                });
                texts[i].1.push(r);
            }
        }
        let mut keys: Vec<(Vec<String>, usize)> = index.into_iter().collect();
        keys.sort_by_key(|(_, i)| *i);
        let sets: Vec<HashSet<String>> = keys.iter().map(|(w, _)| shingles(w)).collect();
        let mut parent: Vec<usize> = (0..sets.len()).collect();
        let mut holders: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, set) in sets.iter().enumerate() {
            let mut shared: HashMap<usize, usize> = HashMap::new();
            for shingle in set {
                let seen = holders.entry(shingle).or_default();
                for &j in seen.iter() {
                    *shared.entry(j).or_default() += 1;
                }
                seen.push(i);
            }
            for (j, common) in shared {
                let union = set.len() + sets[j].len() - common;
                if common as f64 >= SIMILAR * union as f64 {
                    let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                    parent[a] = b;
                }
            }
        }
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for i in 0..sets.len() {
            groups.entry(root(&mut parent, i)).or_default().push(i);
        }
        let mut found: Vec<Repeated> = groups
            .into_values()
            .filter_map(|members| {
                let held: BTreeSet<usize> = members
                    .iter()
                    .flat_map(|&m| texts[m].1.iter().copied())
                    .collect();
                if held.len() < MIN_REPEATS {
                    return None;
                }
                let most = members
                    .iter()
                    .max_by_key(|&&m| (texts[m].1.len(), std::cmp::Reverse(m)))?;
                Some(Repeated {
                    rater: rater.to_owned(),
                    example: texts[*most].0.to_owned(),
                    ratings: held.into_iter().map(|r| ratings[r].rating_id).collect(),
                })
            })
            .collect();
        found.sort_by_key(|r| std::cmp::Reverse(r.ratings.len()));
        out.extend(found);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(rater: &str, s: i32) -> Timed {
        Timed {
            rating_id: Uuid::now_v7(),
            rater: rater.into(),
            time_spent_s: s,
        }
    }

    #[test]
    fn a_rater_far_below_the_batch_median_is_fast() {
        let mut rated: Vec<Timed> = (0..6).map(|_| timed("ana", 300)).collect();
        rated.extend((0..6).map(|i| timed("bo", 240 + i)));
        rated.extend((0..5).map(|i| timed("cy", 20 + i)));
        // Four quick tasks are too few to judge.
        rated.extend((0..4).map(|_| timed("di", 5)));
        let (median, flags) = fast(&rated);
        // 21 times: four 5s, 20..=24, 240..=245, six 300s; the 11th is 241.
        assert_eq!(median, Some(241.0));
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!((flags[0].rater.as_str(), flags[0].median_s), ("cy", 22.0));
        assert_eq!(flags[0].ratings.len(), 5);
        assert_eq!(flags[0].ratings[0], rated[12].rating_id, "quickest first");
        assert_eq!(fast(&[]), (None, vec![]));
    }

    fn explained(rater: &str, texts: &[&str]) -> Explained {
        Explained {
            rating_id: Uuid::now_v7(),
            rater: rater.into(),
            texts: texts.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    #[test]
    fn one_generic_sentence_across_tasks_is_flagged() {
        let ratings = vec![
            explained(
                "ana",
                &["Response A is better.", "B misses the edge case n = 0."],
            ),
            explained("ana", &["response a is better"]),
            explained("ana", &["Response A is better!", ""]),
            explained(
                "ana",
                &["A sorts in place and returns None; B returns a copy."],
            ),
            // Another rater writing the same is not ana's repetition.
            explained("bo", &["Response A is better."]),
            explained("bo", &["Response A is better."]),
        ];
        let flags = repeated(&ratings);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].rater, "ana");
        assert_eq!(flags[0].example, "Response A is better.");
        let ids: Vec<Uuid> = ratings[..3].iter().map(|r| r.rating_id).collect();
        assert_eq!(flags[0].ratings, ids);
    }

    #[test]
    fn rewordings_join_and_distinct_explanations_do_not() {
        let template = "The answer handles the empty list and returns the sorted values as asked";
        let ratings = vec![
            explained("ana", &[template]),
            explained(
                "ana",
                &["The answer handles the empty list and returns the sorted keys as asked"],
            ),
            explained(
                "ana",
                &["The answer handles the empty input and returns the sorted values as asked"],
            ),
        ];
        let flags = repeated(&ratings);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].ratings.len(), 3);
        let careful = vec![
            explained(
                "bo",
                &["A uses a set, so duplicates vanish; the prompt keeps them."],
            ),
            explained(
                "bo",
                &["B's regex misses a trailing newline in the last line."],
            ),
            explained(
                "bo",
                &["Both recurse without a base case for n = 1 and overflow."],
            ),
            explained("bo", &["A reads the whole file into memory; B streams it."]),
        ];
        assert_eq!(repeated(&careful), vec![]);
    }
}
