//! The figures read off an [`Accumulator`]: counts, leans, model tables, agreement and
//! bias, from what it holds now, without a pass over the ratings.

use std::collections::BTreeMap;

use super::*;

impl Accumulator {
    /// The figures of the ratings held now, for a batch of `tasks` tasks.
    /// `prior` is the batch's Bradley-Terry prior (see [`bradley_terry`]).
    pub fn finish(&self, tasks: i64, prior: f64) -> Metrics {
        let mut counts = self.counts.clone();
        counts.tasks = tasks;
        let agreement = self
            .agreement
            .iter()
            .map(|(path, _, b)| (path.clone(), b.finish()))
            .collect();
        let mut fields: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        let mut yes_shares = BTreeMap::new();
        for (q, tally) in self.questions.iter().zip(&self.tallies) {
            for (code, &n) in tally.iter().enumerate().skip(1) {
                if n > 0 {
                    fields
                        .entry(q.path.clone())
                        .or_default()
                        .insert(q.names[code - 1].clone(), n);
                }
            }
            if q.yes_no {
                // Options are yes then no: codes 1 and 2.
                let (yes, no) = (tally[1], tally[2]);
                if let Some(share) = stats::share(yes, yes + no) {
                    yes_shares.insert(q.path.clone(), share);
                }
            }
        }
        for (q, tally) in self.classifications.iter().zip(&self.class_tallies) {
            let counted: BTreeMap<String, u64> = q
                .options
                .iter()
                .zip(tally)
                .filter(|(_, n)| **n > 0)
                .map(|(o, n)| (o.clone(), *n))
                .collect();
            if !counted.is_empty() {
                fields.insert(format!("classifications.{}", q.key), counted);
            }
        }
        let choices = several::summaries(&self.several, &self.several_tallies);
        for q in &self.several {
            if let Some(summary) = choices.get(&q.path) {
                let picked: BTreeMap<String, u64> = summary
                    .counts
                    .options
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(o, n)| (o.clone(), *n))
                    .collect();
                if !picked.is_empty() {
                    fields.insert(q.path.clone(), picked);
                }
            }
        }
        let mut raters: Vec<RaterStats> = self
            .raters
            .iter()
            .filter(|r| r.ratings > 0)
            .map(|r| RaterStats {
                rater: r.name.clone(),
                included: r.included,
                median_time_s: r.times.median(),
                skip_rate: (r.finished > 0).then(|| r.skipped as f64 / r.finished as f64),
                out_of_scope_rate: (r.finished > 0)
                    .then(|| r.out_of_scope as f64 / r.finished as f64),
                agreement_with_others: (r.pairs > 0).then(|| r.equal as f64 / r.pairs as f64),
                pairs_with_others: r.pairs,
                vs_final: BTreeMap::new(),
            })
            .collect();
        raters.sort_by(|x, y| x.rater.cmp(&y.rater));

