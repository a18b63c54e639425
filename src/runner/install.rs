//! Pyodide installed on first start, so that `verdict demo` and `verdict serve` run from
//! the repository give a working Python runner with no third step: when the default
//! folder (`vendor/node_modules/pyodide`) has no usable Pyodide, the folder beside it
//! holds the pinned lock file, and npm is on the PATH, `npm ci` installs exactly the
//! locked version there (what scripts/vendor-pyodide does), with a progress line. When it
//! cannot, one message says what to run. Either way the server starts: without Pyodide
//! only the Python runner is off.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::pyodide::find_version;

/// What became of the Pyodide the server is to serve.
#[derive(Debug, PartialEq, Eq)]
pub enum Installed {
    /// It was there already.
    Found,
    /// npm installed it now.
    Installed,
    /// It is not there and was not installed; the message says what to run.
    Missing(String),
}

/// Makes sure `dir` holds Pyodide, installing it with npm where `dir` is the vendored
/// package's folder of a checkout (`<vendor>/node_modules/pyodide` beside
/// `<vendor>/package-lock.json`) and `install` allows it. Messages go to stderr.
pub async fn ensure(dir: &Path, install: bool) -> Installed {
    if find_version(dir).is_ok() {
        return Installed::Found;
    }
    let outcome = match (install, vendor_of(dir)) {
        (false, _) => Installed::Missing(format!(
            "no Pyodide in {}, and installing it is switched off (--no-pyodide-install); \
             run scripts/vendor-pyodide, or point --pyodide-dir at an installed pyodide package",
            dir.display()
        )),
        (true, None) => Installed::Missing(format!(
            "no Pyodide in {}; install the pyodide npm package there (from a checkout: \
             scripts/vendor-pyodide), or point --pyodide-dir at an installed one",
            dir.display()
        )),
        (true, Some(vendor)) => npm_ci(&vendor, dir).await,
    };
    if let Installed::Missing(why) = &outcome {
        eprintln!("The Python code runner is off: {why}. JavaScript blocks still run.");
    }
    outcome
}

/// The checkout's `vendor` folder that `dir` is the Pyodide package of, if it is one.
fn vendor_of(dir: &Path) -> Option<PathBuf> {
    let modules = dir.parent()?;
    if dir.file_name()? != "pyodide" || modules.file_name()? != "node_modules" {
        return None;
    }
    let vendor = modules.parent()?;
    let vendor = if vendor.as_os_str().is_empty() {
        Path::new(".")
    } else {
        vendor
    };
    vendor
        .join("package-lock.json")
        .is_file()
        .then(|| vendor.to_owned())
}

/// The Pyodide version `vendor/package-lock.json` pins, for the progress line.
fn locked_version(vendor: &Path) -> Option<String> {
    let text = std::fs::read_to_string(vendor.join("package-lock.json")).ok()?;
    let lock: serde_json::Value = serde_json::from_str(&text).ok()?;
    lock["packages"]["node_modules/pyodide"]["version"]
        .as_str()
        .map(str::to_owned)
}

