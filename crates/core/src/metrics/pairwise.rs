//! Agreement between two raters on the same items: how closely an LLM judge agrees with
//! the human raters, from one (judge, human) pair of answers per item.
//!
//! Each statistic gives the number its usual reference gives (scikit-learn's
//! `cohen_kappa_score`, scipy's `spearmanr`), undefined cases included (`nan` there,
//! `None` here), so that a figure in the metrics can be reproduced in a notebook.
//! `tests/fixtures/pairwise/generate.py` computes the reference values the tests check.
//!
//! Answers are integer codes. Kappa only asks whether two codes are equal (or, weighted,
//! how many labels lie between them); Spearman only uses their order.

use serde::Serialize;

/// How a weighted kappa charges a disagreement, by how many labels lie between the two
/// answers (`i` and `j` are positions in the sorted labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// `|i - j|`.
    Linear,
    /// `(i - j)^2`: near misses cost little and far ones a lot, the usual choice for a
    /// scale, where it behaves much like a correlation.
    Quadratic,
}

/// How far the judge agrees with the humans on one question.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PairAgreement {
    /// Pairs of answers (items answered by both).
    pub n: usize,
    /// Share of pairs with equal answers.
    pub agreement: Option<f64>,
    /// The same over pairs where neither answer is the tie; `None` when the question has
    /// no tie value. Ties are common and easy to agree on, so they can hide disagreement
    /// on which response is better.
    pub agreement_without_ties: Option<f64>,
    /// Cohen's kappa: agreement corrected for what the two raters' answer shares would
    /// give by chance. `None` when undefined.
    pub cohen_kappa: Option<f64>,
    /// Quadratically weighted kappa, which gives credit for near misses; only for
    /// questions whose answers are ordered.
    pub weighted_kappa: Option<f64>,
    /// Spearman's rank correlation; only for questions whose answers are ordered.
    pub spearman: Option<f64>,
}

/// Every statistic for one question: `tie` is its tie value if it has one, and `ordered`
/// says whether its answers form a scale (only then are weighted kappa and Spearman
/// meaningful).
pub fn pair_agreement(pairs: &[(i64, i64)], tie: Option<i64>, ordered: bool) -> PairAgreement {
    PairAgreement {
        n: pairs.len(),
        agreement: percent_agreement(pairs),
        agreement_without_ties: tie.and_then(|tie| percent_agreement_without_ties(pairs, tie)),
        cohen_kappa: cohen_kappa(pairs),
        weighted_kappa: if ordered {
            weighted_kappa(pairs, Weights::Quadratic)
        } else {
            None
        },
        spearman: if ordered { spearman(pairs) } else { None },
    }
}

/// Share of pairs whose two answers are equal; `None` without pairs.
pub fn percent_agreement(pairs: &[(i64, i64)]) -> Option<f64> {
    share_equal(pairs.iter())
}

/// Percent agreement over the pairs where neither answer is `tie`; `None` when no such
/// pair is left. A pair where only one rater chose the tie is left out too: it says the
/// raters disagree on whether there is a difference, not on which side is better.
pub fn percent_agreement_without_ties(pairs: &[(i64, i64)], tie: i64) -> Option<f64> {
    share_equal(
        pairs
            .iter()
            .filter(|&&(judge, human)| judge != tie && human != tie),
    )
}

fn share_equal<'a>(pairs: impl Iterator<Item = &'a (i64, i64)>) -> Option<f64> {
    let (mut n, mut equal) = (0u64, 0u64);
    for &(judge, human) in pairs {
        n += 1;
        equal += u64::from(judge == human);
    }
    (n > 0).then(|| equal as f64 / n as f64)
}

/// Cohen's kappa, as `sklearn.metrics.cohen_kappa_score(judge, human)`. `None` when
/// undefined: without pairs, or when chance alone gives full agreement (both raters
/// always give the same one answer), where sklearn returns `nan`.
pub fn cohen_kappa(pairs: &[(i64, i64)]) -> Option<f64> {
    kappa(pairs, |i, j| if i == j { 0.0 } else { 1.0 })
}