        let several = self.preferences.len() > 1;
        let mut preferences = BTreeMap::new();
        let mut pooled_pairs: BTreeMap<(String, String), PairTally> = BTreeMap::new();
        let (mut pooled_decisive, mut pooled_first) = (0, 0);
        let mut only = None;
        for (qi, tally) in &self.preferences {
            let q = &self.questions[*qi];
            let mut summary = self.preference_summary(*qi, &self.tallies[*qi]);
            let bias = position_bias(q, tally);
            let models = models(&tally.model_pairs, !several, prior);
            if several {
                summary.position_bias = Some(bias);
                summary.models = Some(models);
                for (pair, answers) in &tally.model_pairs {
                    let pooled = pooled_pairs.entry(pair.clone()).or_default();
                    pooled.a_wins += answers.a_wins;
                    pooled.ties += answers.ties;
                    pooled.b_wins += answers.b_wins;
                }
                pooled_decisive += tally.decisive;
                pooled_first += tally.shown_first;
            } else {
                only = Some((bias, models));
            }
            preferences.insert(q.key.clone(), summary);
        }
        let (position_bias, models) = match only {
            Some((bias, models)) => (Some(bias), Some(models)),
            None if several => (
                Some(PositionBias::Shares {
                    decisive: pooled_decisive,
                    shown_first: stats::share(pooled_first, pooled_decisive),
                }),
                Some(models(&pooled_pairs, false, prior)),
            ),
            None => (None, None),
        };
        let scores = self
            .score_models
            .iter()
            .map(|(qi, by_model)| {
                let q = &self.questions[*qi];
                (q.path.clone(), self.score_summary(*qi, by_model))
            })
            .collect();
        Metrics {
            rubric: self.rubric.clone(),
            counts,
            preferences,
            scores,
            yes_shares,
            choices,
            fields,
            agreement,
            raters,
            position_bias,
            models,
            judges: BTreeMap::new(),
            bias: self.bias.finish(),
            gold: gold::GoldMetrics::default(),
            overlap: super::super::OverlapFigures::default(),
            routing: None,
            aggregation: BTreeMap::new(),
        }
    }

    /// The values given to question `qi` by included ratings.
    pub(super) fn values_of(&self, qi: usize) -> Histogram {
        let q = &self.questions[qi];
        let mut values = Histogram::default();
        for (code, &n) in self.tallies[qi].iter().enumerate() {
            if let Some(value) = q.value(code as u8) {
                values.add_times(value, n);
            }
        }
        values
    }

    pub(super) fn preference_summary(&self, qi: usize, tally: &[u64]) -> PreferenceSummary {
        let q = &self.questions[qi];
        let mut distribution = BTreeMap::new();
        let (mut a, mut t, mut b) = (0, 0, 0);
        for (code, &n) in tally.iter().enumerate().skip(1) {
            // A scale lists every value; a choice the options given.
            if n > 0 || matches!(q.reading, Reading::Scale { .. }) {
                distribution.insert(q.names[code - 1].clone(), n);
            }
            match q.favours(code as u8) {
                Some(Favours::A) => a += n,
                Some(Favours::Tie) => t += n,
                Some(Favours::B) => b += n,
                None => {}
            }
        }
        let n = a + t + b;
        let mean = match q.reading {
            Reading::Scale { .. } => self.values_of(qi).mean(),
            _ => None,
        };
        PreferenceSummary {
            n,
            mean,
            distribution,
            a_wins: stats::share(a, n),
            ties: stats::share(t, n),
            b_wins: stats::share(b, n),
            position_bias: None,
            models: None,
        }
    }

    pub(super) fn score_summary(
        &self,
        qi: usize,
        by_model: &BTreeMap<String, Histogram>,
    ) -> ScoreSummary {
        let q = &self.questions[qi];
        let values = self.values_of(qi);
        let distribution = q
            .names
            .iter()
            .zip(&self.tallies[qi][1..])
            .map(|(name, n)| (name.clone(), *n))
            .collect();
        let mut models: Vec<ModelScore> = by_model
            .iter()
            .map(|(model, values)| ModelScore {
                rank: 0,
                model: model.clone(),
                n: values.len(),
                mean: values.mean(),
            })
            .collect();
        models.sort_by(|x, y| {
            let mean = |m: &ModelScore| m.mean.map_or(f64::NEG_INFINITY, |e| e.value);
            mean(y)
                .total_cmp(&mean(x))
                .then_with(|| x.model.cmp(&y.model))
        });
        for (i, m) in models.iter_mut().enumerate() {
            m.rank = i + 1;
        }
        ScoreSummary {
            n: values.len(),
            mean: values.mean(),
            distribution,
            models,
        }
    }
}

/// The lean of one preference question to the response shown first.
fn position_bias(q: &Question, tally: &PreferenceTally) -> PositionBias {
    match q.reading {
        Reading::Scale { .. } => {
            let side = |(n, sum): (u64, i64)| Side {
                n,
                mean: (n > 0).then(|| sum as f64 / n as f64),
            };
            PositionBias::Scale {
                not_swapped: side(tally.by_swap[0]),
                swapped: side(tally.by_swap[1]),
                shown_mean: tally.shown_scores.mean(),
            }
        }
        _ => PositionBias::Shares {
            decisive: tally.decisive,
            shown_first: stats::share(tally.shown_first, tally.decisive),
        },
    }
}

/// The model table of answers by unordered pair: counts, shares, the mean of scale
/// scores (when `with_mean`), and a Bradley-Terry ranking of more than two models.
fn models(by_pair: &BTreeMap<(String, String), PairTally>, with_mean: bool, prior: f64) -> Models {
    let pairs: Vec<ModelPair> = by_pair
        .iter()
        .map(|((a, b), tally)| {
            let n = tally.n();
            let (aw, t, bw) = (tally.a_wins, tally.ties, tally.b_wins);
            ModelPair {
                model_a: a.clone(),
                model_b: b.clone(),
                n,
                a_wins: aw,
                ties: t,
                b_wins: bw,
                mean: if with_mean { tally.scores.mean() } else { None },
                a_win_share: stats::share(aw, n),
                tie_share: stats::share(t, n),
                b_win_share: stats::share(bw, n),
            }
        })
        .collect();
    let mut names: Vec<String> = pairs
        .iter()
        .flat_map(|p| [p.model_a.clone(), p.model_b.clone()])
        .collect();
    names.sort();
    names.dedup();
    let ranking = (names.len() > 2).then(|| {
        let index = |m: &str| {
            names
                .binary_search_by(|n| n.as_str().cmp(m))
                .expect("known model")
        };
        let mut wins = vec![vec![0.0; names.len()]; names.len()];
        for p in &pairs {
            let (i, j) = (index(&p.model_a), index(&p.model_b));
            wins[i][j] += p.a_wins as f64 + p.ties as f64 / 2.0;
            wins[j][i] += p.b_wins as f64 + p.ties as f64 / 2.0;
        }
        bradley_terry::rank(&names, &wins, prior)
    });
    Models { pairs, ranking }
}
