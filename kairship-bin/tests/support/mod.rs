//! Shared by the console's browser tests: a `kairship sandbox` child process, a W3C WebDriver
//! session on chromedriver driving a real Chromium, and [`SignedIn`], the two together with
//! the admin signed in (what every console test starts from).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use kube_sandbox::testing::process::Background;
use kube_sandbox::testing::tools::{on_path, skip_or_fail};
use serde_json::{Value, json};

mod forms;

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use forms::*;

/// How long the sandbox may take to come up, and anything the page should show to appear.
pub const LIMIT: Duration = Duration::from_secs(120);
pub const P: &str = "/apis/kairship.io/v1alpha1";
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

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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

/// A W3C WebDriver session on chromedriver.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    _driver: Background,
}

impl Browser {
    pub async fn start(chromium: &Path, chromedriver: &Path) -> Browser {
        let port = free_port();
        let mut command = Command::new(chromedriver);
        command.arg(format!("--port={port}")).stderr(Stdio::null());
        let driver = Background::spawn(command);
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + LIMIT;
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready
                && r.json::<Value>().await.unwrap()["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--window-size=1280,900", "--disable-dev-shm-usage"]
            }
        }}});
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"))
            .to_owned();
        Browser {
            http,
            session: format!("{base}/session/{session}"),
            _driver: driver,
        }
    }

    pub async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.session);
        let req = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body),
        };
        let answer: Value = req.send().await.unwrap().json().await.unwrap();
        let value = answer["value"].clone();
        assert!(
            value.get("error").is_none(),
            "WebDriver {method} {path}: {value}"
        );
        value
    }

    pub async fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url })).await;
    }

    pub async fn url(&self) -> String {
        self.call("GET", "/url", Value::Null)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn find_all(&self, css: &str) -> Vec<String> {
        self.call(
            "POST",
            "/elements",
            json!({"using": "css selector", "value": css}),
        )
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[ELEMENT].as_str().unwrap().to_owned())
        .collect()
    }

    /// The first element matching `css`, waiting for it to appear.
    pub async fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(e) = self.find_all(css).await.into_iter().next() {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no {css} on {}:\n{}",
                self.url().await,
                self.source().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.call("POST", &format!("/element/{e}/click"), json!({}))
            .await;
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.call(
            "POST",
            &format!("/element/{e}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    pub async fn text(&self, css: &str) -> String {
        let e = self.find(css).await;
        self.call("GET", &format!("/element/{e}/text"), Value::Null)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn script(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": args}),
        )
        .await
    }

    pub async fn source(&self) -> String {
        self.call("GET", "/source", Value::Null)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until the page's URL ends with `suffix`.
    pub async fn wait_url(&self, suffix: &str) {
        let deadline = Instant::now() + LIMIT;
        loop {
            let url = self.url().await;
            if url.ends_with(suffix) {
                return;
            }
            assert!(Instant::now() < deadline, "still at {url}, not {suffix}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `css`'s text satisfies `ok`, and returns it.
    pub async fn wait_text(&self, css: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            // The element may be swapped out between finding and reading it.
            let text = self
                .script(
                    "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
                    json!([css]),
                )
                .await;
            if let Some(t) = text.as_str()
                && ok(t)
            {
                return t.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "{css} never showed what was expected; last: {text}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn screenshot(&self, dir: &Path, name: &str) {
        let png = self.call("GET", "/screenshot", Value::Null).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        std::fs::write(dir.join(format!("{name}.png")), bytes).unwrap();
    }

    /// The session cookie's value, as the browser holds it.
    pub async fn session_cookie(&self) -> Option<String> {
        let cookies = self.call("GET", "/cookie", Value::Null).await;
        cookies
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "kairship_session")
            .map(|c| {
                assert_eq!(c["httpOnly"], true, "{c}");
                assert_eq!(c["sameSite"], "Strict", "{c}");
                assert_eq!(c["path"], "/ui", "{c}");
                c["value"].as_str().unwrap().to_owned()
            })
    }

    /// Every resource the page loaded, and the page itself, came from `origin`.
    pub async fn assert_same_origin(&self, origin: &str) {
        let urls = self
            .script(
                "return performance.getEntriesByType('navigation')\
                   .concat(performance.getEntriesByType('resource')).map(e => e.name);",
                json!([]),
            )
            .await;
        let urls = urls.as_array().unwrap();
        assert!(!urls.is_empty());
        for u in urls {
            let u = u.as_str().unwrap();
            assert!(u.starts_with(origin), "{u} is not on {origin}");
        }
    }

    pub async fn sign_in(&self, base: &str, token: &str) {
        self.goto(&format!("{base}/ui/")).await;
        self.wait_url("/ui/signin").await;
        self.type_into("#token", token).await;
        self.click("#signin").await;
        self.wait_url("/ui/instances").await;
    }

    pub async fn quit(&self) {
        let _ = self.http.delete(&self.session).send().await;
    }
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
