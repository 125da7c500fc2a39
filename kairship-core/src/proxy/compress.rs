//! gzip, and only gzip, as kube-apiserver offers it: an answer larger than 128 KiB goes
//! gzipped (level 1) to a client whose `Accept-Encoding` lists `gzip`, with
//! `Content-Encoding: gzip` and `Vary: Accept-Encoding`; smaller answers and event streams go
//! as they are. Transcribed from k8s.io/apiserver
//! `pkg/endpoints/handlers/responsewriters/writers.go` (`defaultGzipThresholdBytes`,
//! `defaultGzipContentEncodingLevel`, `deferredResponseWriter.Write`, `negotiateContentEncoding`).
//!
//! The proxy's whole-list answers from the cache are compressed once per resourceVersion and
//! kept ([`CompressedLists`]); other large lists are compressed while they are written.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::{Mutex, PoisonError};

use axum::body::{Body, Bytes, HttpBody as _};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use flate2::Compression;
use flate2::write::GzEncoder;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, header};

use crate::router::InstanceIdentity;

/// Answers up to this size go uncompressed (`defaultGzipThresholdBytes`).
pub const GZIP_THRESHOLD_BYTES: usize = 128 * 1024;

/// kube-apiserver's `defaultGzipContentEncodingLevel`: the least CPU for a ratio within
/// 1.1-1.3x of the best.
const GZIP_LEVEL: u32 = 1;

/// How many compressed whole lists the proxy keeps (the newest resourceVersion of each
/// collection; a few MiB for a collection of 26 MB of JSON).
const COMPRESSED_LISTS_KEPT: usize = 32;

/// Whether the request's `Accept-Encoding` lists `gzip` (codings separated by commas,
/// parameters ignored, as `negotiateContentEncoding` reads them).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| coding.split(';').next().unwrap_or_default().trim() == "gzip")
}

/// `bytes` gzipped at kube-apiserver's level.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(
        Vec::with_capacity(bytes.len() / 8 + 64),
        Compression::new(GZIP_LEVEL),
    );
    // Writing into memory cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// The pieces of `chunks` gzipped as they come: one gzip member over all of them.
pub fn gzip_stream<S, E>(chunks: S) -> impl Stream<Item = Result<Bytes, E>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    E: Send,
{
    let encoder = GzEncoder::new(Vec::new(), Compression::new(GZIP_LEVEL));
    futures::stream::unfold(Some((chunks, encoder)), |state| async move {
        let (mut chunks, mut encoder) = state?;
        match chunks.next().await {
            Some(Ok(chunk)) => {
                // Writing into memory cannot fail.
                let _ = encoder.write_all(&chunk);
                let out = Bytes::from(std::mem::take(encoder.get_mut()));
                Some((Ok(out), Some((chunks, encoder))))
            }
            Some(Err(err)) => Some((Err(err), None)),
            None => Some((Ok(Bytes::from(encoder.finish().unwrap_or_default())), None)),
        }
    })
    .filter(|piece| futures::future::ready(piece.as_ref().map_or(true, |b| !b.is_empty())))
}

/// Marks `response` as gzipped.
pub fn mark_gzipped(headers: &mut HeaderMap) {
    headers.remove(header::CONTENT_LENGTH);
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
}

/// Whether an answer of this content type is a stream of events, never compressed.
fn is_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.starts_with("text/event-stream")
                || t.starts_with("application/grpc")
                || t.contains("watch")
        })
}

/// `response` gzipped when it is a whole body (its size known, not a stream) larger than the
/// threshold and not encoded already; otherwise unchanged.
pub async fn compress_response(response: Response) -> Response {
    let large = response
        .body()
        .size_hint()
        .exact()
        .is_some_and(|n| n > GZIP_THRESHOLD_BYTES as u64);
    if !large
        || response.headers().contains_key(header::CONTENT_ENCODING)
        || is_stream(response.headers())
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // A body of known size is in memory: collecting it does not wait.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let compressed = match tokio::task::spawn_blocking(move || gzip(&bytes)).await {
        Ok(compressed) => compressed,
        Err(_) => {
            parts.status = http::StatusCode::INTERNAL_SERVER_ERROR;
            return Response::from_parts(parts, Body::empty());
        }
    };
    mark_gzipped(&mut parts.headers);
    Response::from_parts(parts, Body::from(compressed))
}

/// An axum middleware gzipping large whole answers for clients that accept gzip: the layer of
/// the REST API and the console.
pub async fn gzip_large_answers(request: Request, next: Next) -> Response {
    let gzip = accepts_gzip(request.headers());
    let response = next.run(request).await;
    if gzip {
        compress_response(response).await
    } else {
        response
    }
}

/// What a compressed whole list is kept under: the instance (as it is now), the collection
/// (`group/version/resource` and namespace), and the list's resourceVersion.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ListKey {
    /// The instance's identity: a re-created instance starts its resourceVersions anew.
    pub identity: Option<InstanceIdentity>,
    /// The instance's name.
    pub instance: String,
    /// `group/version/plural`.
    pub resource: String,
    /// The namespace, `None` for all.
    pub namespace: Option<String>,
}

