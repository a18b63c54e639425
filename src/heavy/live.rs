//! Each batch's metrics kept folded in memory, per instance, and brought up to date on
//! every request from the ratings changed since (see [`RatingsMark`]):
//! the first request for a batch reads all its ratings; each later one reads only what
//! changed, through this instance or any other, and folds that in. The figures are those
//! of a full count: [`Accumulator`] gives the same whatever order ratings come in.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use uuid::Uuid;

use crate::store::review::{RatingsFingerprint, RatingsMark};
use verdict_core::metrics::Accumulator;
use verdict_core::rubric::Classification;

/// How many batches an instance keeps folded. A batch of a million ratings takes about
/// 350 MiB (see BENCHMARKS.md); the least recently asked for goes first.
pub const MAX_BATCHES: usize = 4;

/// One batch's ratings, folded, and how far they were read.
pub struct Folded {
    pub acc: Accumulator,
    pub mark: RatingsMark,
    /// What the accumulator was made for: a batch whose rubric version or
    /// classifications differ is counted afresh.
    pub version: i32,
    pub classifications: Vec<Classification>,
    /// The batch's aggregated answers (majority vote and Dawid-Skene, which are not
    /// folded), with the fingerprint of the ratings they were worked out from (see
    /// [`Store::ratings_fingerprint`](crate::store::Store::ratings_fingerprint)): kept
    /// while no rating of the batch changes.
    pub aggregation: Option<(RatingsFingerprint, Aggregation)>,
}

/// The aggregated answers' summary per question, as the metrics show it.
pub type Aggregation =
    std::collections::BTreeMap<String, verdict_core::metrics::aggregate::QuestionAggregation>;

/// A batch's place in the cache: empty until its first count, and while a count that
/// failed part way is to be made again. Held for the whole of one request, so that two
/// requests for a batch do not both count it.
pub type Slot = Arc<tokio::sync::Mutex<Option<Folded>>>;

#[derive(Default)]
pub struct LiveMetrics {
    batches: Mutex<HashMap<Uuid, (Slot, Instant)>>,
}

impl LiveMetrics {
    /// The slot of `batch`, made if need be; when that makes more than [`MAX_BATCHES`],
    /// the one asked for least recently is dropped. (A scan of a few entries: no cache
    /// crate is needed for that.)
    pub fn slot(&self, batch: Uuid) -> Slot {
        let mut batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if let Some((slot, used)) = batches.get_mut(&batch) {
            *used = now;
            return Arc::clone(slot);
        }
        if batches.len() >= MAX_BATCHES {
            let oldest = batches
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(id, _)| *id);
            if let Some(oldest) = oldest {
                batches.remove(&oldest);
            }
        }
        let slot = Slot::default();
        batches.insert(batch, (Arc::clone(&slot), now));
        slot
    }
}
