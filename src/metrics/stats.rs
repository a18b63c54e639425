//! Small statistics: means with confidence intervals, Wilson intervals for shares, medians.

use serde::Serialize;

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A value with its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// The mean with a normal-approximation 95% interval (sample standard deviation);
/// `None` for no values. With one value the interval is the value itself.
pub fn mean(values: &[f64]) -> Option<Estimate> {
    let n = values.len() as f64;
    if values.is_empty() {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return Some(Estimate {
            value: mean,
            low: mean,
            high: mean,
        });
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let half = Z95 * (var / n).sqrt();
    Some(Estimate {
        value: mean,
        low: mean - half,
        high: mean + half,
    })
}

/// The share `k / n` with its Wilson score 95% interval; `None` when `n` is 0.
pub fn share(k: u64, n: u64) -> Option<Estimate> {
    if n == 0 {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Estimate {
        value: p,
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
    })
}

/// The median; `None` for no values.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 0 {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_interval_matches_the_textbook_formula() {
        let e = mean(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(e.value, 5.0);
        // sample sd = sqrt(32/7); half-width = 1.96 * sd / sqrt(8)
        let half = Z95 * (32.0f64 / 7.0 / 8.0).sqrt();
        assert!((e.high - 5.0 - half).abs() < 1e-12 && (5.0 - e.low - half).abs() < 1e-12);
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn wilson_interval_stays_inside_zero_and_one() {
        let e = share(0, 10).unwrap();
        assert_eq!((e.value, e.low), (0.0, 0.0));
        assert!(e.high > 0.2 && e.high < 0.35, "{e:?}");
        let half = share(50, 100).unwrap();
        assert!(
            (half.low - 0.4038).abs() < 1e-3 && (half.high - 0.5962).abs() < 1e-3,
            "{half:?}"
        );
        assert_eq!(share(1, 0), None);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
