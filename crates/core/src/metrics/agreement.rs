//! Inter-rater agreement: Krippendorff's alpha and pairwise percent agreement.
//!
//! Alpha is computed from the coincidence matrix, as Krippendorff defines it and as the
//! `krippendorff` Python package does: only units with two or more values count, each
//! ordered pair of values in a unit adds `1 / (m - 1)`, and
//! `alpha = 1 - sum(o * d) / sum(e * d)` with `e = (n_c n_k - [c = k] n_c) / (n - 1)`.

use serde::Serialize;

/// How differences between values are weighed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Any two different values are equally far apart.
    Nominal,
    /// Values are ranks; distance grows with how many values lie between them.
    Ordinal,
    /// Values are numbers; distance is the squared difference.
    Interval,
}

/// Agreement on one question.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Agreement {
    pub level: Level,
    /// `None` when it is undefined (no pairable values, or no variation at all).
    pub krippendorff_alpha: Option<f64>,
    /// Units (tasks) with two or more values.
    pub units: usize,
    /// Pairs of values within those units.
    pub pairs: u64,
    /// Share of those pairs that are equal.
    pub percent_agreement: Option<f64>,
}

/// Agreement over `units`, each the values given for one task (missing values left out).
pub fn agreement(units: &[Vec<i64>], level: Level) -> Agreement {
    let mut domain: Vec<i64> = units
        .iter()
        .filter(|u| u.len() >= 2)
        .flatten()
        .copied()
        .collect();
    domain.sort_unstable();
    domain.dedup();
    let mut builder = Builder::new(domain.clone(), level);
    let mut indices = Vec::new();
    for unit in units {
        indices.clear();
        indices.extend(unit.iter().filter_map(|v| domain.binary_search(v).ok()));
        if indices.len() == unit.len() {
            builder.add_unit(&indices);
        }
    }
    builder.finish()
}

/// Builds agreement one unit at a time, keeping only the coincidences: memory does not
/// grow with the number of units. Values are given as indices into `domain`, which may
/// hold values that never occur (they carry no weight).
///
/// A unit of `m` values adds each ordered pair of them with weight `1 / (m - 1)`. The
/// pairs are counted in whole numbers per unit size and weighed only at the end, so a
/// unit can be taken out again exactly (when a rating changes) and the result does not
/// depend on the order units came in.
#[derive(Debug, Clone)]
pub struct Builder {
    level: Level,
    domain: Vec<i64>,
    /// Per unit size: ordered pairs of values, `domain.len()` squared.
    by_size: std::collections::BTreeMap<usize, Vec<u64>>,
    counts: Vec<u32>,
    units: usize,
    pairs: u64,
    equal: u64,
}

impl Builder {
    pub fn new(domain: Vec<i64>, level: Level) -> Self {
        let k = domain.len();
        Self {
            level,
            domain,
            by_size: std::collections::BTreeMap::new(),
            counts: vec![0; k],
            units: 0,
            pairs: 0,
            equal: 0,
        }
    }

    /// Adds one unit: the indices (into the domain) of the values it was given. A unit
    /// with fewer than two values is not pairable and adds nothing.
    pub fn add_unit(&mut self, values: &[usize]) {
        self.change_unit(values, true);
    }

    /// Takes out a unit added before, with the same values.
    pub fn remove_unit(&mut self, values: &[usize]) {
        self.change_unit(values, false);
    }

    fn change_unit(&mut self, values: &[usize], add: bool) {
        if values.len() < 2 {
            return;
        }
        let k = self.domain.len();
        let by = |n: &mut u64, d: u64| {
            if add {
                *n += d;
            } else {
                *n -= d;
            }
        };
        self.counts.iter_mut().for_each(|c| *c = 0);
        for &v in values {
            self.counts[v] += 1;
        }
        let m = values.len();
        if add {
            self.units += 1;
        } else {
            self.units -= 1;
        }
        by(&mut self.pairs, (m * (m - 1) / 2) as u64);
        let o = self.by_size.entry(m).or_insert_with(|| vec![0; k * k]);
        for c in 0..k {
            let nc = u64::from(self.counts[c]);
            if nc == 0 {
                continue;
            }
            by(&mut self.equal, nc * nc.saturating_sub(1) / 2);
            for d in 0..k {
                let nd = u64::from(self.counts[d]);
                if nd == 0 {
                    continue;
                }
                by(
                    &mut o[c * k + d],
                    if c == d { nc * (nc - 1) } else { nc * nd },
                );
            }
        }
    }

    pub fn finish(&self) -> Agreement {
        Agreement {
            level: self.level,
            krippendorff_alpha: self.alpha(),
            units: self.units,
            pairs: self.pairs,
            percent_agreement: (self.pairs > 0).then(|| self.equal as f64 / self.pairs as f64),
        }
    }

    /// The coincidence matrix: each unit size's pairs weighed by `1 / (m - 1)`.
    fn coincidences(&self) -> Vec<f64> {
        let k = self.domain.len();
        let mut o = vec![0.0; k * k];
        for (&m, pairs) in &self.by_size {
            let weight = (m - 1) as f64;
            for (cell, &n) in o.iter_mut().zip(pairs) {
                if n > 0 {
                    *cell += n as f64 / weight;
                }
            }
        }
        o
    }

