//! Reports for programme leads: the team's hours per rater and day or week (JSON, or a
//! CSV a team can pay from), and the work-quality flags of a batch, each with the
//! ratings behind it. The figures are the core's ([`verdict_core::report`]); this reads
//! the ratings, checks who may see them, and serves the API and the page.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{AppError, AppResult, FieldErrors};
use crate::state::AppState;
use crate::store::Store;
use crate::store::batches::BatchSummary;
use crate::store::reports::WorkFilter;
use verdict_core::lifecycle::Outcome;
use verdict_core::report::flags::{self, Explained, Timed};
use verdict_core::report::hours::{self, HoursRow, Period, Work};
use verdict_core::role::Role;
use verdict_core::rubric::Slot;

pub mod api;
pub mod pages;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> axum::Router<AppState> {
    pages::router()
}

/// The hours report's query. Empty values (as a form sends them) are as if absent, and
/// the patterns say so; spaces around a value are left out.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HoursQuery {
    /// Only this batch's ratings (its id, hyphenated); by default every batch you may
    /// see.
    #[param(
        pattern = r"^\s*([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})?\s*$"
    )]
    pub batch: Option<String>,
    /// Ratings submitted at or after this time, or from the start of this date (UTC).
    #[param(
        pattern = r"^\s*(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))?)?\s*$"
    )]
    pub from: Option<String>,
    /// Ratings submitted before this time, or up to the end of this date (UTC): a date
    /// includes its day.
    #[param(
        pattern = r"^\s*(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))?)?\s*$"
    )]
    pub to: Option<String>,
    /// `day` (default) or `week` (ISO weeks, from Monday).
    #[param(schema_with = periods)]
    pub by: Option<String>,
    /// `json` (default) or `csv`.
    #[param(schema_with = hours_formats)]
    pub format: Option<String>,
}

fn periods() -> utoipa::openapi::Object {
    crate::web::openapi::one_of(&Period::NAMES)
}

fn hours_formats() -> utoipa::openapi::Object {
    crate::web::openapi::one_of(&["json", "csv"])
}

/// How the hours report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoursFormat {
    Json,
    Csv,
}

/// The hours report's query, checked.
#[derive(Debug, Clone, Copy)]
pub struct HoursRequest {
    pub batch: Option<Uuid>,
    /// Submitted at or after.
    pub from: Option<DateTime<Utc>>,
    /// Submitted before.
    pub until: Option<DateTime<Utc>>,
    pub by: Period,
    pub format: HoursFormat,
}

/// A value that is there: a form's empty field is no value.
fn given(value: Option<&String>) -> Option<&str> {
    value.map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// A bound of the window: a time as it is; a date from its start (`from`) or through
/// its end (`to`, which is then the next day's start).
fn bound(
    field: &str,
    text: &str,
    end_of_day: bool,
    fields: &mut FieldErrors,
) -> Option<DateTime<Utc>> {
    if !documented_shape(text) {
        fields.insert(
            field.into(),
            "must be a date (2026-11-21) or an RFC 3339 time (2026-11-21T09:00:00Z)".into(),
        );
        return None;
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.to_utc());
    }
    if let Ok(t) = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z") {
        return Some(t.to_utc());
    }
    if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let day = if end_of_day {
            day.checked_add_signed(Duration::days(1))
        } else {
            Some(day)
        };
        if let Some(t) = day.and_then(|d| d.and_hms_opt(0, 0, 0)) {
            return Some(t.and_utc());
        }
    }
    fields.insert(
        field.into(),
        "must be a date (2026-11-21) or an RFC 3339 time (2026-11-21T09:00:00Z)".into(),
    );
    None
}

