//! A bound on heavy reads (metrics, exports) running at once. Each scans a whole batch; a
//! few leads looping them would otherwise take every core and database connection from
//! the raters. Beyond the bound a heavy read waits for its turn. Each batch's metrics are
//! also kept folded between reads ([`live`]), so that a read scans only what changed.
//!
//! Here rather than in `metrics` because the app state holds both, and `metrics` serves
//! its API from that state.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub mod live;

pub struct HeavyReads {
    permits: Arc<Semaphore>,
    in_flight: Arc<AtomicUsize>,
    /// The most that ever ran at once (for tests and diagnostics).
    peak: Arc<AtomicUsize>,
}

/// A turn to run one heavy read; the next waiting one starts when this is dropped.
pub struct Turn {
    _permit: OwnedSemaphorePermit,
    in_flight: Arc<AtomicUsize>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl HeavyReads {
    pub fn new(at_once: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(at_once.max(1))),
            in_flight: Arc::default(),
            peak: Arc::default(),
        }
    }

    /// Waits for a turn.
    pub async fn turn(&self) -> Turn {
        // The semaphore is never closed, so acquiring cannot fail.
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the heavy-read semaphore is never closed");
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        Turn {
            _permit: permit,
            in_flight: self.in_flight.clone(),
        }
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}
