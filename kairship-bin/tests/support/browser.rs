//! A W3C WebDriver session on chromedriver driving a real Chromium, and what the console tests
//! read and do through it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use kube_sandbox::testing::process::Background;
use serde_json::{Value, json};

use super::{ELEMENT, LIMIT, free_port};

/// A W3C WebDriver session on chromedriver.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    _driver: Background,
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session through it.
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

    /// One WebDriver command of the session: its `value`, which must not be an error.
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

    /// Navigates to `url`.
    pub async fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url })).await;
    }

    /// The URL of the page shown.
    pub async fn url(&self) -> String {
        self.call("GET", "/url", Value::Null)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The elements matching `css` now (none is no error).
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

    /// Clicks the first element matching `css`, once it appears.
    pub async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.call("POST", &format!("/element/{e}/click"), json!({}))
            .await;
    }

    /// Types `text` into the first element matching `css`, once it appears.
    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.call(
            "POST",
            &format!("/element/{e}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    /// The rendered text of the first element matching `css`, once it appears.
    pub async fn text(&self, css: &str) -> String {
        let e = self.find(css).await;
        self.call("GET", &format!("/element/{e}/text"), Value::Null)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Runs `script` in the page with `args` (`arguments[i]`): what it returns.
    pub async fn script(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// The page's HTML as the browser holds it now.
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

    /// Writes a screenshot of the page to `<dir>/<name>.png`.
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

    /// Signs in to the console at `base` with the bearer `token`, ending on the instance list.
    pub async fn sign_in(&self, base: &str, token: &str) {
        self.goto(&format!("{base}/ui/")).await;
        self.wait_url("/ui/signin").await;
        self.type_into("#token", token).await;
        self.click("#signin").await;
        self.wait_url("/ui/instances").await;
    }

    /// Presses Sign out on the page shown and waits for the sign-in page.
    pub async fn sign_out(&self) {
        self.click("#signout").await;
        self.wait_url("/ui/signin").await;
    }

    /// The value of the form control `css`, or null where there is none.
    pub async fn value_of(&self, css: &str) -> Value {
        self.script(
            "const e = document.querySelector(arguments[0]); return e ? e.value : null;",
            json!([css]),
        )
        .await
    }

    /// The CSRF token of the page shown (its hidden `_csrf` field).
    pub async fn csrf(&self) -> String {
        self.script(
            "return document.querySelector('input[name=_csrf]').value;",
            json!([]),
        )
        .await
        .as_str()
        .unwrap()
        .to_owned()
    }

    /// Marks the loaded document, so that [`Browser::document_kept`] can tell later that the
    /// page refreshed itself rather than being reloaded.
    pub async fn mark_document(&self) {
        self.script("window.kairshipTestMark = 'kept'; return true;", json!([]))
            .await;
    }

    /// Whether the document marked by [`Browser::mark_document`] is still the one shown.
    pub async fn document_kept(&self) -> bool {
        self.script("return window.kairshipTestMark === 'kept';", json!([]))
            .await
            == true
    }

    /// Ends the WebDriver session (and with it the browser).
    pub async fn quit(&self) {
        let _ = self.http.delete(&self.session).send().await;
    }
}

/// The rows of a workload page's pods table: `(cluster, pod, phase, node)`.
pub async fn pods_shown(browser: &Browser) -> BTreeSet<Vec<String>> {
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#pods tr[data-pod]')].map(r => [\
               r.dataset.cluster, r.dataset.pod, r.querySelector('.phase').textContent,\
               r.querySelector('.node').textContent]);",
            json!([]),
        )
        .await;
    serde_json::from_value(rows).unwrap()
}