/// Whether `text` has the shape the query's pattern documents (the OpenAPI document
/// gives it): `dddd-dd-dd`, optionally followed by `T` or a space, `dd:dd:dd`, an
/// optional fraction and `Z` or `+dd:dd`/`-dd:dd`. chrono alone would also read
/// `2026-1-1` or a lowercase `t`, which the document says are refused.
fn documented_shape(text: &str) -> bool {
    let fits = |text: &[u8], shape: &[u8]| {
        text.len() == shape.len()
            && text.iter().zip(shape).all(|(c, s)| match s {
                b'd' => c.is_ascii_digit(),
                b'T' => *c == b'T' || *c == b' ',
                b'+' => *c == b'+' || *c == b'-',
                s => c == s,
            })
    };
    let b = text.as_bytes();
    if b.len() < 19 {
        return fits(b, b"dddd-dd-dd");
    }
    let (stamp, mut rest) = b.split_at(19);
    if !fits(stamp, b"dddd-dd-ddTdd:dd:dd") {
        return false;
    }
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return false;
        }
        rest = &fraction[digits..];
    }
    rest == b"Z" || fits(rest, b"+dd:dd")
}

/// Checks the query: every bad parameter is reported, by name.
pub fn parse(query: &HoursQuery) -> AppResult<HoursRequest> {
    let mut fields = FieldErrors::new();
    let batch = given(query.batch.as_ref()).and_then(|b| {
        // Hyphenated only, as the document's pattern says (the parser also reads other
        // spellings of a UUID).
        let id = Some(b)
            .filter(|b| b.len() == 36)
            .and_then(|b| Uuid::parse_str(b).ok());
        if id.is_none() {
            fields.insert("batch".into(), "must be a batch's id (a UUID)".into());
        }
        id
    });
    let from = given(query.from.as_ref()).and_then(|t| bound("from", t, false, &mut fields));
    let until = given(query.to.as_ref()).and_then(|t| bound("to", t, true, &mut fields));
    if let (Some(from), Some(until)) = (from, until)
        && from > until
    {
        fields.insert("to".into(), "must not be before from".into());
    }
    let by = match given(query.by.as_ref()) {
        None => Period::Day,
        Some(name) => Period::parse(name).unwrap_or_else(|| {
            fields.insert(
                "by".into(),
                format!("unknown period {name:?}: use day or week"),
            );
            Period::Day
        }),
    };
    let format = match given(query.format.as_ref()) {
        None | Some("json") => HoursFormat::Json,
        Some("csv") => HoursFormat::Csv,
        Some(other) => {
            fields.insert(
                "format".into(),
                format!("unknown format {other:?}: use json or csv"),
            );
            HoursFormat::Json
        }
    };
    if !fields.is_empty() {
        return Err(AppError::invalid(fields));
    }
    Ok(HoursRequest {
        batch,
        from,
        until,
        by,
        format,
    })
}

/// The hours report as the API serves it in JSON.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HoursReport {
    /// The length of the periods.
    pub by: Period,
    /// The batch asked for; `null` for every batch the reader may see.
    pub batch: Option<Uuid>,
    /// Ratings submitted at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Ratings submitted before this time.
    pub to: Option<DateTime<Utc>>,
    /// One row per rater and period, by rater and then period.
    pub rows: Vec<HoursRow>,
}

/// The hours of the finished ratings someone (`viewer`, of `role`) may see that the
/// request selects. A batch they may not see is not found.
pub async fn hours(
    store: &Store,
    viewer: Uuid,
    role: Role,
    request: &HoursRequest,
) -> AppResult<HoursReport> {
    if let Some(batch) = request.batch
        && store.visible_batch(batch, viewer, role).await?.is_none()
    {
        return Err(AppError::NotFound);
    }
    let filter = WorkFilter {
        batch: request.batch,
        from: request.from,
        until: request.until,
    };
    let work: Vec<Work> = store
        .work(viewer, role, filter)
        .await?
        .into_iter()
        .map(|row| Work {
            rating_id: row.rating_id,
            rater: row.rater,
            outcome: row.outcome,
            skip_reason: row.skip_reason,
            time_spent_s: row.time_spent_s,
            submitted_at: row.submitted_at,
            gold: row.gold,
        })
        .collect();
    Ok(HoursReport {
        by: request.by,
        batch: request.batch,
        from: request.from,
        to: request.until,
        rows: hours::hours(&work, request.by),
    })
}

