//! The external tools some tests drive (helm, kubectl, openapi-generator, schemathesis,
//! chromium): where they are looked up, and what a test does without one. `.ci/run` installs
//! the PyPI ones into `~/.cache/kubeocean-rs/venv`. A test that misses its tool prints a notice
//! and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails with the install
//! command.

use std::path::PathBuf;

/// Set (to anything but `0`) where a missing tool is a failure rather than a skip.
pub const REQUIRE_TOOLS_ENV: &str = "KUBEOCEAN_REQUIRE_TOOLS";

/// Whether a missing tool fails the test (CI) rather than skipping it.
pub fn tools_required() -> bool {
    std::env::var(REQUIRE_TOOLS_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `name` in a folder of PATH.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// `name` in the tools virtualenv `.ci/run` creates (`~/.cache/kubeocean-rs/venv/bin`).
pub fn venv_bin(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("HOME")?)
        .join(".cache/kubeocean-rs/venv/bin")
        .join(name);
    path.is_file().then_some(path)
}

/// What a test does when `missing` (what it lacks): under [`REQUIRE_TOOLS_ENV`] it panics
/// with `install`, else it prints a skip notice and the test returns.
pub fn skip_or_fail(test: &str, missing: &str, install: &str) {
    assert!(
        !tools_required(),
        "{REQUIRE_TOOLS_ENV} is set but {missing}; install: {install}"
    );
    eprintln!("skipping {test}: {missing} (install: {install})");
}
