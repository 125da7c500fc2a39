//! Test harness for leader election against kube-sandbox: candidates whose clients can be
//! slowed, broken or cut off one at a time, and a timeline of who led when.
#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderValue, Request, Response, header};
use kube_kit::leader::{LeaderElectionConfig, LeaderElector, LeaderState, LeaseElector};
use kube_sandbox::{Cluster, ClusterOptions};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::{Service, ServiceExt};

/// A sandbox without the simulated scheduler and kubelet (nothing here needs pods).
pub fn quiet_cluster(name: &str) -> Cluster {
    Cluster::with_options(
        name,
        ClusterOptions {
            scheduler: false,
            kubelet: false,
            ..ClusterOptions::default()
        },
    )
}

/// SplitMix64: small, seedable, good enough to pick interleavings.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.next_u64() % 1000 < per_mille
    }

    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.range(lo, hi))
    }
}

/// What a candidate's network does to its requests.
#[derive(Clone, Debug, Default)]
pub struct Knobs {
    /// Every request fails at once with 503.
    pub down: bool,
    /// Every request hangs (until the caller gives up).
    pub hang: bool,
    /// Upper bound of the random delay before and after the server handles a request.
    pub max_latency_ms: u64,
    /// Chance (‰) a request fails before reaching the server.
    pub fail_before: u64,
    /// Chance (‰) a request is applied but its response is lost (the client sees 500).
    pub fail_after: u64,
}

#[derive(Clone)]
pub struct Chaos {
    pub knobs: Arc<Mutex<Knobs>>,
    rng: Arc<Mutex<Rng>>,
}

impl Chaos {
    pub fn new(seed: u64) -> Self {
        Self {
            knobs: Arc::default(),
            rng: Arc::new(Mutex::new(Rng::new(seed))),
        }
    }

    pub fn set(&self, f: impl FnOnce(&mut Knobs)) {
        f(&mut self.knobs.lock().unwrap());
    }
}

struct Plan {
    down: bool,
    hang: bool,
    before: Duration,
    after: Duration,
    fail_before: bool,
    fail_after: bool,
}

fn status_response(code: u16) -> Response<axum::body::Body> {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "injected by the test network", "reason": "InternalError", "code": code,
    });
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap()
}

/// The router, authenticated as admin, behind a [`Chaos`] network.
#[derive(Clone)]
pub struct ChaosService<S> {
    inner: S,
    chaos: Chaos,
}

impl<S> Service<Request<kube::client::Body>> for ChaosService<S>
where
    S: Service<
            Request<kube::client::Body>,
            Response = Response<axum::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    type Response = Response<axum::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> Self::Future {
        let plan = {
            let knobs = self.chaos.knobs.lock().unwrap().clone();
            let mut rng = self.chaos.rng.lock().unwrap();
            Plan {
                down: knobs.down,
                hang: knobs.hang,
                before: rng.millis(0, knobs.max_latency_ms),
                after: rng.millis(0, knobs.max_latency_ms),
                fail_before: rng.chance(knobs.fail_before),
                fail_after: rng.chance(knobs.fail_after),
            }
        };
        let inner = self.inner.clone();
        Box::pin(async move {
            if plan.hang {
                std::future::pending::<()>().await;
            }
            if plan.down {
                return Ok(status_response(503));
            }
            tokio::time::sleep(plan.before).await;
            if plan.fail_before {
                return Ok(status_response(500));
            }
            let response = inner.oneshot(req).await?;
            tokio::time::sleep(plan.after).await;
            if plan.fail_after {
                return Ok(status_response(500));
            }
            Ok(response)
        })
    }
}

/// An in-process admin client whose requests go through `chaos`.
pub fn chaos_client(cluster: &Cluster, chaos: Chaos) -> kube::Client {
    let auth = HeaderValue::from_str(&format!("Bearer {}", cluster.admin_token())).unwrap();
    let inner = tower::ServiceBuilder::new()
        .map_request(move |mut req: Request<kube::client::Body>| {
            req.headers_mut()
                .insert(header::AUTHORIZATION, auth.clone());
            req
        })
        .service(cluster.router());
    kube::Client::new(ChaosService { inner, chaos }, "default")
}

/// Who led when: `(instant, identity, leading)` entries in the order they happened.
#[derive(Clone, Default)]
pub struct Timeline(Arc<Mutex<Vec<(Instant, String, bool)>>>);

/// One stretch of leadership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub identity: String,
    pub start: Instant,
    pub end: Option<Instant>,
}

