//! Bradley-Terry ranking of models from pairwise preferences, with 95% intervals.
//!
//! The model: model i beats model j with probability `p_i / (p_i + p_j)`. Strengths are
//! fitted by maximum likelihood with the minorisation-maximisation iteration of Hunter
//! (2004) on the win counts (a tie is half a win each way). Intervals come from the
//! Fisher information of the log-strengths, which sum to zero.
//!
//! The prior: a batch's setting `bradley_terry_prior` (by default [`DEFAULT_PRIOR`],
//! half a win) adds that many pseudo-wins each way to every pair of models that was
//! compared. Without it, a model that never loses has an infinite strength (the
//! likelihood keeps growing as its strength does), and so does every figure of a small
//! batch where that happens by chance. The prior pulls each pair's share of wins a little
//! towards an even split, which keeps every strength finite.
//!
//! With the prior at 0 the fit is the plain maximum-likelihood one, which exists only
//! under Ford's condition (1957): however the models are split into two groups, some
//! model in each group beat (or tied) one in the other. When it fails, no ranking is
//! given: [`Ranking::unavailable`] says why. With any prior the compared models must
//! still be connected (not two groups never compared with each other), else their
//! strengths could not be put on one scale.

use serde::Serialize;

use super::stats::Z95;

/// Pseudo-wins added each way to every pair that was compared, unless the batch sets
/// another prior.
pub const DEFAULT_PRIOR: f64 = 0.5;

/// The largest prior a batch may set: beyond it the prior would outweigh any batch's
/// real comparisons.
pub const MAX_PRIOR: f64 = 1000.0;

/// Why a prior cannot be used: its message names what it must be.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("must be a number from 0 to {MAX_PRIOR} (0: the plain maximum-likelihood fit)")]
pub struct BadPrior;

/// Checks a batch's prior: a finite number from 0 to [`MAX_PRIOR`].
pub fn check_prior(prior: f64) -> Result<f64, BadPrior> {
    if prior.is_finite() && (0.0..=MAX_PRIOR).contains(&prior) {
        Ok(prior)
    } else {
        Err(BadPrior)
    }
}

/// A ranking of the models, with the prior it was fitted with.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Ranking {
    /// Pseudo-wins added each way to every pair of models that was compared (the
    /// batch's `bradley_terry_prior`; 0: the plain maximum-likelihood fit).
    pub prior: f64,
    /// Best first; empty when the fit has no finite solution (see `unavailable`).
    pub models: Vec<Ranked>,
    /// Why `models` is empty, when it is: without a prior, a group of models that never
    /// lost (nor tied) against the others; or groups of models never compared with each
    /// other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Ranked {
    pub model: String,
    /// Log-strength; the strengths of all models sum to zero on this scale.
    pub strength: f64,
    pub low: f64,
    pub high: f64,
    /// Comparisons this model took part in.
    pub comparisons: f64,
}