    fn alpha(&self) -> Option<f64> {
        let k = self.domain.len();
        let o = &self.coincidences();
        let n_v: Vec<f64> = (0..k).map(|c| (0..k).map(|d| o[c * k + d]).sum()).collect();
        let n: f64 = n_v.iter().sum();
        if n <= 1.0 {
            return None;
        }
        let distance = |c: usize, d: usize| -> f64 {
            match self.level {
                Level::Nominal => f64::from(u8::from(c != d)),
                Level::Interval => {
                    let diff = (self.domain[c] - self.domain[d]) as f64;
                    diff * diff
                }
                Level::Ordinal => {
                    let (lo, hi) = (c.min(d), c.max(d));
                    let between: f64 = n_v[lo..=hi].iter().sum::<f64>() - (n_v[lo] + n_v[hi]) / 2.0;
                    between * between
                }
            }
        };
        let mut observed = 0.0;
        let mut expected = 0.0;
        for c in 0..k {
            for d in 0..k {
                let delta = distance(c, d);
                if delta == 0.0 {
                    continue;
                }
                observed += o[c * k + d] * delta;
                expected += n_v[c] * n_v[d] * delta / (n - 1.0);
            }
        }
        (expected > 0.0).then(|| 1.0 - observed / expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_agreement_is_one_and_pairs_are_counted() {
        let units = vec![vec![1, 1], vec![2, 2, 2], vec![3, 3]];
        let a = agreement(&units, Level::Nominal);
        assert_eq!(a.krippendorff_alpha, Some(1.0));
        assert_eq!((a.units, a.pairs, a.percent_agreement), (3, 5, Some(1.0)));
    }

    #[test]
    fn single_values_are_not_pairable_and_no_variation_is_undefined() {
        let a = agreement(&[vec![1], vec![2]], Level::Ordinal);
        assert_eq!(
            (a.units, a.krippendorff_alpha, a.percent_agreement),
            (0, None, None)
        );
        let same = agreement(&[vec![4, 4], vec![4, 4]], Level::Ordinal);
        assert_eq!(
            same.krippendorff_alpha, None,
            "no variation: alpha is undefined"
        );
        assert_eq!(same.percent_agreement, Some(1.0));
    }

    #[test]
    fn systematic_disagreement_is_below_zero() {
        let units = vec![vec![1, 2], vec![2, 1], vec![1, 2], vec![2, 1]];
        assert!(
            agreement(&units, Level::Nominal)
                .krippendorff_alpha
                .unwrap()
                < 0.0
        );
    }
}

/// Reference values computed by the `krippendorff` Python package (0.9.0), including the
/// worked examples of Krippendorff's "Computing Krippendorff's Alpha-Reliability" (2011);
/// `tests/fixtures/krippendorff/generate.py` makes them.
#[cfg(test)]
mod reference {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Case {
        name: String,
        level: String,
        /// Raters by units; `null` for no value.
        values: Vec<Vec<Option<i64>>>,
        alpha: f64,
    }

    fn cases() -> Vec<Case> {
        serde_json::from_str(include_str!(
            "../../../../tests/fixtures/krippendorff/fixtures.json"
        ))
        .expect("fixtures")
    }

    /// Units are the columns of the raters-by-units table.
    fn units(values: &[Vec<Option<i64>>]) -> Vec<Vec<i64>> {
        let width = values.iter().map(Vec::len).max().unwrap_or(0);
        (0..width)
            .map(|u| {
                values
                    .iter()
                    .filter_map(|row| row.get(u).copied().flatten())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn alpha_matches_the_reference_package_to_1e_9() {
        let cases = cases();
        assert!(cases.len() >= 30, "{} cases", cases.len());
        for case in cases {
            let level = match case.level.as_str() {
                "nominal" => Level::Nominal,
                "ordinal" => Level::Ordinal,
                "interval" => Level::Interval,
                other => panic!("unknown level {other}"),
            };
            let got = agreement(&units(&case.values), level)
                .krippendorff_alpha
                .expect(&case.name);
            assert!(
                (got - case.alpha).abs() < 1e-9,
                "{}: {got} vs {}",
                case.name,
                case.alpha
            );
        }
    }

    #[test]
    fn the_papers_worked_example_gives_its_published_values() {
        let data = [
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(1),
                Some(4),
                Some(1),
                Some(2),
                None,
                None,
                None,
            ],
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(2),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                None,
                Some(3),
            ],
            [
                None,
                Some(3),
                Some(3),
                Some(3),
                Some(2),
                Some(3),
                Some(4),
                Some(2),
                Some(2),
                Some(5),
                Some(1),
                None,
            ],
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(4),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                Some(1),
                None,
            ],
        ];
        let units = units(&data.iter().map(|r| r.to_vec()).collect::<Vec<_>>());
        for (level, published) in [
            (Level::Nominal, 0.743),
            (Level::Ordinal, 0.815),
            (Level::Interval, 0.849),
        ] {
            let got = agreement(&units, level).krippendorff_alpha.unwrap();
            assert!((got - published).abs() < 5e-4, "{level:?}: {got}");
        }
    }
}