impl Timeline {
    pub fn record(&self, identity: &str, leading: bool) {
        self.0
            .lock()
            .unwrap()
            .push((Instant::now(), identity.to_owned(), leading));
    }

    /// Leadership terms per identity, merged across repeated `leading` entries.
    pub fn terms(&self) -> Vec<Term> {
        let entries = self.0.lock().unwrap().clone();
        let mut open: Vec<Term> = Vec::new();
        let mut done = Vec::new();
        for (at, id, leading) in entries {
            let pos = open.iter().position(|t| t.identity == id);
            match (leading, pos) {
                (true, None) => open.push(Term {
                    identity: id,
                    start: at,
                    end: None,
                }),
                (false, Some(i)) => {
                    let mut term = open.remove(i);
                    term.end = Some(at);
                    done.push(term);
                }
                _ => {}
            }
        }
        done.extend(open);
        done.sort_by_key(|t| t.start);
        done
    }

    /// Pairs of terms of different identities that overlap for a positive time.
    pub fn overlaps(&self) -> Vec<(Term, Term)> {
        let terms = self.terms();
        let far = Instant::now() + Duration::from_secs(1_000_000);
        let mut bad = Vec::new();
        for (i, a) in terms.iter().enumerate() {
            for b in &terms[i + 1..] {
                if a.identity != b.identity
                    && a.start < b.end.unwrap_or(far)
                    && b.start < a.end.unwrap_or(far)
                {
                    bad.push((a.clone(), b.clone()));
                }
            }
        }
        bad
    }

    /// When `identity` first started leading at or after `since`.
    pub fn first_lead_after(&self, identity: &str, since: Instant) -> Option<Instant> {
        self.terms()
            .into_iter()
            .filter(|t| t.identity == identity && t.start >= since)
            .map(|t| t.start)
            .min()
    }

    /// When `identity` last stopped leading.
    pub fn last_end(&self, identity: &str) -> Option<Instant> {
        self.terms()
            .into_iter()
            .filter(|t| t.identity == identity)
            .filter_map(|t| t.end)
            .max()
    }
}

/// A running candidate.
pub struct Candidate {
    pub identity: String,
    pub elector: Arc<LeaseElector>,
    pub chaos: Chaos,
    pub stop: CancellationToken,
    pub state: watch::Receiver<LeaderState>,
    task: JoinHandle<()>,
    logger: JoinHandle<()>,
    timeline: Timeline,
}

impl Candidate {
    pub fn start(
        cluster: &Cluster,
        config: LeaderElectionConfig,
        seed: u64,
        timeline: &Timeline,
    ) -> Self {
        let chaos = Chaos::new(seed);
        let client = chaos_client(cluster, chaos.clone());
        let identity = config.identity.clone();
        let elector = Arc::new(LeaseElector::new(client, config).unwrap());
        let mut state = elector.subscribe();
        let logger = {
            let timeline = timeline.clone();
            let identity = identity.clone();
            let mut rx = state.clone();
            tokio::spawn(async move {
                let mut was_leading = false;
                while rx.changed().await.is_ok() {
                    let leading = rx.borrow_and_update().is_leading();
                    if leading != was_leading {
                        timeline.record(&identity, leading);
                        was_leading = leading;
                    }
                }
            })
        };
        state.mark_unchanged();
        let stop = CancellationToken::new();
        let task = {
            let elector = elector.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                elector.run(stop).await.unwrap();
            })
        };
        Self {
            identity,
            elector,
            chaos,
            stop,
            state,
            task,
            logger,
            timeline: timeline.clone(),
        }
    }

    pub fn is_leading(&self) -> bool {
        self.state.borrow().is_leading()
    }

    /// The process dies: no release, no further requests.
    pub fn crash(self) {
        self.task.abort();
        self.logger.abort();
        // Ends any open term, even one whose end the logger had not written yet.
        self.timeline.record(&self.identity, false);
    }

    /// Graceful shutdown: cancel and wait for the release.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
        let _ = tokio::time::timeout(Duration::from_secs(1), self.logger).await;
    }

    /// Waits until this candidate's state satisfies `f`.
    pub async fn wait_for(&mut self, f: impl FnMut(&LeaderState) -> bool) -> Instant {
        self.state.wait_for(f).await.unwrap();
        Instant::now()
    }
}

/// Reads the lease as the admin.
pub async fn read_lease(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> k8s_openapi::api::coordination::v1::Lease {
    kube::Api::namespaced(cluster.client(), namespace)
        .get(name)
        .await
        .unwrap()
}

/// Advances the paused clock by `d`, letting every task run.
pub async fn advance(d: Duration) {
    tokio::time::sleep(d).await;
}
