//! Adjudication: a lead decides a task's final answer, starting from one rater's rating
//! or from the aggregate of those that count, with every rater's answer per question in
//! view.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use uuid::Uuid;

use super::task::RaterColumn;
use crate::auth::csrf::CsrfForm;
use crate::auth::{PageUser, RequireLead};
use crate::error::{AppError, AppResult};
use crate::review::table::{Column, Row, rows};
use crate::services::ServiceError;
use crate::services::adjudication::{self, FinalRequest};
use crate::state::AppState;
use crate::web::{ApiPath, ApiQuery, Layout, render};
use verdict_core::metrics::aggregate::Gathered;

#[derive(Template)]
#[template(path = "review/final.html")]
struct FinalPage {
    layout: Layout,
    batch_id: Uuid,
    batch_name: String,
    external_id: String,
    raters: Vec<RaterColumn>,
    rows: Vec<Row>,
    /// Where the answers below start from, in words.
    start: String,
    /// The answers to save, as JSON text (the task's own A/B order).
    answers: String,
    note: String,
    from_rating: Option<Uuid>,
    /// The final answer recorded now: who and when.
    recorded: Option<String>,
    /// The batch's method for tasks no lead decided.
    method: &'static str,
    errors: Vec<(String, String)>,
    notice: Option<String>,
}

/// Where the form starts: a rating's id, or `aggregate`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FinalQuery {
    from: Option<String>,
    saved: Option<String>,
}

/// What the form sends.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FinalForm {
    #[serde(default)]
    answers: String,
    #[serde(default)]
    note: String,
    #[serde(default)]
    from_rating: String,
}

/// The page with the form holding `answers` (JSON text) etc., or, without them, starting
/// where `from` says (a rating, the aggregate) or else from the recorded final answer,
/// else the aggregate.
#[allow(clippy::too_many_arguments)]
async fn page(
    state: &AppState,
    page_user: PageUser,
    lead: &verdict_core::user::User,
    batch_id: Uuid,
    external_id: &str,
    from: Option<&str>,
    typed: Option<FinalForm>,
    errors: Vec<(String, String)>,
    notice: Option<String>,
) -> AppResult<FinalPage> {
    let batch = crate::services::batches::led(state.store(), batch_id, lead).await?;
    let (_, rubric, task_id, ratings) =
        crate::review::task_ratings(state, lead, batch_id, external_id).await?;
    let columns: Vec<Column<'_>> = ratings
        .iter()
        .map(|r| Column::task(&r.answers.0, r.swapped))
        .collect();
    let table = rows(&rubric, &batch.classifications, &columns);
    let raters: Vec<RaterColumn> = ratings.iter().map(RaterColumn::of).collect();
    let recorded = state.store().final_answer(task_id).await?;
    let aggregate = || {
        let mut gathered = Gathered::new(&rubric);
        for r in ratings.iter().filter(|r| r.counts_in_metrics()) {
            gathered.add(&external_id.to_owned(), &r.rater, &r.answers.0);
        }
        let tasks = [external_id.to_owned()];
        let row =
            adjudication::final_rows(&tasks, Vec::new(), &gathered, batch.final_method.into())
                .into_iter()
                .next();
        let aggregated = row.map(|r| r.answers).unwrap_or_default();
        with_every_question(&rubric, aggregated)
    };
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let from_rating = from
        .and_then(|f| f.parse::<Uuid>().ok())
        .and_then(|id| ratings.iter().find(|r| r.rating_id == id));
    let (start, answers, note, from_id) = match (typed, from_rating, &recorded) {
        (Some(form), _, _) => (
            "what you sent".to_owned(),
            form.answers,
            form.note,
            form.from_rating.parse().ok(),
        ),
        (None, Some(r), _) => (
            format!("{}'s rating", r.rater),
            pretty(&serde_json::to_value(&r.answers.0).map_err(AppError::internal)?),
            String::new(),
            Some(r.rating_id),
        ),
        (None, None, Some(f)) if from != Some("aggregate") => (
            "the final answer recorded".to_owned(),
            pretty(&serde_json::to_value(&f.answers.0).map_err(AppError::internal)?),
            f.note.clone().unwrap_or_default(),
            f.from_rating,
        ),
        (None, None, _) => (
            format!(
                "the aggregate of the ratings that count ({}; every question without a \
                 metrics role, explanations included, is yours to fill in)",
                batch.final_method.as_str()
            ),
            pretty(&aggregate()),
            String::new(),
            None,
        ),
    };
    Ok(FinalPage {
        layout: page_user.layout,
        batch_id,
        batch_name: batch.name.clone(),
        external_id: external_id.to_owned(),
        raters,
        rows: table,
        start,
        answers,
        note,
        from_rating: from_id,
        recorded: recorded.map(|f| {
            format!(
                "by {} at {}",
                f.decided_by.as_deref().unwrap_or("someone since removed"),
                f.decided_at.format("%Y-%m-%d %H:%M UTC")
            )
        }),
        method: batch.final_method.as_str(),
        errors,
        notice,
    })
}

