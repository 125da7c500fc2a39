//! Response compression as kube-apiserver does it: a client that sends
//! `Accept-Encoding: gzip` gets a whole answer larger than 128 KiB gzipped (level 1), with
//! `Content-Encoding: gzip` and `Vary: Accept-Encoding`; smaller answers and streams (watches)
//! go as they are.
//!
//! Transcribed from k8s.io/apiserver `pkg/endpoints/handlers/responsewriters/writers.go`
//! (`defaultGzipThresholdBytes`, `defaultGzipContentEncodingLevel`, `deferredResponseWriter`)
//! and `negotiateContentEncoding` of the same file.

use std::io::Write as _;

use axum::body::Body;
use axum::body::HttpBody as _;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, header};

/// Answers up to this size go uncompressed (`defaultGzipThresholdBytes`, 128 KiB).
pub const GZIP_THRESHOLD_BYTES: usize = 128 * 1024;

/// Whether the request's `Accept-Encoding` lists `gzip` (kube-apiserver's
/// `negotiateContentEncoding`: comma-separated codings, parameters ignored, exact name).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| coding.split(';').next().unwrap_or_default().trim() == "gzip")
}

/// `response` gzipped when it is a whole body (not a stream) larger than the threshold and not
/// encoded already; otherwise unchanged.
pub async fn compress(response: Response) -> Response {
    let exact = response.body().size_hint().exact();
    let large = exact.is_some_and(|n| n > GZIP_THRESHOLD_BYTES as u64);
    if !large || response.headers().contains_key(header::CONTENT_ENCODING) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // The body is whole in memory (its exact size is known): collecting it does not wait.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 8),
        flate2::Compression::new(1),
    );
    let compressed = match encoder.write_all(&bytes).and_then(|()| encoder.finish()) {
        Ok(compressed) => compressed,
        // Writing into memory does not fail; should it, the answer goes as it is.
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    Response::from_parts(parts, Body::from(compressed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn accept_encoding_lists_gzip() {
        for (value, want) in [
            ("gzip", true),
            ("gzip, deflate", true),
            ("deflate,gzip;q=1.0", true),
            (" br , gzip ", true),
            ("x-gzip", false),
            ("deflate", false),
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

        let answer = compress(Response::new(Body::from(large.clone()))).await;
        assert_eq!(answer.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(answer.headers()[header::VARY], "Accept-Encoding");
        let mut unpacked = Vec::new();
        flate2::read::GzDecoder::new(&body_of(answer).await[..])
            .read_to_end(&mut unpacked)
            .unwrap();
        assert_eq!(unpacked, large);

        let answer = compress(Response::new(Body::from(small.clone()))).await;
        assert!(answer.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body_of(answer).await, small);

        let stream = futures::stream::iter([Ok::<_, std::convert::Infallible>(
            bytes::Bytes::from(large.clone()),
        )]);
        let answer = compress(Response::new(Body::from_stream(stream))).await;
        assert!(answer.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body_of(answer).await, large);
    }
}
