//! Two `kairship apiserver` processes on one sandbox host behind one address (a TCP
//! round-robin in this test, one backend per connection): a console session made on one
//! replica opens on both, its CSRF token is the same everywhere, and sign-out on one replica
//! ends a copy of the cookie on the other. The session key Secret is created by the API
//! server; a key another replica adds is picked up when a cookie names it.
#![allow(clippy::unwrap_used)]

#[path = "../../kairship-core/tests/common/mod.rs"]
mod common;
mod support;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kairship_core::api::BearerToken;
use kairship_core::console::session::{KeyRing, Session, SessionKey, unix_now};
use kube::Api;
use kube::api::PostParams;
use reqwest::StatusCode;
use support::{Process, csrf_in, free_addr};

const LIMIT: Duration = Duration::from_secs(60);
const TOKEN: &str = "alice-token";
const SECRET: &str = "kairship-console-session";

fn spawn_apiserver(dir: &std::path::Path, listen: SocketAddr) -> Process {
    let child = Command::new(env!("CARGO_BIN_EXE_kairship"))
        .args([
            "apiserver",
            "--metrics-addr=127.0.0.1:0",
            "--probe-addr=127.0.0.1:0",
            "--console-session-namespace=default",
            "--log-level=warn",
        ])
        .arg(format!("--listen={listen}"))
        .arg(format!(
            "--host-kubeconfig={}",
            dir.join("host.kubeconfig").display()
        ))
        .arg(format!("--token-file={}", dir.join("tokens.csv").display()))
        .arg(format!(
            "--authorization-policy-file={}",
            dir.join("policy").display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Process(child)
}

/// Accepts on one address and hands each connection to the next backend in turn, recording
/// which backend each connection went to.
async fn round_robin(backends: [SocketAddr; 2]) -> (SocketAddr, Arc<Mutex<Vec<usize>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(Mutex::new(Vec::new()));
    let log = served.clone();
    tokio::spawn(async move {
        let mut next = 0usize;
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let backend = next % 2;
            next += 1;
            log.lock().unwrap().push(backend);
            let to = backends[backend];
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, served)
}

/// One request per connection (so the round-robin alternates), redirects not followed.
fn http() -> reqwest::Client {
    kube_kit::client::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

async fn wait_ready(http: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Ok(r) = http.get(format!("{base}/ui/signin")).send().await
            && r.status() == StatusCode::OK
        {
            return;
        }
        assert!(Instant::now() < deadline, "{base} did not come up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The session cookie a sign-in answer sets.
fn session_cookie(response: &reqwest::Response) -> String {
    let set = response
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .unwrap()
        .to_str()
        .unwrap();
    let value = set
        .split(';')
        .next()
        .unwrap()
        .strip_prefix("kairship_session=")
        .unwrap();
    value.to_owned()
}

/// A console page with `cookie`: `Some((html))` when signed in, `None` when sent to sign in.
async fn page(http: &reqwest::Client, base: &str, cookie: &str) -> Option<String> {
    let r = http
        .get(format!("{base}/ui/instances"))
        .header("cookie", format!("kairship_session={cookie}"))
        .send()
        .await
        .unwrap();
    match r.status() {
        StatusCode::OK => Some(r.text().await.unwrap()),
        StatusCode::SEE_OTHER => {
            assert_eq!(r.headers()["location"], "/ui/signin");
            None
        }
        other => panic!("{other}: {}", r.text().await.unwrap()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_survive_round_robin_and_sign_out_ends_them_everywhere() {
    let host = host().await;
    let hc = host.client();
    let dir = std::env::temp_dir().join(format!("kairship-replicas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _served = host
        .serve(kube_sandbox::ServeOptions {
            kubeconfig_path: Some(dir.join("host.kubeconfig")),
            ..kube_sandbox::ServeOptions::default()
        })
        .await
        .unwrap();
    std::fs::write(
        dir.join("tokens.csv"),
        format!("{TOKEN},alice,1,\"devs\"\n"),
    )
    .unwrap();
    std::fs::write(dir.join("policy"), "user:alice * *\n").unwrap();

    let addrs = [free_addr(), free_addr()];
    let _a = spawn_apiserver(&dir, addrs[0]);
    let _b = spawn_apiserver(&dir, addrs[1]);
    let replica = |i: usize| format!("http://{}", addrs[i]);
    let http = http();
    for i in 0..2 {
        wait_ready(&http, &replica(i)).await;
    }
    let (front, served) = round_robin(addrs).await;
    let front = format!("http://{front}");

    // Sign in through the shared address; the bearer token is not in the cookie's text.
    let signin = http
        .post(format!("{front}/ui/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(signin.status(), StatusCode::SEE_OTHER);
    let cookie = session_cookie(&signin);
    assert!(!cookie.contains(TOKEN));

    // The API server made the key Secret: one key, the one the cookie names.
    let secrets: Api<Secret> = Api::namespaced(hc.clone(), "default");
    let stored = secrets.get(SECRET).await.unwrap();
    let ids: Vec<String> = stored.data.clone().unwrap().into_keys().collect();
    assert_eq!(ids.len(), 1);
    assert!(cookie.starts_with(&format!("{}.", ids[0])));

    // 20 page loads alternate replicas and all see the session, with one CSRF token.
    served.lock().unwrap().clear();
    let mut csrf = None;
    for n in 0..20 {
        let html = page(&http, &front, &cookie)
            .await
            .unwrap_or_else(|| panic!("page load {n} lost the session"));
        assert!(html.contains("alice"), "page load {n} names the user");
        assert!(!html.contains(TOKEN), "the token never reaches HTML");
        let token = csrf_in(&html);
        assert_eq!(csrf.get_or_insert_with(|| token.clone()), &token);
    }
    let backends = served.lock().unwrap().clone();
    assert_eq!(backends.len(), 20);
    assert_eq!(backends.iter().filter(|b| **b == 0).count(), 10);
    assert_eq!(backends.iter().filter(|b| **b == 1).count(), 10);

    // A key another replica adds (as a rotation would) opens on both replicas as soon as a
    // cookie names it; the older key still opens the first cookie.
    let newer = SessionKey::generate(&ring::rand::SystemRandom::new(), unix_now() + 1).unwrap();
    let mut rotated = stored.clone();
    rotated
        .data
        .as_mut()
        .unwrap()
        .insert(newer.id.clone(), ByteString(newer.bytes().to_vec()));
    secrets
        .replace(SECRET, &PostParams::default(), &rotated)
        .await
        .unwrap();
    let sealed_new = KeyRing::new(vec![newer])
        .seal(
            &Session {
                id: "f".repeat(64),
                token: BearerToken::new(TOKEN),
                csrf: "c".repeat(64),
                expires: unix_now() + 600,
            },
            &ring::rand::SystemRandom::new(),
        )
        .unwrap();
    for i in 0..2 {
        assert!(page(&http, &replica(i), &sealed_new).await.is_some());
        assert!(page(&http, &replica(i), &cookie).await.is_some());
    }
    // A forged cookie (the key id of a real key, another key's ciphertext) is refused.
    let forged = KeyRing::new(vec![SessionKey::from_stored(&ids[0], &[7u8; 32]).unwrap()])
        .seal(
            &Session {
                id: "e".repeat(64),
                token: BearerToken::new(TOKEN),
                csrf: "c".repeat(64),
                expires: unix_now() + 600,
            },
            &ring::rand::SystemRandom::new(),
        )
        .unwrap();
    assert!(page(&http, &replica(1), &forged).await.is_none());

    // Sign-out needs the session's CSRF token, on whichever replica.
    let signout = |base: String, fields: Vec<(&'static str, String)>| {
        let http = http.clone();
        let cookie = cookie.clone();
        async move {
            http.post(format!("{base}/ui/signout"))
                .header("cookie", format!("kairship_session={cookie}"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(
                    fields
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join("&"),
                )
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(
        signout(replica(0), vec![("_csrf", "0".repeat(64))]).await,
        StatusCode::FORBIDDEN
    );
    assert!(page(&http, &replica(1), &cookie).await.is_some());
    assert_eq!(
        signout(replica(0), vec![("_csrf", csrf.unwrap())]).await,
        StatusCode::SEE_OTHER
    );
    assert!(page(&http, &replica(0), &cookie).await.is_none());
    // The copy of the cookie is refused on the other replica once it reads the sign-out list.
    let deadline = Instant::now() + LIMIT;
    while page(&http, &replica(1), &cookie).await.is_some() {
        assert!(
            Instant::now() < deadline,
            "replica 1 still accepts the session"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Other sessions are untouched.
    assert!(page(&http, &replica(1), &sealed_new).await.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}
