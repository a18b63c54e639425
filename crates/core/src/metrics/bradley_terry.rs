//! Bradley-Terry ranking of models from pairwise preferences, with 95% intervals.
//!
//! Strengths are fitted by the minorisation-maximisation iteration (Hunter, 2004) on the
//! win counts (a tie is half a win each way), with a small pseudo-count on each compared
//! pair so that a model that never loses still has a finite strength. Intervals come from
//! the Fisher information of the log-strengths, which sum to zero.

use serde::Serialize;

use super::stats::Z95;

/// Pseudo-wins added each way to every pair that was compared.
const PRIOR: f64 = 0.5;

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

/// Ranks `models` from `wins[i][j]`, the (fractional) wins of model i over model j.
/// Best first. Models never compared are left out.
pub fn rank(models: &[String], wins: &[Vec<f64>]) -> Vec<Ranked> {
    let compared: Vec<usize> = (0..models.len())
        .filter(|&i| (0..models.len()).any(|j| wins[i][j] + wins[j][i] > 0.0))
        .collect();
    let k = compared.len();
    if k < 2 {
        return vec![];
    }
    let w = |a: usize, b: usize| {
        let (i, j) = (compared[a], compared[b]);
        let n = wins[i][j] + wins[j][i];
        if n > 0.0 { wins[i][j] + PRIOR } else { 0.0 }
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
    // Fisher information of the log-strengths: a Laplacian, singular along (1, ..., 1).
    let mut info = vec![vec![0.0f64; k]; k];
    for a in 0..k {
        for b in 0..k {
            if a != b {
                let q = p[a] / (p[a] + p[b]);
                let v = games(a, b) * q * (1.0 - q);
                info[a][b] -= v;
                info[a][a] += v;
            }
        }
    }
    // Its pseudo-inverse: (L + J/k)^-1 - J/k.
    let shifted: Vec<Vec<f64>> = info
        .iter()
        .map(|row| row.iter().map(|v| v + 1.0 / k as f64).collect())
        .collect();
    let inverse = invert(shifted);
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
    ranked
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
        let ranked = rank(&names(3), &wins);
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
    fn two_equal_models_tie_and_an_unbeaten_one_stays_finite() {
        let even = rank(&names(2), &[vec![0.0, 10.0], vec![10.0, 0.0]]);
        assert!(even[0].strength.abs() < 1e-9 && even[1].strength.abs() < 1e-9);
        let unbeaten = rank(&names(2), &[vec![0.0, 10.0], vec![0.0, 0.0]]);
        assert!(unbeaten[0].strength.is_finite() && unbeaten[0].strength > 1.0);
    }

    #[test]
    fn fewer_than_two_compared_models_rank_nothing() {
        assert!(rank(&names(3), &[vec![0.0; 3], vec![0.0; 3], vec![0.0; 3]]).is_empty());
    }
}
