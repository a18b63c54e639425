//! The team's hours: per rater and per day or ISO week, what they finished and how long
//! it took them, from their finished ratings (drafts never), each counted in the period
//! it was submitted in (UTC).
//!
//! Every finished rating is work done and counts, whatever became of it later (returned,
//! rejected) and whether or not its task was gold: a team pays for the time, and gold
//! tasks are rated like any other (the rater cannot tell them apart). `gold` says how
//! many of the rated tasks were gold, for a lead who wants them apart.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::lifecycle::{Outcome, SkipReason};
use crate::metrics::stats;

/// One finished rating as the hours report reads it.
#[derive(Debug, Clone)]
pub struct Work {
    pub rating_id: Uuid,
    pub rater: String,
    pub outcome: Outcome,
    pub skip_reason: Option<SkipReason>,
    /// Active seconds, as the rater's form measured them.
    pub time_spent_s: i32,
    pub submitted_at: DateTime<Utc>,
    /// A rating of a gold task.
    pub gold: bool,
}

/// The length of a report's periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    /// A calendar day (UTC), named `2026-11-02`.
    Day,
    /// An ISO week, Monday to Sunday (UTC), named `2026-W45`.
    Week,
}

impl Period {
    pub const NAMES: [&'static str; 2] = ["day", "week"];

    /// The period named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "day" => Some(Self::Day),
            "week" => Some(Self::Week),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Week => "week",
        }
    }

    /// The period holding `at`: its name and first day.
    pub fn of(self, at: DateTime<Utc>) -> (String, NaiveDate) {
        let day = at.date_naive();
        match self {
            Self::Day => (day.format("%Y-%m-%d").to_string(), day),
            Self::Week => {
                let week = day.iso_week();
                let monday = day - Duration::days(i64::from(day.weekday().num_days_from_monday()));
                (format!("{}-W{:02}", week.year(), week.week()), monday)
            }
        }
    }
}

/// One rater's work in one period.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct HoursRow {
    pub rater: String,
    /// `2026-11-02` for a day, `2026-W45` for an ISO week.
    pub period: String,
    /// The period's first day (a week's Monday).
    #[schema(value_type = String, format = Date)]
    pub period_start: NaiveDate,
    /// Finished ratings of any outcome.
    pub ratings: u64,
    /// Tasks rated (outcome `rated`).
    pub rated: u64,
    /// Of those, tasks that were gold.
    pub gold: u64,
    /// Tasks given back (outcome `skipped`), and of them how many gave each reason.
    pub skipped: u64,
    pub skip_reasons: BTreeMap<String, u64>,
    /// Tasks marked out of scope.
    pub out_of_scope: u64,
    /// Active seconds of every finished rating of the period (skips and out-of-scope
    /// included: looking at a task before giving it back is work too).
    pub active_s: u64,
    /// The median active seconds of a rated task; `null` when none was rated.
    pub median_s: Option<f64>,
}

/// The report's rows, by rater and then period, from finished ratings `work`.
pub fn hours(work: &[Work], period: Period) -> Vec<HoursRow> {
    let mut groups: BTreeMap<(&str, NaiveDate), (HoursRow, Vec<f64>)> = BTreeMap::new();
    for w in work {
        let (name, start) = period.of(w.submitted_at);
        let (row, times) = groups.entry((&w.rater, start)).or_insert_with(|| {
            let row = HoursRow {
                rater: w.rater.clone(),
                period: name,
                period_start: start,
                ratings: 0,
                rated: 0,
                gold: 0,
                skipped: 0,
                skip_reasons: BTreeMap::new(),
                out_of_scope: 0,
                active_s: 0,
                median_s: None,
            };
            (row, Vec::new())
        });
        row.ratings += 1;
        row.active_s += u64::try_from(w.time_spent_s).unwrap_or(0);
        match w.outcome {
            Outcome::Rated => {
                row.rated += 1;
                row.gold += u64::from(w.gold);
                times.push(f64::from(w.time_spent_s));
            }
            Outcome::Skipped => {
                row.skipped += 1;
                let reason = w.skip_reason.as_ref().map_or("none", SkipReason::as_str);
                *row.skip_reasons.entry(reason.to_owned()).or_default() += 1;
            }
            Outcome::OutOfScope => row.out_of_scope += 1,
        }
    }
    groups
        .into_values()
        .map(|(mut row, mut times)| {
            row.median_s = stats::median(&mut times);
            row
        })
        .collect()
}

