//! Who works a run: the name a process writes in a run's worker column, and whether the
//! process a name stands for is provably gone.
//!
//! A name is `host:pid:place:nonce`. `place` tells one process table from another: the
//! machine's boot (`/proc/sys/kernel/random/boot_id`) and the PID namespace
//! (`/proc/self/ns/pid`), hashed; two containers with one host name, or one machine
//! after a reboot, are different places. A worker is gone when its place is this
//! process's and no process has its PID (`/proc/<pid>` is missing). Anywhere else (another
//! machine, a platform without `/proc`) nothing is provable, and the run is taken over
//! only once its worker has been silent for the lease.

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// This process's name, new each call (the nonce tells two `Judging`s of one process
/// apart).
pub fn this_process() -> String {
    format!(
        "{}:{}:{}:{}",
        host(),
        std::process::id(),
        place().unwrap_or_else(|| "-".into()),
        Uuid::new_v4().simple()
    )
}

/// A worker's name in words: `process 1234 on build-7`, or the name as it is when it
/// was written otherwise.
pub fn describe(worker: &str) -> String {
    match parse(worker) {
        Some((host, pid, _)) => format!("process {pid} on {host}"),
        None => worker.to_owned(),
    }
}

/// Whether the process `worker` names is provably gone: it ran in this process table,
/// and no process has its PID now.
pub fn gone(worker: &str) -> bool {
    let (Some((_, pid, their_place)), Some(here)) = (parse(worker), place()) else {
        return false;
    };
    let proc = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    // Where `/proc` hides other users' processes (`hidepid`), PID 1 is hidden too, and
    // a missing PID proves nothing.
    their_place == here && pid != std::process::id() && proc(1) && !proc(pid)
}

/// The host, PID and place of a worker's name; `None` for a name of another form
/// (written before names carried them).
fn parse(worker: &str) -> Option<(&str, u32, &str)> {
    let mut parts = worker.rsplitn(4, ':');
    let (_nonce, place, pid, host) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    Some((host, pid.parse().ok()?, place))
}

/// The machine's name, without the `:` that separates the parts of a worker's name.
fn host() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let name = name.trim().replace(':', "-");
    if name.is_empty() {
        "unknown-host".into()
    } else {
        name
    }
}

/// This process table: the boot and the PID namespace, hashed short; `None` where they
/// cannot be read.
fn place() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let digest = Sha256::new()
        .chain_update(boot.trim())
        .chain_update(namespace.to_string_lossy().as_bytes())
        .finalize();
    Some(digest[..6].iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_carries_host_pid_and_place() {
        let me = this_process();
        let (host, pid, _) = parse(&me).expect("parses");
        assert_eq!(pid, std::process::id());
        assert_eq!(describe(&me), format!("process {pid} on {host}"));
        assert_ne!(this_process(), me, "each name is new");
        // An old name (`pid:uuid`) says nothing provable.
        assert_eq!(parse("123:0b7a"), None);
        assert!(!gone("123:0b7a"));
        assert_eq!(describe("123:0b7a"), "123:0b7a");
    }

    #[test]
    fn only_a_missing_pid_in_this_place_is_gone() {
        let me = this_process();
        assert!(!gone(&me), "this process is here");
        let Some(here) = place() else { return };
        let host = host();
        // PIDs never go this high on Linux (the most is 2^22).
        let dead = format!("{host}:{}:{here}:nonce", 1u32 << 30);
        assert!(gone(&dead));
        let elsewhere = format!("{host}:{}:0000aa:nonce", 1u32 << 30);
        assert!(!gone(&elsewhere), "another process table proves nothing");
        let init = format!("{host}:1:{here}:nonce");
        assert!(!gone(&init), "PID 1 is alive");
    }
}
