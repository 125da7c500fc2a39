//! The shell commands of the docs, run as a reader would run them.

use std::path::Path;
use std::process::Command;

use kube_sandbox::testing::tools::{on_path, skip_or_fail};

/// The first ```` ```sh ```` block after `heading` in `doc`, pointed at a sandbox on `port`
/// (the docs name `127.0.0.1:8443`).
pub fn sh_block_after(doc: &str, heading: &str, port: u16) -> String {
    let section = &doc[doc
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in the doc"))..];
    let start = section.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let block = &section[start..];
    let block = &block[..block.find("```").expect("the block's end")];
    block.replace("127.0.0.1:8443", &format!("127.0.0.1:{port}"))
}

/// Whether curl and jq, which the docs' commands use, are on PATH; where they are not, the
/// notice (or, where the tools are required, the failure) of `skip_or_fail`.
pub fn curl_and_jq_or_skip(test: &str) -> bool {
    if on_path("curl").is_none() || on_path("jq").is_none() {
        skip_or_fail(test, "curl and jq are needed", "install curl and jq");
        return false;
    }
    true
}

/// Runs `script` with `bash -euo pipefail` in `dir`, `path_first` (where given) ahead of
/// PATH; it must succeed: what it printed.
pub fn run_bash(script: &str, dir: &Path, path_first: Option<&Path>) -> String {
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir);
    if let Some(first) = path_first {
        command.env(
            "PATH",
            format!(
                "{}:{}",
                first.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
    }
    let run = command.output().unwrap();
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}