/// The CSV's columns, in order: what a team pays from, one row per rater and period.
pub const CSV_COLUMNS: [&str; 12] = [
    "rater",
    "period",
    "period_start",
    "ratings",
    "rated",
    "gold",
    "skipped",
    "skip_reasons",
    "out_of_scope",
    "active_s",
    "active_hours",
    "median_s",
];

/// A row's cells in the order of [`CSV_COLUMNS`], as plain text (the writer makes them
/// safe for a spreadsheet). Skip reasons read `reason=count` joined by `; `, by reason;
/// hours have two decimals.
pub fn csv_cells(row: &HoursRow) -> [String; 12] {
    let reasons = row
        .skip_reasons
        .iter()
        .map(|(reason, n)| format!("{reason}={n}"))
        .collect::<Vec<_>>()
        .join("; ");
    [
        row.rater.clone(),
        row.period.clone(),
        row.period_start.to_string(),
        row.ratings.to_string(),
        row.rated.to_string(),
        row.gold.to_string(),
        row.skipped.to_string(),
        reasons,
        row.out_of_scope.to_string(),
        row.active_s.to_string(),
        format!("{:.2}", row.active_s as f64 / 3600.0),
        row.median_s.map_or_else(String::new, |m| m.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    fn work(rater: &str, outcome: Outcome, s: i32, when: &str) -> Work {
        Work {
            rating_id: Uuid::now_v7(),
            rater: rater.into(),
            outcome,
            skip_reason: (outcome == Outcome::Skipped).then(|| "too_long".parse().unwrap()),
            time_spent_s: s,
            submitted_at: at(when),
            gold: false,
        }
    }

    #[test]
    fn weeks_are_iso_weeks_from_monday() {
        // 2026-01-01 is a Thursday: ISO week 1 of 2026 starts on Monday 2025-12-29.
        let (name, start) = Period::Week.of(at("2026-01-01T12:00:00Z"));
        assert_eq!(
            (name.as_str(), start.to_string().as_str()),
            ("2026-W01", "2025-12-29")
        );
        let (name, start) = Period::Week.of(at("2026-11-29T23:59:59Z"));
        assert_eq!(
            (name.as_str(), start.to_string().as_str()),
            ("2026-W48", "2026-11-23")
        );
        let (name, _) = Period::Day.of(at("2026-11-29T23:59:59Z"));
        assert_eq!(name, "2026-11-29");
    }

    #[test]
    fn rows_add_up_per_rater_and_period() {
        let mut gold = work("ana", Outcome::Rated, 100, "2026-11-02T09:00:00Z");
        gold.gold = true;
        let rows = hours(
            &[
                work("ana", Outcome::Rated, 60, "2026-11-02T10:00:00Z"),
                gold,
                work("ana", Outcome::Rated, 300, "2026-11-04T10:00:00Z"),
                work("ana", Outcome::Skipped, 20, "2026-11-04T11:00:00Z"),
                work("ana", Outcome::OutOfScope, 5, "2026-11-10T11:00:00Z"),
                work("bo", Outcome::Rated, 40, "2026-11-03T10:00:00Z"),
            ],
            Period::Week,
        );
        assert_eq!(rows.len(), 3);
        let first = &rows[0];
        assert_eq!(
            (first.rater.as_str(), first.period.as_str()),
            ("ana", "2026-W45")
        );
        assert_eq!(
            (first.ratings, first.rated, first.gold, first.skipped),
            (4, 3, 1, 1)
        );
        assert_eq!(first.active_s, 480);
        assert_eq!(first.median_s, Some(100.0));
        assert_eq!(first.skip_reasons["too_long"], 1);
        assert_eq!((rows[1].out_of_scope, rows[1].median_s), (1, None));
        assert_eq!(rows[2].rater, "bo");
        let days = hours(
            &[
                work("ana", Outcome::Rated, 60, "2026-11-02T10:00:00Z"),
                work("ana", Outcome::Rated, 90, "2026-11-02T23:00:00Z"),
            ],
            Period::Day,
        );
        assert_eq!((days.len(), days[0].median_s), (1, Some(75.0)));
        let cells = csv_cells(&first.clone());
        assert_eq!(cells.len(), CSV_COLUMNS.len());
        assert_eq!(cells[7], "too_long=1");
        assert_eq!(cells[10], "0.13");
    }
}
