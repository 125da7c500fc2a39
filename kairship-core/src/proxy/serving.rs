//! How the API server's connections are served: HTTP/1.1 and HTTP/2 on one port, HTTP/2 sized
//! for large answers. A list of 5,000 Deployments is 27 MB of JSON; with hyper's defaults
//! (64 KiB receive windows, 16 KiB frames, a 400 KiB send buffer per stream) such an answer
//! took twice as long over HTTP/2 as over HTTP/1.1 (docs/benchmarks.md, "request path at
//! scale").

use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto;

/// What a stream may send us before we acknowledge it (request bodies: applies, creates of
/// large objects), when adaptive flow control has no measurement yet.
pub const HTTP2_STREAM_WINDOW_BYTES: u32 = 4 * 1024 * 1024;
/// What all streams of a connection together may send before we acknowledge.
pub const HTTP2_CONNECTION_WINDOW_BYTES: u32 = 16 * 1024 * 1024;
/// The largest frame we accept (the peer's own setting caps the frames we send).
pub const HTTP2_MAX_FRAME_BYTES: u32 = 1024 * 1024;
/// How much of an answer a stream buffers ahead of the peer's window: enough that a large
/// list is written in few wakeups.
pub const HTTP2_SEND_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// A connection builder serving HTTP/1.1 and HTTP/2 with the windows, frame size and send
/// buffer above, and adaptive (BDP-measured) flow control on top of them.
pub fn connection_builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http2()
        .initial_stream_window_size(HTTP2_STREAM_WINDOW_BYTES)
        .initial_connection_window_size(HTTP2_CONNECTION_WINDOW_BYTES)
        .adaptive_window(true)
        .max_frame_size(HTTP2_MAX_FRAME_BYTES)
        .max_send_buf_size(HTTP2_SEND_BUFFER_BYTES);
    builder
}
