//! Shared by the kairship binary's tests (each test binary compiles its own copy, so not every
//! item is used everywhere): a `kairship sandbox` child process, a W3C WebDriver session on
//! chromedriver driving a real Chromium ([`browser`]), and [`SignedIn`], the two together with
//! the admin signed in (what every console test starts from); the REST API as a bearer reaches
//! it ([`rest`]), console forms sent without the browser ([`forms`]), kube-rs clients and
//! kubeconfigs of the sandbox's clusters ([`clusters`]), and the docs' shell commands
//! ([`docs`]).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kube_sandbox::testing::process::Background;
use kube_sandbox::testing::tools::{on_path, skip_or_fail};

mod browser;
mod clusters;
mod docs;
mod forms;
mod rest;

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use browser::*;
#[allow(unused_imports)]
pub use clusters::*;
#[allow(unused_imports)]
pub use docs::*;
#[allow(unused_imports)]
pub use forms::*;
#[allow(unused_imports)]
pub use rest::*;

/// How long the sandbox may take to come up, and anything the page should show to appear.
pub const LIMIT: Duration = Duration::from_secs(120);
/// The REST API's path prefix.
pub const P: &str = "/apis/kairship.io/v1alpha1";
/// The key of an element reference in a W3C WebDriver answer.
pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A running `kairship sandbox`, killed and its directory removed however the test ends.
pub struct Sandbox {
    pub _process: Background,
    pub dir: PathBuf,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A child process, killed and reaped however the test ends.
pub struct Process(pub std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback address with a port free at the time of asking.
pub fn free_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    free_addr().port()
}

/// Starts `kairship sandbox` (with `extra` arguments) and waits for `--- running`.
pub fn start_sandbox(dir: &Path, port: u16, extra: &[&str]) -> Sandbox {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kairship"));
    command
        .arg("sandbox")
        .arg(format!("--dir={}", dir.display()))
        .arg(format!("--api-port={port}"))
        .args(extra)
        .stderr(Stdio::null());
    let mut process = Background::spawn(command);
    process.wait_for_line(LIMIT, |line| line.starts_with("--- running"));
    Sandbox {
        _process: process,
        dir: dir.to_owned(),
    }
}

/// An HTTP client of the `kairship sandbox --tls` in `dir`: it trusts only the sandbox's CA
/// and follows no redirects.
pub fn tls_client(dir: &Path) -> reqwest::Client {
    let ca = std::fs::read(dir.join("kairship-ca.crt")).unwrap();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tls_certs_only([reqwest::Certificate::from_pem(&ca).unwrap()])
        .build()
        .unwrap()
}

/// chromium and chromedriver, or `None` (skip) when either is missing and the tools are not
/// required.
pub fn browser_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    let chromium = on_path("chromium").or_else(|| on_path("chromium-browser"));
    let driver = on_path("chromedriver");
    if let (Some(c), Some(d)) = (chromium.clone(), driver.clone()) {
        return Some((c, d));
    }
    skip_or_fail(
        test,
        &format!("chromium ({chromium:?}) or chromedriver ({driver:?}) is missing"),
        "apt-get install -y chromium chromium-driver",
    );
    None
}

/// `kairship sandbox` (instances `karmada-a` and `karmada-b` with their members, the tokens
/// `admin.token` and `viewer.token` in its directory) and a Chromium signed in as the admin.
pub struct SignedIn {
    /// The sandbox's directory (tokens, kubeconfigs).
    pub dir: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The admin's bearer token.
    pub admin: String,
    /// The viewer's bearer token.
    pub viewer: String,
    /// Where screenshots go (`$TMPDIR/kairship-console-screenshots`).
    pub shots: PathBuf,
    /// The browser, signed in as the admin.
    pub browser: Browser,
    _sandbox: Sandbox,
}

impl SignedIn {
    /// Starts the sandbox in `$TMPDIR/kairship-<name>-<pid>` and the browser; `None` (after
    /// [`browser_or_skip`]'s notice) where chromium or chromedriver is missing.
    pub async fn start(test: &str, name: &str) -> Option<SignedIn> {
        let (chromium, chromedriver) = browser_or_skip(test)?;
        kube_kit::client::install_crypto_provider();
        let tmp = std::env::temp_dir();
        let dir = tmp.join(format!("kairship-{name}-{}", std::process::id()));
        let shots = tmp.join("kairship-console-screenshots");
        std::fs::create_dir_all(&shots).unwrap();
        let port = free_port();
        let sandbox = start_sandbox(&dir, port, &[]);
        let base = format!("http://127.0.0.1:{port}");
        let admin = std::fs::read_to_string(dir.join("admin.token")).unwrap();
        let viewer = std::fs::read_to_string(dir.join("viewer.token")).unwrap();
        let browser = Browser::start(&chromium, &chromedriver).await;
        browser.sign_in(&base, &admin).await;
        Some(SignedIn {
            dir,
            base,
            admin,
            viewer,
            shots,
            browser,
            _sandbox: sandbox,
        })
    }
}