/// Whole-list answers compressed once per resourceVersion: the same list is served to every
/// client as the same bytes until the collection changes.
#[derive(Debug, Default)]
pub struct CompressedLists {
    entries: Mutex<HashMap<ListKey, Kept>>,
}

#[derive(Debug)]
struct Kept {
    resource_version: String,
    gzipped: Bytes,
    used: u64,
}

impl CompressedLists {
    /// The compressed list of `key` at `resource_version`, if kept.
    pub fn get(&self, key: &ListKey, resource_version: &str) -> Option<Bytes> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let clock = entries.values().map(|k| k.used).max().unwrap_or(0) + 1;
        let kept = entries
            .get_mut(key)
            .filter(|k| k.resource_version == resource_version)?;
        kept.used = clock;
        Some(kept.gzipped.clone())
    }

    /// Keeps `gzipped` as the list of `key` at `resource_version` (replacing an older one; the
    /// least recently used collection goes when too many are kept).
    pub fn put(&self, key: ListKey, resource_version: &str, gzipped: Bytes) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let clock = entries.values().map(|k| k.used).max().unwrap_or(0) + 1;
        if !entries.contains_key(&key)
            && entries.len() >= COMPRESSED_LISTS_KEPT
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(key, _)| key.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(
            key,
            Kept {
                resource_version: resource_version.to_owned(),
                gzipped,
                used: clock,
            },
        );
    }

    /// How many lists are kept.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn accept_encoding_lists_gzip() {
        for (value, want) in [
            ("gzip", true),
            ("gzip, deflate", true),
            ("deflate,gzip;q=1.0", true),
            (" br , gzip ", true),
            ("x-gzip", false),
            ("deflate", false),
            ("br", false),
            ("", false),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            assert_eq!(accepts_gzip(&headers), want, "{value:?}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    async fn body_of(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    #[tokio::test]
    async fn only_whole_answers_over_the_threshold_are_compressed() {
        let large = vec![b'a'; GZIP_THRESHOLD_BYTES + 1];
        let small = vec![b'a'; GZIP_THRESHOLD_BYTES];

        let answer = compress_response(Response::new(Body::from(large.clone()))).await;
        assert_eq!(answer.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(answer.headers()[header::VARY], "Accept-Encoding");
        assert_eq!(gunzip(&body_of(answer).await), large);

        let answer = compress_response(Response::new(Body::from(small.clone()))).await;
        assert!(answer.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body_of(answer).await, small);

        let stream = futures::stream::iter([Ok::<_, std::convert::Infallible>(Bytes::from(
            large.clone(),
        ))]);
        let answer = compress_response(Response::new(Body::from_stream(stream))).await;
        assert!(answer.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body_of(answer).await, large);

        let mut events = Response::new(Body::from(large.clone()));
        events.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        let answer = compress_response(events).await;
        assert!(answer.headers().get(header::CONTENT_ENCODING).is_none());
    }

    #[tokio::test]
    async fn streamed_pieces_make_one_gzip_member() {
        let pieces: Vec<Result<Bytes, std::convert::Infallible>> = (0..50)
            .map(|i| Ok(Bytes::from(format!("piece {i} ").repeat(1000))))
            .collect();
        let whole: Vec<u8> = pieces
            .iter()
            .flat_map(|p| p.as_ref().unwrap().to_vec())
            .collect();
        let out: Vec<Bytes> = gzip_stream(futures::stream::iter(pieces))
            .map(Result::unwrap)
            .collect()
            .await;
        assert!(out.len() > 1, "sent while written");
        assert_eq!(gunzip(&out.concat()), whole);
        assert!(
            gzip_stream(futures::stream::iter(Vec::<Result<Bytes, ()>>::new()))
                .collect::<Vec<_>>()
                .await
                .iter()
                .all(Result::is_ok)
        );
    }

    #[test]
    fn kept_lists_follow_the_resource_version_and_stay_bounded() {
        let lists = CompressedLists::default();
        let key = |n: usize| ListKey {
            identity: None,
            instance: "i".into(),
            resource: format!("apps/v1/r{n}"),
            namespace: None,
        };
        lists.put(key(0), "5", Bytes::from_static(b"five"));
        assert_eq!(lists.get(&key(0), "5").as_deref(), Some(&b"five"[..]));
        assert_eq!(lists.get(&key(0), "6"), None);
        lists.put(key(0), "6", Bytes::from_static(b"six"));
        assert_eq!(lists.get(&key(0), "5"), None);
        assert_eq!(lists.len(), 1);
        for n in 1..=COMPRESSED_LISTS_KEPT {
            // key(0) stays in use, so it is never the oldest.
            lists.get(&key(0), "6");
            lists.put(key(n), "1", Bytes::from_static(b"x"));
        }
        assert_eq!(lists.len(), COMPRESSED_LISTS_KEPT);
        assert!(lists.get(&key(0), "6").is_some());
        assert!(
            lists.get(&key(1), "1").is_none(),
            "the least recently used went"
        );
    }
}