/// `npm ci` in `vendor`, with a spinner while it works; then `dir` must hold Pyodide.
/// Servers started at once from the same checkout take turns: the first to make the lock
/// file installs, the others wait for it to go and then find Pyodide there.
async fn npm_ci(vendor: &Path, dir: &Path) -> Installed {
    let _turn = match Turn::take(vendor.join(".pyodide-install.lock")).await {
        Ok(turn) => turn,
        Err(err) => {
            return Installed::Missing(format!(
                "cannot make the install lock in {} ({err}); run scripts/vendor-pyodide",
                vendor.display()
            ));
        }
    };
    if find_version(dir).is_ok() {
        return Installed::Found;
    }
    let version = locked_version(vendor).unwrap_or_else(|| "the pinned version".to_owned());
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message(format!(
        "Installing Pyodide {version} for the Python code runner (npm ci in {}, once; about 30 MB)",
        vendor.display()
    ));
    spinner.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    // std's process on a blocking thread: tokio is built without its process feature.
    let folder = vendor.to_owned();
    let run = tokio::task::spawn_blocking(move || {
        std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(folder)
            .stdin(std::process::Stdio::null())
            .output()
    })
    .await
    .unwrap_or_else(|err| Err(std::io::Error::other(err)));
    spinner.finish_and_clear();
    let script = "scripts/vendor-pyodide";
    match run {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Installed::Missing(format!(
            "Pyodide is not installed and npm is not there to install it; install Node.js \
             with npm (e.g. apt-get install npm), then run {script} or start verdict again"
        )),
        Err(err) => Installed::Missing(format!(
            "npm could not be started to install Pyodide ({err}); run {script} by hand"
        )),
        Ok(output) if !output.status.success() => {
            let said = String::from_utf8_lossy(&output.stderr);
            let last = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Installed::Missing(format!(
                "npm ci in {} failed ({}{}); run {script} by hand to see why",
                vendor.display(),
                output.status,
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {}", last.trim())
                }
            ))
        }
        Ok(_) => match find_version(dir) {
            Ok(found) => {
                eprintln!(
                    "Installed Pyodide {found} for the Python code runner in {} ({:.0?}).",
                    dir.display(),
                    started.elapsed()
                );
                Installed::Installed
            }
            Err(why) => Installed::Missing(format!("npm ci finished, but {why}")),
        },
    }
}

/// One install at a time in a folder: a lock file made with `create_new` (std's file
/// locks need a newer Rust than this crate supports), removed when the turn ends. A lock
/// file older than [`STALE_LOCK`] was left by an install that died, and is taken over.
/// (The sign-in tests install their OpenID provider with it too.)
pub struct Turn(PathBuf);

/// Longer than any install takes (npm ci of Pyodide takes seconds to a few minutes).
const STALE_LOCK: Duration = Duration::from_secs(15 * 60);

impl Turn {
    /// Waits for the turn at `path`, then holds it until dropped.
    pub async fn take(path: PathBuf) -> std::io::Result<Self> {
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(Self(path)),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|at| at.elapsed().ok());
                    if age.is_some_and(|age| age > STALE_LOCK) {
                        let _ = std::fs::remove_file(&path);
                    } else {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
                Err(err) => return Err(err),
            }
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_checkouts_vendored_package_folder_is_installed_into() {
        let root = tempfile::tempdir().unwrap();
        let vendor = root.path().join("vendor");
        std::fs::create_dir_all(&vendor).unwrap();
        let dir = vendor.join("node_modules").join("pyodide");
        assert_eq!(vendor_of(&dir), None, "no lock file beside it");
        std::fs::write(
            vendor.join("package-lock.json"),
            r#"{"packages": {"node_modules/pyodide": {"version": "314.0.7"}}}"#,
        )
        .unwrap();
        assert_eq!(vendor_of(&dir), Some(vendor.clone()));
        assert_eq!(locked_version(&vendor).as_deref(), Some("314.0.7"));
        assert_eq!(vendor_of(&root.path().join("elsewhere")), None);
        assert_eq!(vendor_of(&vendor.join("node_modules").join("other")), None);
        assert_eq!(
            vendor_of(Path::new("node_modules/pyodide")),
            None,
            "the working folder has no lock file"
        );
    }

    #[tokio::test]
    async fn one_install_at_a_time_and_the_lock_goes_with_its_turn() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join(".pyodide-install.lock");
        let first = Turn::take(path.clone()).await.unwrap();
        let waiting = tokio::spawn(Turn::take(path.clone()));
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert!(!waiting.is_finished(), "the second waits for the first");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("its turn comes")
            .unwrap()
            .unwrap();
        assert!(path.exists());
        drop(second);
        assert!(!path.exists(), "removed when the turn ends");
    }

    #[tokio::test]
    async fn switched_off_it_says_what_to_run_and_installs_nothing() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("node_modules").join("pyodide");
        match ensure(&dir, false).await {
            Installed::Missing(why) => {
                assert!(why.contains("scripts/vendor-pyodide"), "{why}");
                assert!(why.contains("--no-pyodide-install"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!dir.exists());
    }
}