/// `GET /batches/{id}/tasks/{external_id}/final`.
pub(super) async fn show(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
    ApiQuery(query): ApiQuery<FinalQuery>,
) -> AppResult<Response> {
    let notice = query.saved.map(|what| {
        if what == "removed" {
            "The final answer is withdrawn: the final dataset gives the aggregate again.".into()
        } else {
            "Saved: the final dataset gives this answer for the task.".into()
        }
    });
    let page = page(
        &state,
        page_user,
        &lead,
        batch_id,
        &external_id,
        query.from.as_deref(),
        None,
        Vec::new(),
        notice,
    )
    .await?;
    Ok(render(&page)?.into_response())
}

/// `POST /batches/{id}/tasks/{external_id}/final`: records the answers sent.
pub(super) async fn save(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
    CsrfForm(form): CsrfForm<FinalForm>,
) -> AppResult<Response> {
    let batch = crate::services::batches::led(state.store(), batch_id, &lead).await?;
    let outcome = match serde_json::from_str::<serde_json::Value>(&form.answers) {
        Err(e) => Err(vec![("answers".to_owned(), format!("is not JSON: {e}"))]),
        Ok(answers) => {
            let from_rating = match form.from_rating.trim() {
                "" => Ok(None),
                id => id.parse::<Uuid>().map(Some).map_err(|_| {
                    vec![("from_rating".to_owned(), "is not a rating's id".to_owned())]
                }),
            };
            match from_rating {
                Err(errors) => Err(errors),
                Ok(from_rating) => {
                    let request = FinalRequest {
                        answers,
                        from_rating,
                        note: Some(form.note.clone()),
                    };
                    let store = state.store();
                    match adjudication::record(store, &batch, &external_id, request, &lead).await {
                        Ok(_) => Ok(()),
                        Err(ServiceError::Invalid(fields)) => Err(fields.into_iter().collect()),
                        Err(other) => return Err(other.into()),
                    }
                }
            }
        }
    };
    match outcome {
        Ok(()) => {
            let to = format!(
                "/batches/{batch_id}/tasks/{}/final?saved=1",
                percent_encoding::utf8_percent_encode(
                    &external_id,
                    percent_encoding::NON_ALPHANUMERIC
                )
            );
            Ok(Redirect::to(&to).into_response())
        }
        Err(errors) => {
            let page = page(
                &state,
                page_user,
                &lead,
                batch_id,
                &external_id,
                None,
                Some(form),
                errors,
                None,
            )
            .await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
    }
}

/// `POST /batches/{id}/tasks/{external_id}/final/remove`: withdraws the final answer.
pub(super) async fn remove(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
    CsrfForm(_): CsrfForm<FinalForm>,
) -> AppResult<Response> {
    let batch = crate::services::batches::led(state.store(), batch_id, &lead).await?;
    adjudication::remove(state.store(), &batch, &external_id, &lead).await?;
    let to = format!(
        "/batches/{batch_id}/tasks/{}/final?saved=removed",
        percent_encoding::utf8_percent_encode(&external_id, percent_encoding::NON_ALPHANUMERIC)
    );
    Ok(Redirect::to(&to).into_response())
}

/// `answers` with every question the rubric asks present, those it lacks as `null` (an
/// explanation, or a question without a metrics role, which no aggregate gives): the
/// form shows the lead all there is to answer.
fn with_every_question(
    rubric: &verdict_core::rubric::Rubric,
    answers: serde_json::Value,
) -> serde_json::Value {
    use serde_json::{Map, Value};
    use verdict_core::rubric::Slot;
    let mut out = match answers {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    for slot in rubric.slots() {
        if !matches!(slot, Slot::Asked { .. }) {
            continue;
        }
        let holder = match slot.side() {
            Some(side) => match out
                .entry(side.key())
                .or_insert_with(|| Value::Object(Map::new()))
            {
                Value::Object(inner) => inner,
                _ => continue,
            },
            None => &mut out,
        };
        holder.entry(slot.key()).or_insert(Value::Null);
        if let Some(key) = slot.explanation_key() {
            holder.entry(key).or_insert(Value::Null);
        }
    }
    Value::Object(out)
}
