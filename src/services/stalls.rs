//! A batch's stalls (see [`verdict_core::stall`]): its tasks that need more ratings than
//! the people who could take them now can give, grouped by who could take them, each
//! group with its reason and what would unstick it. Read live, so a stall shows at the
//! next look after the `next` that left it, and clears as soon as someone who could take
//! the tasks is added.

use std::collections::BTreeSet;

use super::ServiceResult;
use crate::store::Store;
use crate::store::stalls::{Candidate, Tasks};
use verdict_core::batch::Batch;
use verdict_core::qualification::State;
use verdict_core::routing::Routing;
use verdict_core::stall::{Reason, Stalled, StalledGroup};

/// How many stuck tasks' external ids are kept to show.
pub const FIRST_SHOWN: usize = 10;

/// Batch `batch`'s stuck tasks; none for a batch that is not open.
pub async fn stalled(store: &Store, batch: &Batch) -> ServiceResult<Stalled> {
    let mut stalled = Stalled::default();
    if !batch.state.is_open() {
        return Ok(stalled);
    }
    let (able, disqualified) = candidates(store, batch).await?;
    let strict = batch.route_by.is_some() && batch.routing == Routing::Strict;
    // Groups by key, tasks without one first.
    let mut keys = if strict {
        store.open_route_keys(batch.id).await?
    } else {
        vec![None]
    };
    keys.sort();
    let limit = FIRST_SHOWN as i64;
    for key in keys {
        // Who could take the group's tasks: anyone, or under strict routing those with the
        // key among the skills a lead set (a task without a key is anyone's).
        let fits = |c: &&Candidate| {
            key.as_deref().is_none_or(|k| {
                verdict_core::routing::skills_for(Routing::Strict, &c.skills, &c.declared_skills)
                    .iter()
                    .any(|s| s == k)
            })
        };
        let people: Vec<uuid::Uuid> = able.iter().filter(fits).map(|c| c.id).collect();
        let which = match (&key, strict) {
            (_, false) => Tasks::All,
            (Some(k), true) => Tasks::Key(k),
            (None, true) => Tasks::NoKey,
        };
        let stuck = store
            .stuck_tasks(batch.id, batch.overlap, which, &people, limit)
            .await?;
        if stuck.tasks == 0 {
            continue;
        }
        let barred = disqualified.iter().filter(fits).count();
        let reason = Reason::of(key.as_deref().filter(|_| strict), people.len(), barred);
        let group = StalledGroup::new(key, stuck.tasks, reason, stuck.short);
        stalled.add(group, stuck.first, FIRST_SHOWN);
    }
    Ok(stalled)
}

/// The people who could rate batch `batch`, split into those who still may (`.0`) and
/// those who failed its qualification (`.1`).
async fn candidates(
    store: &Store,
    batch: &Batch,
) -> ServiceResult<(Vec<Candidate>, Vec<Candidate>)> {
    let candidates = store.batch_candidates(batch.id).await?;
    let failed: BTreeSet<String> = match &batch.qualification {
        Some(q) => super::qualification::standings(store, batch.id, q)
            .await?
            .into_iter()
            .filter(|(_, standing)| standing.state == State::Failed)
            .map(|(name, _)| name)
            .collect(),
        None => BTreeSet::new(),
    };
    Ok(candidates
        .into_iter()
        .partition(|c| !failed.contains(&c.username)))
}

/// The skills batch `batch` routes by (see [`verdict_core::routing::skills_for`]) of each
/// person who could take its tasks now: what `metrics.routing.unmatched` is counted from,
/// so it names the keys of the same tasks the stalls call `no_rater_with_skill`.
pub async fn able_skills(store: &Store, batch: &Batch) -> ServiceResult<Vec<Vec<String>>> {
    let (able, _) = candidates(store, batch).await?;
    Ok(able
        .iter()
        .map(|c| verdict_core::routing::skills_for(batch.routing, &c.skills, &c.declared_skills))
        .collect())
}

/// Looks at every open batch someone asked `batch.stalled` of, and sends the event for
/// each that has stalled since it was last looked at (and notes those that no longer
/// are, so their next stall is sent too). How many were sent.
pub async fn report(store: &Store) -> ServiceResult<usize> {
    let mut sent = 0;
    for id in store.stall_watched_batches().await? {
        let Some(batch) = store.batch(id).await? else {
            continue;
        };
        let stalled = stalled(store, &batch).await?;
        let data = serde_json::json!({
            "name": batch.name,
            "tasks": stalled.tasks,
            "reasons": stalled.reasons,
            "groups": stalled.groups,
        });
        if store
            .note_stall(id, stalled.tasks, data, chrono::Utc::now())
            .await?
        {
            sent += 1;
        }
    }
    Ok(sent)
}
