//! Console sign-in through an OpenID Connect issuer: a small issuer written for this test
//! (discovery, JWKS, an authorization endpoint that signs in a fixed user, a token endpoint
//! that checks the code, the redirect URI and the PKCE verifier, ES256 ID tokens) and a
//! `kairship apiserver` with `--oidc-*` flags on a sandbox host. The sign-in ends in a session
//! whose caller is the one the API maps the same ID token to as a bearer token.
#![allow(clippy::unwrap_used)]

#[path = "../../kairship-core/tests/common/mod.rs"]
mod common;
mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use reqwest::StatusCode;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use support::{Process, free_addr};

const LIMIT: Duration = Duration::from_secs(60);
const CLIENT_ID: &str = "kairship-console";
const EMAIL: &str = "alice@example.com";

/// What the issuer remembers of an authorization until its code is exchanged.
struct Grant {
    challenge: String,
    nonce: String,
    redirect_uri: String,
}

struct Issuer {
    url: String,
    key: EcdsaKeyPair,
    rng: SystemRandom,
    /// The callback URL registered for the client.
    redirect_uri: String,
    grants: Mutex<HashMap<String, Grant>>,
    /// Every ID token issued, newest last.
    issued: Mutex<Vec<String>>,
}

impl Issuer {
    fn jwk(&self) -> Value {
        let point = self.key.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": "test-key", "alg": "ES256", "use": "sig",
               "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
               "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
    }

    fn id_token(&self, nonce: &str) -> String {
        let now = jiff::Timestamp::now().as_second();
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": "test-key"}).to_string());
        let claims = URL_SAFE_NO_PAD.encode(
            json!({"iss": self.url, "aud": CLIENT_ID, "sub": "alice-sub", "email": EMAIL,
                   "email_verified": true, "groups": ["devs"], "nonce": nonce,
                   "iat": now, "exp": now + 3600})
            .to_string(),
        );
        let input = format!("{header}.{claims}");
        let signature = self.key.sign(&self.rng, input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

type Shared = Arc<Issuer>;

async fn discovery(State(issuer): State<Shared>) -> Response {
    axum::Json(json!({
        "issuer": issuer.url,
        "authorization_endpoint": format!("{}/authorize", issuer.url),
        "token_endpoint": format!("{}/token", issuer.url),
        "jwks_uri": format!("{}/keys", issuer.url),
        "response_types_supported": ["code"],
        "id_token_signing_alg_values_supported": ["ES256"],
    }))
    .into_response()
}

async fn keys(State(issuer): State<Shared>) -> Response {
    axum::Json(json!({"keys": [issuer.jwk()]})).into_response()
}

/// Signs the fixed user in at once and sends the browser back with a code.
async fn authorize(
    State(issuer): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let param = |k: &str| q.get(k).cloned().unwrap_or_default();
    if param("client_id") != CLIENT_ID
        || param("response_type") != "code"
        || param("code_challenge_method") != "S256"
        || param("redirect_uri") != issuer.redirect_uri
        || !param("scope").split(' ').any(|s| s == "openid")
    {
        return (
            StatusCode::BAD_REQUEST,
            format!("bad authorization request {q:?}"),
        )
            .into_response();
    }
    let code = format!("code-{}", issuer.grants.lock().unwrap().len());
    issuer.grants.lock().unwrap().insert(
        code.clone(),
        Grant {
            challenge: param("code_challenge"),
            nonce: param("nonce"),
            redirect_uri: param("redirect_uri"),
        },
    );
    let to = format!(
        "{}?code={code}&state={}",
        param("redirect_uri"),
        param("state")
    );
    (StatusCode::FOUND, [(http::header::LOCATION, to)]).into_response()
}

/// Exchanges a code once, for the client that asked for it, with the PKCE verifier.
async fn token(State(issuer): State<Shared>, body: String) -> Response {
    let form: HashMap<String, String> = body
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_owned(), percent_decode(v)))
        .collect();
    let param = |k: &str| form.get(k).cloned().unwrap_or_default();
    let refused = |error: &str| {
        (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error}))).into_response()
    };
    let Some(grant) = issuer.grants.lock().unwrap().remove(&param("code")) else {
        return refused("invalid_grant");
    };
    let challenge = URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        param("code_verifier").as_bytes(),
    ));
    if param("grant_type") != "authorization_code"
        || param("client_id") != CLIENT_ID
        || param("redirect_uri") != grant.redirect_uri
        || challenge != grant.challenge
    {
        return refused("invalid_grant");
    }
    let id_token = issuer.id_token(&grant.nonce);
    issuer.issued.lock().unwrap().push(id_token.clone());
    axum::Json(json!({"access_token": "opaque", "token_type": "Bearer", "id_token": id_token}))
        .into_response()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