/// Weighted kappa, as `cohen_kappa_score(judge, human, weights="linear" | "quadratic")`;
/// `None` exactly when [`cohen_kappa`] is.
///
/// Like sklearn without `labels`, the weights are distances between *positions* in the
/// sorted union of the answers seen, not between the codes: on a 1..7 scale where only 1,
/// 4 and 7 occur, 1 and 7 are two labels apart, not six. So the figure depends on which
/// answers occur; it follows sklearn all the same, so that it can be checked there.
pub fn weighted_kappa(pairs: &[(i64, i64)], weights: Weights) -> Option<f64> {
    match weights {
        Weights::Linear => kappa(pairs, |i, j| i.abs_diff(j) as f64),
        Weights::Quadratic => kappa(pairs, |i, j| {
            let d = i.abs_diff(j) as f64;
            d * d
        }),
    }
}

/// `1 - sum(w * observed) / sum(w * expected)`, sklearn's formula, where `expected` is
/// what the two raters' answer counts give if they answered independently and `w(i, j)`
/// weighs label positions `i` and `j` (zero only when `i == j`).
///
/// Both sums are kept scaled by the number of pairs, so that they are sums of whole
/// numbers: exact in f64 up to 2^53, so that only the last division and subtraction
/// round. The expected sum is then zero exactly when both raters always give one and the
/// same answer, sklearn's undefined case.
fn kappa(pairs: &[(i64, i64)], weight: impl Fn(usize, usize) -> f64) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let mut labels: Vec<i64> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
    labels.sort_unstable();
    labels.dedup();
    let position = |v: i64| labels.binary_search(&v).expect("every answer is a label");
    let mut judge = vec![0u64; labels.len()];
    let mut human = vec![0u64; labels.len()];
    let mut observed = 0.0;
    for &(a, b) in pairs {
        let (i, j) = (position(a), position(b));
        judge[i] += 1;
        human[j] += 1;
        observed += weight(i, j);
    }
    let mut expected = 0.0;
    for (i, &r) in judge.iter().enumerate().filter(|(_, r)| **r > 0) {
        for (j, &c) in human.iter().enumerate().filter(|(_, c)| **c > 0) {
            expected += weight(i, j) * (r as f64 * c as f64);
        }
    }
    if expected == 0.0 {
        return None;
    }
    Some(1.0 - observed * pairs.len() as f64 / expected)
}