/// The report as CSV: a header of [`hours::CSV_COLUMNS`], then one line per rater and
/// period, every cell safe to open in a spreadsheet.
pub fn csv(report: &HoursReport) -> AppResult<Vec<u8>> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(hours::CSV_COLUMNS)
        .map_err(AppError::internal)?;
    for row in &report.rows {
        let cells = hours::csv_cells(row).map(|cell| crate::export::neutral(&cell));
        out.write_record(cells).map_err(AppError::internal)?;
    }
    out.into_inner().map_err(AppError::internal)
}

/// What a flag is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    /// The rater's median time per rated task is far below the batch's.
    Fast,
    /// The same answer to a question on every one of the rater's tasks.
    StraightLining,
    /// One explanation, or rewordings of it, across many of the rater's tasks.
    RepeatedExplanations,
}

impl FlagKind {
    /// Its name, as the JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::StraightLining => "straight_lining",
            Self::RepeatedExplanations => "repeated_explanations",
        }
    }

    /// What it says, in words.
    pub fn label(self) -> &'static str {
        match self {
            Self::Fast => "far faster than the batch",
            Self::StraightLining => "straight-lining",
            Self::RepeatedExplanations => "repeated explanations",
        }
    }
}

/// A rating behind a flag, with the page a lead reviews it on.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FlaggedRating {
    pub id: Uuid,
    /// The rating's review page (`/review/{id}`).
    pub review_url: String,
}

impl FlaggedRating {
    fn of(id: Uuid) -> Self {
        Self {
            id,
            review_url: format!("/review/{id}"),
        }
    }
}

/// A flag a lead can act on: a rater, what was seen, and the ratings behind it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Flag {
    pub rater: String,
    pub kind: FlagKind,
    /// What was seen, in words.
    pub summary: String,
    /// `fast`: the rater's median active seconds per rated task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_s: Option<f64>,
    /// `straight_lining`: the questions answered the same on every task, by path.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
    /// `repeated_explanations`: the wording used most often.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
    /// The ratings behind the flag: `fast`, the rater's rated tasks (quickest first);
    /// `straight_lining`, those the metrics read; `repeated_explanations`, those holding
    /// the explanation.
    pub ratings: Vec<FlaggedRating>,
}

/// The thresholds the flags use (constants of the code, documented there).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Thresholds {
    /// `fast`: a rater's median below this share of the batch's median.
    pub fast_share: f64,
    /// `fast`: the fewest rated tasks a rater is judged on.
    pub fast_min_rated: usize,
    /// `straight_lining`: the fewest tasks a question answered the same is flagged on.
    pub straight_min_tasks: u64,
    /// `repeated_explanations`: the words of a shingle.
    pub shingle_words: usize,
    /// `repeated_explanations`: the Jaccard similarity of shingle sets from which two
    /// explanations are one.
    pub similar: f64,
    /// `repeated_explanations`: the fewest tasks it must recur on.
    pub min_repeats: usize,
}

const THRESHOLDS: Thresholds = Thresholds {
    fast_share: flags::FAST_SHARE,
    fast_min_rated: flags::FAST_MIN_RATED,
    straight_min_tasks: verdict_core::metrics::bias::MIN_N,
    shingle_words: flags::SHINGLE_WORDS,
    similar: flags::SIMILAR,
    min_repeats: flags::MIN_REPEATS,
};

/// A batch's work-quality flags.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FlagsReport {
    pub batch: Uuid,
    pub batch_name: String,
    /// The batch's median active seconds per rated task (people's finished ratings).
    pub median_s: Option<f64>,
    pub thresholds: Thresholds,
    /// By rater, then kind.
    pub flags: Vec<Flag>,
}