async fn start_issuer(redirect_uri: String) -> Arc<Issuer> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let issuer = Arc::new(Issuer {
        url,
        key,
        rng,
        redirect_uri,
        grants: Mutex::new(HashMap::new()),
        issued: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/keys", get(keys))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(issuer.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    issuer
}

fn spawn_apiserver(dir: &std::path::Path, listen: SocketAddr, issuer: &str) -> Process {
    let child = Command::new(env!("CARGO_BIN_EXE_kairship"))
        .args([
            "apiserver",
            "--metrics-addr=127.0.0.1:0",
            "--probe-addr=127.0.0.1:0",
            "--console-session-namespace=default",
            "--log-level=warn",
            "--oidc-client-id=kairship-console",
            "--oidc-username-claim=email",
            "--oidc-groups-claim=groups",
            "--oidc-groups-prefix=oidc:",
        ])
        .arg(format!("--oidc-issuer-url={issuer}"))
        .arg(format!("--listen={listen}"))
        .arg(format!(
            "--host-kubeconfig={}",
            dir.join("host.kubeconfig").display()
        ))
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

fn http() -> reqwest::Client {
    kube_kit::client::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The value of cookie `name` among a response's `Set-Cookie` headers, with its attributes.
fn set_cookie(response: &reqwest::Response, name: &str) -> Option<(String, String)> {
    response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            let (pair, attributes) = v.split_once(';').unwrap_or((v, ""));
            let value = pair.strip_prefix(&format!("{name}="))?;
            Some((value.to_owned(), attributes.to_owned()))
        })
}

fn location(response: &reqwest::Response) -> String {
    response.headers()[reqwest::header::LOCATION]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oidc_sign_in_makes_a_session_of_the_caller_the_api_maps_the_id_token_to() {
    let host = host().await;
    let dir = std::env::temp_dir().join(format!("kairship-oidc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _served = host
        .serve(kube_sandbox::ServeOptions {
            kubeconfig_path: Some(dir.join("host.kubeconfig")),
            ..kube_sandbox::ServeOptions::default()
        })
        .await
        .unwrap();
    // Only the mapped identity may do anything: the user name from the email claim (no
    // prefix for `email`, as kube-apiserver) and the prefixed group.
    std::fs::write(
        dir.join("policy"),
        format!("user:{EMAIL} get *\ngroup:oidc:devs list *\n"),
    )
    .unwrap();
    let listen = free_addr();
    let base = format!("http://{listen}");
    let issuer = start_issuer(format!("{base}/ui/oidc/callback")).await;
    let _api = spawn_apiserver(&dir, listen, &issuer.url);
    let http = http();
    let deadline = Instant::now() + LIMIT;
    let signin_page = loop {
        if let Ok(r) = http.get(format!("{base}/ui/signin")).send().await
            && r.status() == StatusCode::OK
        {
            break r.text().await.unwrap();
        }
        assert!(Instant::now() < deadline, "the API server did not come up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(signin_page.contains("id=\"oidc-signin\""), "{signin_page}");

    // The start: to the issuer with PKCE, state and nonce; the sign-in sealed in its cookie.
    let start = http
        .get(format!("{base}/ui/oidc/signin"))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let to_issuer = location(&start);
    assert!(
        to_issuer.starts_with(&format!("{}/authorize?", issuer.url)),
        "{to_issuer}"
    );
    for part in [
        "code_challenge_method=S256",
        "code_challenge=",
        "nonce=",
        "state=",
    ] {
        assert!(to_issuer.contains(part), "{part} in {to_issuer}");
    }
    let (pending, attributes) = set_cookie(&start, "kairship_oidc").unwrap();
    assert!(attributes.contains("SameSite=Lax") && attributes.contains("Path=/ui/oidc"));
    assert!(attributes.contains("HttpOnly"));

    // The issuer signs the user in and sends the browser back.
    let back = http.get(&to_issuer).send().await.unwrap();
    assert_eq!(back.status(), StatusCode::FOUND, "{:?}", back.text().await);
    let callback = location(&back);
    assert!(callback.starts_with(&format!("{base}/ui/oidc/callback?code=")));

    // A callback without the sign-in's cookie, or with another state, is refused.
    let stranger = http.get(&callback).send().await.unwrap();
    assert_eq!(stranger.status(), StatusCode::BAD_REQUEST);
    let wrong_state = callback.replace("state=", "state=x");
    let forged = http
        .get(&wrong_state)
        .header("cookie", format!("kairship_oidc={pending}"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::BAD_REQUEST);

    let done = http
        .get(&callback)
        .header("cookie", format!("kairship_oidc={pending}"))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), StatusCode::OK);
    let (session, attributes) = set_cookie(&done, "kairship_session").unwrap();
    // The session ends when the ID token does (an hour), not after the usual eight hours.
    let max_age: u64 = attributes
        .split(';')
        .find_map(|a| a.trim().strip_prefix("Max-Age="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(max_age <= 3600, "{attributes}");
    assert!(attributes.contains("SameSite=Strict"));
    assert_eq!(set_cookie(&done, "kairship_oidc").unwrap().0, "");

    // Signed in as the mapped user.
    let page = http
        .get(format!("{base}/ui/instances"))
        .header("cookie", format!("kairship_session={session}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().await.unwrap();
    assert!(
        page.contains(&format!("<span class=\"user\">{EMAIL}</span>")),
        "{page}"
    );

    // The code was used once: the same callback again is refused by the issuer.
    let replay = http
        .get(&callback)
        .header("cookie", format!("kairship_oidc={pending}"))
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), StatusCode::UNAUTHORIZED);

    // The same ID token as a bearer token on the API: the same caller, allowed by the
    // policy for the mapped group, and a token the issuer did not sign is refused.
    let id_token = issuer.issued.lock().unwrap().last().cloned().unwrap();
    let list = http
        .get(format!("{base}/apis/kairship.io/v1alpha1/instances"))
        .bearer_auth(&id_token)
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), StatusCode::OK, "{:?}", list.text().await);
    let mut parts: Vec<String> = id_token.split('.').map(str::to_owned).collect();
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
    claims["email"] = json!("mallory@example.com");
    parts[1] = URL_SAFE_NO_PAD.encode(claims.to_string());
    let forged = http
        .get(format!("{base}/apis/kairship.io/v1alpha1/instances"))
        .bearer_auth(parts.join("."))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);

    // In a real browser: the link, the issuer's redirects and the page that follows.
    if let Some((chromium, chromedriver)) = support::browser_or_skip("console_oidc") {
        let browser = support::Browser::start(&chromium, &chromedriver).await;
        browser.goto(&format!("{base}/ui/signin")).await;
        browser.click("#oidc-signin").await;
        browser.wait_url("/ui/instances").await;
        let user = browser.wait_text(".user", |t| t == EMAIL).await;
        assert_eq!(user, EMAIL);
        browser.quit().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