/// Spearman's rank correlation, as `scipy.stats.spearmanr(judge, human).statistic`: the
/// Pearson correlation of the ranks, tied answers sharing their average rank. `None` with
/// fewer than two pairs or when either rater always gives the same answer (scipy's
/// `nan`).
pub fn spearman(pairs: &[(i64, i64)]) -> Option<f64> {
    let n = pairs.len();
    if n < 2 {
        return None;
    }
    let x = ranks(pairs.iter().map(|p| p.0));
    let y = ranks(pairs.iter().map(|p| p.1));
    // Average ranks always add up to n(n + 1)/2, so the mean is exactly (n + 1)/2. Ranks
    // are halves and so are their deviations from it: the three sums below are exact.
    let mean = (n as f64 + 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (rx, ry) in x.iter().zip(&y) {
        let (dx, dy) = (rx - mean, ry - mean);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    // A constant side has every rank equal to the mean, and only then a zero sum.
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    // One square root of the product, not a product of two: when the ranks agree (or are
    // reversed) exactly, sqrt(sxx * sxx) is sxx itself and the result exactly 1 (or -1).
    Some((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// Ranks from 1, equal values sharing the average of the ranks they span.
fn ranks(values: impl Iterator<Item = i64>) -> Vec<f64> {
    let values: Vec<i64> = values.collect();
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&i| values[i]);
    let mut ranks = vec![0.0; values.len()];
    let mut before = 0;
    for run in order.chunk_by(|&a, &b| values[a] == values[b]) {
        // The run spans ranks before + 1 ..= before + len.
        let rank = (2 * before + run.len() + 1) as f64 / 2.0;
        for &i in run {
            ranks[i] = rank;
        }
        before += run.len();
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` copies of each pair.
    fn repeat(table: &[((i64, i64), usize)]) -> Vec<(i64, i64)> {
        table
            .iter()
            .flat_map(|&(pair, count)| std::iter::repeat_n(pair, count))
            .collect()
    }

    #[test]
    fn perfect_agreement_is_one_everywhere() {
        let pairs = [(1, 1), (2, 2), (3, 3), (2, 2), (5, 5)];
        assert_eq!(
            pair_agreement(&pairs, Some(3), true),
            PairAgreement {
                n: 5,
                agreement: Some(1.0),
                agreement_without_ties: Some(1.0),
                cohen_kappa: Some(1.0),
                weighted_kappa: Some(1.0),
                spearman: Some(1.0),
            }
        );
    }

    #[test]
    fn no_pairs_gives_nothing() {
        assert_eq!(
            pair_agreement(&[], Some(0), true),
            PairAgreement {
                n: 0,
                agreement: None,
                agreement_without_ties: None,
                cohen_kappa: None,
                weighted_kappa: None,
                spearman: None,
            }
        );
    }

    #[test]
    fn one_shared_answer_leaves_kappa_and_spearman_undefined() {
        let pairs = [(4, 4); 6];
        assert_eq!(percent_agreement(&pairs), Some(1.0));
        assert_eq!(cohen_kappa(&pairs), None, "chance agreement is 1");
        assert_eq!(weighted_kappa(&pairs, Weights::Linear), None);
        assert_eq!(weighted_kappa(&pairs, Weights::Quadratic), None);
        assert_eq!(spearman(&pairs), None, "both sides constant");
    }

    #[test]
    fn constant_but_different_raters_have_kappa_zero() {
        let pairs = [(1, 2); 4];
        assert_eq!(percent_agreement(&pairs), Some(0.0));
        assert_eq!(cohen_kappa(&pairs), Some(0.0));
        assert_eq!(spearman(&pairs), None);
    }

    #[test]
    fn kappa_of_a_textbook_table() {
        // Judge yes: 20 with human yes, 5 with no; judge no: 10 with yes, 15 with no.
        // p_o = 35/50 = 0.7, p_e = (25 * 30 + 25 * 20) / 50^2 = 0.5, kappa = 0.2/0.5.
        let pairs = repeat(&[((1, 1), 20), ((1, 0), 5), ((0, 1), 10), ((0, 0), 15)]);
        assert_eq!(percent_agreement(&pairs), Some(0.7));
        assert!((cohen_kappa(&pairs).unwrap() - 0.4).abs() < 1e-15);
        // Two labels: every weighting is the same.
        assert_eq!(
            weighted_kappa(&pairs, Weights::Quadratic),
            cohen_kappa(&pairs)
        );
    }

    #[test]
    fn always_disagreeing_on_two_labels_is_minus_one() {
        let pairs = [(0, 1), (1, 0), (0, 1), (1, 0)];
        assert_eq!(percent_agreement(&pairs), Some(0.0));
        assert_eq!(cohen_kappa(&pairs), Some(-1.0));
        assert_eq!(spearman(&pairs), Some(-1.0));
    }

    #[test]
    fn weights_count_label_positions_not_codes() {
        let wide = [(1, 1), (7, 7), (1, 7), (7, 1), (4, 4), (4, 7)];
        let narrow = [(1, 1), (3, 3), (1, 3), (3, 1), (2, 2), (2, 3)];
        for weights in [Weights::Linear, Weights::Quadratic] {
            assert_eq!(
                weighted_kappa(&wide, weights),
                weighted_kappa(&narrow, weights)
            );
        }
    }

    #[test]
    fn near_misses_cost_less_with_quadratic_weights() {
        let pairs = [(1, 2), (2, 3), (3, 3), (4, 5), (5, 5), (1, 1)];
        let plain = cohen_kappa(&pairs).unwrap();
        let linear = weighted_kappa(&pairs, Weights::Linear).unwrap();
        let quadratic = weighted_kappa(&pairs, Weights::Quadratic).unwrap();
        assert!(
            plain < linear && linear < quadratic,
            "{plain} {linear} {quadratic}"
        );
    }

    #[test]
    fn ties_are_left_out_on_either_side() {
        // Tie 0: (0, 0), (0, 1) and (-1, 0) go; of (1, 1), (-1, -1), (1, -1) two agree.
        let pairs = [(0, 0), (0, 1), (-1, 0), (1, 1), (-1, -1), (1, -1)];
        assert_eq!(percent_agreement(&pairs), Some(0.5));
        assert_eq!(percent_agreement_without_ties(&pairs, 0), Some(2.0 / 3.0));
        assert_eq!(percent_agreement_without_ties(&[(0, 0), (0, 1)], 0), None);
    }

    #[test]
    fn spearman_gives_tied_answers_their_average_rank() {
        // Judge ranks 1, 2.5, 2.5, 4 against 1, 2, 3, 4: 4.5 / sqrt(4.5 * 5) = sqrt(0.9).
        let pairs = [(1, 1), (2, 2), (2, 3), (3, 4)];
        assert!((spearman(&pairs).unwrap() - 0.9f64.sqrt()).abs() < 1e-15);
        assert_eq!(
            ranks([5, 1, 5, 5, 2].into_iter()),
            [4.0, 1.0, 4.0, 4.0, 2.0]
        );
    }

    #[test]
    fn spearman_needs_two_pairs_and_variation_on_both_sides() {
        assert_eq!(spearman(&[(1, 2)]), None);
        assert_eq!(spearman(&[(1, 1), (1, 2), (1, 3)]), None);
        assert_eq!(spearman(&[(3, 1), (2, 2), (1, 3)]), Some(-1.0));
    }

    #[test]
    fn unordered_questions_without_ties_leave_those_figures_out() {
        let a = pair_agreement(&[(1, 1), (2, 3), (3, 3)], None, false);
        assert_eq!(
            (a.agreement_without_ties, a.weighted_kappa, a.spearman),
            (None, None, None)
        );
        assert!(a.cohen_kappa.is_some());
    }
}

/// Reference values from scikit-learn (`cohen_kappa_score`) and scipy (`spearmanr`);
/// `tests/fixtures/pairwise/generate.py` makes them.
#[cfg(test)]
mod reference {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Case {
        name: String,
        /// `[judge, human]` per item.
        pairs: Vec<(i64, i64)>,
        /// `null` where the library gives `nan`.
        cohen_kappa: Option<f64>,
        linear_kappa: Option<f64>,
        quadratic_kappa: Option<f64>,
        spearman: Option<f64>,
    }

    fn cases() -> Vec<Case> {
        serde_json::from_str(include_str!(
            "../../../../tests/fixtures/pairwise/fixtures.json"
        ))
        .expect("fixtures")
    }

    fn assert_close(case: &str, what: &str, got: Option<f64>, want: Option<f64>) {
        match (got, want) {
            (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{case} {what}: {g} vs {w}"),
            (None, None) => {}
            _ => panic!("{case} {what}: {got:?} vs {want:?}"),
        }
    }

    #[test]
    fn every_statistic_matches_sklearn_and_scipy_to_1e_9() {
        let cases = cases();
        assert!(cases.len() >= 35, "{} cases", cases.len());
        assert!(cases.iter().any(|c| c.cohen_kappa.is_none()));
        for case in &cases {
            let (name, pairs) = (case.name.as_str(), case.pairs.as_slice());
            assert_close(name, "kappa", cohen_kappa(pairs), case.cohen_kappa);
            assert_close(
                name,
                "linear",
                weighted_kappa(pairs, Weights::Linear),
                case.linear_kappa,
            );
            assert_close(
                name,
                "quadratic",
                weighted_kappa(pairs, Weights::Quadratic),
                case.quadratic_kappa,
            );
            assert_close(name, "spearman", spearman(pairs), case.spearman);
        }
    }
}