/// Ranks `models` from `wins[i][j]`, the (fractional) wins of model i over model j, with
/// `prior` pseudo-wins each way per compared pair (see the module's notes). Best first.
/// Models never compared are left out; fewer than two compared models rank nothing.
pub fn rank(models: &[String], wins: &[Vec<f64>], prior: f64) -> Ranking {
    let ranking = |models, unavailable| Ranking {
        prior,
        models,
        unavailable,
    };
    let compared: Vec<usize> = (0..models.len())
        .filter(|&i| (0..models.len()).any(|j| wins[i][j] + wins[j][i] > 0.0))
        .collect();
    let k = compared.len();
    if k < 2 {
        return ranking(vec![], None);
    }
    let names = |group: &[usize]| {
        group
            .iter()
            .map(|&a| models[compared[a]].as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let played = |a: usize, b: usize| {
        let (i, j) = (compared[a], compared[b]);
        wins[i][j] + wins[j][i] > 0.0
    };
    if let Some(apart) = closed_group(k, played) {
        let why = format!(
            "{} were never compared with the other models, so no scale holds them all",
            names(&apart)
        );
        return ranking(vec![], Some(why));
    }
    if prior == 0.0 {
        // Ford's condition: every model reaches every other by a chain of wins, that is,
        // no group of models never lost to the others.
        let beat = |a: usize, b: usize| wins[compared[a]][compared[b]] > 0.0;
        if let Some(unbeaten) = closed_group(k, |a, b| beat(b, a)) {
            let why = format!(
                "{} never lost (nor tied) to the other models, so without a prior their \
                 strengths would be infinite; a prior above 0 (a batch setting) gives a \
                 ranking",
                names(&unbeaten)
            );
            return ranking(vec![], Some(why));
        }
    }
    let w = |a: usize, b: usize| {
        let (i, j) = (compared[a], compared[b]);
        let n = wins[i][j] + wins[j][i];
        if n > 0.0 { wins[i][j] + prior } else { 0.0 }
    };
    let games = |a: usize, b: usize| w(a, b) + w(b, a);
    let mut p = vec![1.0f64; k];
    for _ in 0..10_000 {
        let mut next = vec![0.0; k];
        for a in 0..k {
            let won: f64 = (0..k).filter(|&b| b != a).map(|b| w(a, b)).sum();
            let denom: f64 = (0..k)
                .filter(|&b| b != a)
                .map(|b| games(a, b) / (p[a] + p[b]))
                .sum();
            next[a] = if denom > 0.0 { won / denom } else { p[a] };
        }
        let log_mean = next.iter().map(|v| v.ln()).sum::<f64>() / k as f64;
        next.iter_mut().for_each(|v| *v /= log_mean.exp());
        let change = next
            .iter()
            .zip(&p)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        p = next;
        if change < 1e-12 {
            break;
        }
    }
    // Fisher information of the log-strengths, shifted: a Laplacian L, singular along
    // (1, ..., 1), plus J/k, whose inverse less J/k is L's pseudo-inverse.
    let shifted_information = |p: &[f64]| {
        let mut info = vec![vec![1.0 / k as f64; k]; k];
        for a in 0..k {
            for b in (0..k).filter(|&b| b != a) {
                let q = p[a] / (p[a] + p[b]);
                let v = games(a, b) * q * (1.0 - q);
                info[a][b] -= v;
                info[a][a] += v;
            }
        }
        invert(info)
    };
    let inverse = shifted_information(&p);
    let mut ranked: Vec<Ranked> = (0..k)
        .map(|a| {
            let strength = p[a].ln();
            let var = inverse
                .as_ref()
                .map_or(f64::NAN, |m| m[a][a] - 1.0 / k as f64);
            let half = Z95 * var.max(0.0).sqrt();
            let comparisons = (0..models.len())
                .map(|j| wins[compared[a]][j] + wins[j][compared[a]])
                .sum();
            Ranked {
                model: models[compared[a]].clone(),
                strength,
                low: strength - half,
                high: strength + half,
                comparisons,
            }
        })
        .collect();
    ranked.sort_by(|x, y| y.strength.total_cmp(&x.strength));
    ranking(ranked, None)
}

/// A group of the nodes `0..k` with no `edge(from, to)` leaving it, if any (short of
/// them all): `None` when every node reaches every other. For a symmetric `edge` this is
/// a part of a graph that is not connected; for `edge(a, b)` = "a lost to b", a group
/// that never lost to the others.
fn closed_group(k: usize, edge: impl Fn(usize, usize) -> bool) -> Option<Vec<usize>> {
    let reach = |forward: bool| {
        let mut seen = vec![false; k];
        seen[0] = true;
        let mut stack = vec![0];
        while let Some(a) = stack.pop() {
            for (b, seen) in seen.iter_mut().enumerate() {
                let linked = if forward { edge(a, b) } else { edge(b, a) };
                if !*seen && linked {
                    *seen = true;
                    stack.push(b);
                }
            }
        }
        seen
    };
    // What node 0 reaches has no edge out of it; what cannot reach node 0 neither.
    let reached = reach(true);
    if reached.contains(&false) {
        return Some((0..k).filter(|&a| reached[a]).collect());
    }
    let reaching = reach(false);
    reaching
        .contains(&false)
        .then(|| (0..k).filter(|&a| !reaching[a]).collect())
}

/// Gauss-Jordan inversion with partial pivoting; `None` for a singular matrix.
fn invert(mut m: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let n = m.len();
    let mut inv: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        inv.swap(col, pivot);
        let d = m[col][col];
        for j in 0..n {
            m[col][j] /= d;
            inv[col][j] /= d;
        }
        for row in 0..n {
            if row != col {
                let f = m[row][col];
                for j in 0..n {
                    m[row][j] -= f * m[col][j];
                    inv[row][j] -= f * inv[col][j];
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("m{i}")).collect()
    }

    #[test]
    fn a_consistent_order_is_recovered_with_intervals() {
        // m0 beats m1 beats m2, each 30 to 10; m0 beats m2 36 to 4.
        let wins = vec![
            vec![0.0, 30.0, 36.0],
            vec![10.0, 0.0, 30.0],
            vec![4.0, 10.0, 0.0],
        ];
        let ranking = rank(&names(3), &wins, DEFAULT_PRIOR);
        assert_eq!((ranking.prior, ranking.unavailable), (0.5, None));
        let ranked = ranking.models;
        let order: Vec<&str> = ranked.iter().map(|r| r.model.as_str()).collect();
        assert_eq!(order, ["m0", "m1", "m2"]);
        let sum: f64 = ranked.iter().map(|r| r.strength).sum();
        assert!(sum.abs() < 1e-9, "strengths sum to zero: {sum}");
        for r in &ranked {
            assert!(r.low < r.strength && r.strength < r.high, "{r:?}");
        }
        assert_eq!(ranked[0].comparisons, 80.0);
    }

    #[test]
    fn two_equal_models_tie_and_an_unbeaten_one_stays_finite_with_a_prior() {
        let even = rank(&names(2), &[vec![0.0, 10.0], vec![10.0, 0.0]], 0.0).models;
        assert!(even[0].strength.abs() < 1e-9 && even[1].strength.abs() < 1e-9);
        let unbeaten = [vec![0.0, 10.0], vec![0.0, 0.0]];
        let with_prior = rank(&names(2), &unbeaten, DEFAULT_PRIOR).models;
        assert!(with_prior[0].strength.is_finite() && with_prior[0].strength > 1.0);
        let plain = rank(&names(2), &unbeaten, 0.0);
        assert!(plain.models.is_empty());
        let why = plain.unavailable.unwrap();
        assert!(why.contains("m0 never"), "{why}");
    }

    #[test]
    fn models_never_compared_with_the_others_rank_nothing_with_any_prior() {
        let wins = [
            vec![0.0, 3.0, 0.0, 0.0],
            vec![2.0, 0.0, 0.0, 0.0],
            vec![0.0, 0.0, 0.0, 5.0],
            vec![0.0, 0.0, 1.0, 0.0],
        ];
        for prior in [0.0, DEFAULT_PRIOR] {
            let ranking = rank(&names(4), &wins, prior);
            assert!(ranking.models.is_empty());
            let why = ranking.unavailable.unwrap();
            assert!(why.starts_with("m0, m1 were never compared"), "{why}");
        }
    }

    #[test]
    fn fewer_than_two_compared_models_rank_nothing() {
        let ranking = rank(&names(3), &[vec![0.0; 3], vec![0.0; 3], vec![0.0; 3]], 0.5);
        assert!(ranking.models.is_empty() && ranking.unavailable.is_none());
    }

    #[test]
    fn a_prior_is_a_finite_number_from_zero_to_the_most() {
        assert_eq!(check_prior(0.0), Ok(0.0));
        assert_eq!(check_prior(DEFAULT_PRIOR), Ok(0.5));
        assert_eq!(check_prior(MAX_PRIOR), Ok(MAX_PRIOR));
        for bad in [-0.1, MAX_PRIOR + 1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(check_prior(bad), Err(BadPrior), "{bad}");
        }
    }
}

/// Reference rankings from a logistic regression fitted by statsmodels;
/// `tests/fixtures/bradley_terry/generate.py` makes them.
#[cfg(test)]
mod reference {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Case {
        name: String,
        models: Vec<String>,
        wins: Vec<Vec<f64>>,
        prior: f64,
        /// Best first; `null` when there is no finite fit.
        ranking: Option<Vec<Expected>>,
    }

    #[derive(serde::Deserialize)]
    struct Expected {
        model: String,
        strength: f64,
        low: f64,
        high: f64,
        comparisons: f64,
    }

    #[test]
    fn every_ranking_matches_statsmodels_to_1e_9() {
        let cases: Vec<Case> = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/bradley_terry/fixtures.json"
        ))
        .expect("fixtures");
        assert!(cases.len() >= 30, "{} cases", cases.len());
        let mut worst = 0.0f64;
        for case in &cases {
            let got = rank(&case.models, &case.wins, case.prior);
            assert_eq!(got.prior, case.prior);
            let Some(expected) = &case.ranking else {
                assert!(got.models.is_empty(), "{}: {:?}", case.name, got.models);
                assert!(got.unavailable.is_some(), "{}", case.name);
                continue;
            };
            assert!(got.unavailable.is_none(), "{}: {got:?}", case.name);
            assert_eq!(got.models.len(), expected.len(), "{}", case.name);
            for w in expected {
                let g = got.models.iter().find(|g| g.model == w.model).unwrap();
                for (what, x, y) in [
                    ("strength", g.strength, w.strength),
                    ("low", g.low, w.low),
                    ("high", g.high, w.high),
                ] {
                    worst = worst.max((x - y).abs());
                    let at = format!("{} {} {what}", case.name, w.model);
                    assert!((x - y).abs() < 1e-9, "{at}: {x} vs {y}");
                }
                assert_eq!(g.comparisons, w.comparisons, "{}", case.name);
            }
            assert!(got.models.is_sorted_by(|x, y| x.strength >= y.strength));
        }
        eprintln!("largest difference to statsmodels: {worst:e}");
    }
}