/// The flags of a batch over all its people's finished ratings. Straight-lining is the
/// batch's metrics' (so it reads the ratings the metrics count).
pub async fn batch_flags(state: &AppState, summary: &BatchSummary) -> AppResult<FlagsReport> {
    let store = state.store();
    let batch = &summary.batch;
    let rows = store.flag_rows(batch.id).await?;
    let rubric = store.batch_rubric(batch).await?;
    let tasks = store.task_count(batch.id).await?;
    let (metrics, _) = crate::metrics::api::measure(state, batch, tasks).await?;
    let rated: Vec<Timed> = rows
        .iter()
        .filter(|r| r.outcome == Outcome::Rated)
        .map(|r| Timed {
            rating_id: r.rating_id,
            rater: r.rater.clone(),
            time_spent_s: r.time_spent_s,
        })
        .collect();
    let (median_s, fast) = flags::fast(&rated);
    let slots = rubric.slots();
    let explained: Vec<Explained> = rows
        .iter()
        .map(|r| {
            let answers: verdict_core::rubric::Answers =
                serde_json::from_str(&r.answers).unwrap_or_default();
            // Explanations, and the answers to questions that take free text (a
            // rationale): whatever the rater wrote in their own words.
            let texts = slots
                .iter()
                .filter_map(|slot| {
                    let key = match slot {
                        Slot::Asked { question, .. } if question.is_text() => slot.key().to_owned(),
                        _ => slot.explanation_key()?,
                    };
                    let text = slot.holder(&answers)?.get(&key)?.as_str()?;
                    Some(text.to_owned())
                })
                .collect();
            Explained {
                rating_id: r.rating_id,
                rater: r.rater.clone(),
                texts,
            }
        })
        .collect();
    let mut found: Vec<Flag> = Vec::new();
    for f in fast {
        found.push(Flag {
            summary: format!(
                "median {:.0} s per rated task over {} tasks, under {:.0}% of the batch's {:.0} s",
                f.median_s,
                f.ratings.len(),
                flags::FAST_SHARE * 100.0,
                median_s.unwrap_or_default()
            ),
            rater: f.rater,
            kind: FlagKind::Fast,
            median_s: Some(f.median_s),
            questions: Vec::new(),
            example: None,
            ratings: f.ratings.into_iter().map(FlaggedRating::of).collect(),
        });
    }
    for rater in &metrics.bias.raters {
        let lined = &rater.straight_lining.straight_lined;
        if lined.is_empty() {
            continue;
        }
        let ratings: Vec<FlaggedRating> = rows
            .iter()
            .filter(|r| r.rater == rater.rater && r.counts_in_metrics())
            .map(|r| FlaggedRating::of(r.rating_id))
            .collect();
        let answered = lined
            .iter()
            .map(|q| {
                let answer = rater
                    .straight_lining
                    .questions
                    .get(q)
                    .map_or("", |a| a.answer.as_str());
                format!("{q} = {answer}")
            })
            .collect::<Vec<_>>()
            .join(", ");
        found.push(Flag {
            rater: rater.rater.clone(),
            kind: FlagKind::StraightLining,
            summary: format!(
                "the same answer on every one of {} tasks: {answered} (as shown to the rater)",
                rater.rated
            ),
            median_s: None,
            questions: lined.clone(),
            example: None,
            ratings,
        });
    }
    for r in flags::repeated(&explained) {
        found.push(Flag {
            summary: format!("the same explanation on {} tasks", r.ratings.len()),
            rater: r.rater,
            kind: FlagKind::RepeatedExplanations,
            median_s: None,
            questions: Vec::new(),
            example: Some(r.example),
            ratings: r.ratings.into_iter().map(FlaggedRating::of).collect(),
        });
    }
    found.sort_by(|x, y| x.rater.cmp(&y.rater));
    Ok(FlagsReport {
        batch: batch.id,
        batch_name: batch.name.clone(),
        median_s,
        thresholds: THRESHOLDS,
        flags: found,
    })
}

#[cfg(test)]
mod tests {
    use super::documented_shape;

    #[test]
    fn only_the_documented_shapes_of_a_bound_are_read() {
        for good in [
            "2026-11-21",
            "2026-11-21T09:00:00Z",
            "2026-11-21 09:00:00+01:00",
            "2026-11-21T09:00:00.125-05:30",
        ] {
            assert!(documented_shape(good), "{good}");
        }
        for bad in [
            "",
            "2026-1-1",
            "2026-11-21t09:00:00z",
            "2026-11-21T09:00:00",
            "2026-11-21T09:00:00.Z",
            "2026-11-21T9:00:00Z",
            "2026-11-21T09:00:00+0100",
        ] {
            assert!(!documented_shape(bad), "{bad}");
        }
    }
}
