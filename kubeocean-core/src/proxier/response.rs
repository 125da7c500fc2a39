//! Response bodies and the error answers of the proxier (plain text, as the kubelet writes
//! them; kube-apiserver relays them to `kubectl`).

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};

/// Errors of response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body of every response: fixed text, or a worker's stream passed through.
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// An empty body.
pub fn empty() -> ResponseBody {
    Empty::<Bytes>::new()
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A response with a fixed body and content type.
pub fn fixed(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<ResponseBody> {
    let mut response = Response::new(
        Full::new(body.into())
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A plain-text response.
pub fn text(status: StatusCode, message: impl Into<String>) -> Response<ResponseBody> {
    let mut message = message.into();
    if !message.ends_with('\n') {
        message.push('\n');
    }
    fixed(status, "text/plain; charset=utf-8", message)
}

/// Why a request could not be served: the status, the message, and whether a call to the
/// worker or computing cluster failed (counted as an upstream error).
#[derive(Debug)]
pub struct Failure {
    /// Status to answer with.
    pub status: StatusCode,
    /// Message for the client.
    pub message: String,
    /// A cluster call failed.
    pub upstream: bool,
}

impl Failure {
    /// A failure that is the client's or the object's doing.
    pub fn client(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            upstream: false,
        }
    }

    /// A failed call to a cluster.
    pub fn upstream(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            upstream: true,
        }
    }

    /// The answer.
    pub fn response(&self) -> Response<ResponseBody> {
        text(self.status, self.message.clone())
    }
}
