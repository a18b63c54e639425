//! Where a scenario's processor time went, read from `/proc` at its start and its end:
//! the machine's busy time, the server's (in all and thread by thread), PostgreSQL's
//! processes' and the benchmark's own, the load generator, which shares the same cores.
//! A thread at one full core is a bound no other change moves; a machine busy on both
//! cores says the figure is bound by the processor, and who holds it.
//!
//! Linux only, as the rest of the benchmark (it reads `/proc` for memory too). Times are
//! in the kernel's clock ticks, read with `getconf CLK_TCK`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

/// Clock ticks per second of `/proc`'s times.
fn ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// A process's or thread's `stat` line: its name and its user and system time. The
/// name is in parentheses and may hold spaces, so the fields are counted after it.
fn stat(path: &str) -> Option<(String, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text[open + 1..close].to_owned();
    // After the name: state (field 3) ... utime is field 14, stime field 15.
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// The machine's busy and total ticks, over all its processors, and how many there are.
fn machine() -> (u64, u64, usize) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let mut lines = text.lines();
    let all: Vec<u64> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse().ok())
        .collect();
    let cores = lines.filter(|l| l.starts_with("cpu")).count().max(1);
    // user nice system idle iowait irq softirq steal (guest time is counted in user).
    let field = |i: usize| all.get(i).copied().unwrap_or(0);
    let idle = field(3) + field(4);
    let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
    (busy, busy + idle, cores)
}

/// PostgreSQL's processes' ticks, summed (the server and every backend there is now; a
/// backend that ends within the window takes its time with it).
fn postgres() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| stat(&format!("{}/stat", e.path().display())))
        .filter(|(name, _)| name == "postgres")
        .map(|(_, t)| t)
        .sum()
}

struct Snapshot {
    at: Instant,
    machine: (u64, u64, usize),
    /// The server's process in all (every thread it has had, ended ones too).
    server: u64,
    /// Its threads now, by id: name and ticks.
    threads: HashMap<u32, (String, u64)>,
    postgres: u64,
    bench: u64,
}

impl Snapshot {
    fn take(server: u32) -> Self {
        let mut threads = HashMap::new();
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{server}/task")) {
            for e in dir.filter_map(|e| e.ok()) {
                let Ok(tid) = e.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                if let Some(s) = stat(&format!("{}/stat", e.path().display())) {
                    threads.insert(tid, s);
                }
            }
        }
        Self {
            at: Instant::now(),
            machine: machine(),
            server: stat(&format!("/proc/{server}/stat")).map_or(0, |(_, t)| t),
            threads,
            postgres: postgres(),
            bench: stat("/proc/self/stat").map_or(0, |(_, t)| t),
        }
    }
}

/// Watches the server `pid` from now until [`CpuWatch::stop`].
pub struct CpuWatch {
    pid: u32,
    before: Snapshot,
}

impl CpuWatch {
    pub fn start(pid: u32) -> Self {
        Self {
            pid,
            before: Snapshot::take(pid),
        }
    }

    pub fn stop(self) -> CpuUse {
        let after = Snapshot::take(self.pid);
        let before = &self.before;
        let seconds = after.at.duration_since(before.at).as_secs_f64().max(1e-9);
        let tick = ticks_per_second();
        // Ticks over the window as cores kept busy on average.
        let cores = |ticks: u64| ticks as f64 / tick / seconds;
        let (busy, total, count) = after.machine;
        let machine = count as f64 * busy.saturating_sub(before.machine.0) as f64
            / total.saturating_sub(before.machine.1).max(1) as f64;
        let mut threads: Vec<(String, f64)> = after
            .threads
            .iter()
            .map(|(tid, (name, t))| {
                let was = before.threads.get(tid).map_or(0, |(_, t)| *t);
                (name.clone(), cores(t.saturating_sub(was)))
            })
            .collect();
        threads.sort_by(|a, b| b.1.total_cmp(&a.1));
        let server = cores(after.server.saturating_sub(before.server));
        CpuUse {
            seconds,
            cores: count,
            machine,
            server,
            threads,
            postgres: cores(after.postgres.saturating_sub(before.postgres)),
            bench: cores(after.bench.saturating_sub(before.bench)),
        }
    }
}

/// Processor time over a window, each as the number of cores it kept busy on average.
#[derive(Debug, Clone, Default)]
pub struct CpuUse {
    pub seconds: f64,
    /// The machine's processors.
    pub cores: usize,
    /// The whole machine, every process.
    pub machine: f64,
    /// The server's process, all its threads (those that ended within the window too).
    pub server: f64,
    /// The server's threads alive at the end, busiest first, by the name the runtime or
    /// the library gave them (Linux keeps its first 15 bytes).
    pub threads: Vec<(String, f64)>,
    pub postgres: f64,
    /// This benchmark's process: the load generator and the client.
    pub bench: f64,
}

impl CpuUse {
    /// The server's busiest threads, the rest summed: `` `verdict-async` 0.98, ... ``.
    pub fn busiest(&self, shown: usize) -> String {
        let mut out = String::new();
        for (name, cores) in self.threads.iter().take(shown) {
            if *cores < 0.005 {
                break;
            }
            if !out.is_empty() {
                out.push_str(", ");
            }
            let _ = write!(out, "`{name}` {cores:.2}");
        }
        let listed: f64 = self.threads.iter().take(shown).map(|(_, c)| c).sum();
        let rest = self.server - listed;
        if rest >= 0.005 {
            let _ = write!(out, ", the rest {rest:.2}");
        }
        if out.is_empty() {
            out.push('-');
        }
        out
    }

    /// One row of the report's table (see [`HEADER`]).
    pub fn row(&self, scenario: &str, database: &str) -> String {
        format!(
            "| {scenario} | {database} | {:.1} s | {:.2} of {} | {:.2} | {} | {} | {:.2} |\n",
            self.seconds,
            self.machine,
            self.cores,
            self.server,
            self.busiest(4),
            if database == "SQLite" {
                "-".to_owned()
            } else {
                format!("{:.2}", self.postgres)
            },
            self.bench,
        )
    }
}

/// The columns of [`CpuUse::row`].
pub const HEADER: [&str; 8] = [
    "scenario",
    "database",
    "window",
    "machine busy (cores)",
    "verdict",
    "verdict's busiest threads",
    "PostgreSQL",
    "load generator",
];
