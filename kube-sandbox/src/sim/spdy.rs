//! SPDY/3.1 framing as Kubernetes streaming speaks it: `kubectl port-forward` (tunnelled in
//! WebSocket binary messages, or over a plain `Upgrade: SPDY/3.1`), kube-apiserver and the
//! kubelet all use moby/spdystream (`spdy/types.go`, `spdy/read.go`, `spdy/write.go`), which
//! this module reads and writes byte for byte:
//!
//! - a control frame is `1 | version(15) | type(16)`, `flags(8) | length(24)`, then the
//!   payload; a data frame is `0 | stream id(31)`, `flags(8) | length(24)`, then the data;
//! - SYN_STREAM, SYN_REPLY and HEADERS carry a header block (a count, then length-prefixed
//!   lower-case names and values, several values of one name joined by NUL) compressed with
//!   zlib and SPDY/3's dictionary. Each direction keeps ONE zlib stream for the whole
//!   connection: every block is a sync-flushed continuation of the ones before it, so a
//!   [`FrameReader`] and a [`FrameWriter`] live as long as their connection;
//! - spdystream does no flow control: SETTINGS and WINDOW_UPDATE are read and ignored.
//!
//! Everything here is pure (bytes in, frames out, and back); the session that serves port
//! forwarding over it is [`super::port_forward`].

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use std::sync::LazyLock;

/// The protocol version in every control frame (`spdy.Version`).
pub const VERSION: u16 = 3;

/// The largest payload a frame's 24-bit length can say (`spdy.MaxDataLength`).
pub const MAX_PAYLOAD: usize = (1 << 24) - 1;

/// Most header entries in one block (spdystream's `defaultMaxHeaderCount`).
const MAX_HEADER_COUNT: u32 = 1000;

/// Longest header name or value (spdystream's `defaultMaxHeaderFieldSize`).
const MAX_HEADER_FIELD: u32 = 1 << 20;

/// Largest decompressed header block accepted, so that a small frame cannot inflate without
/// bound.
const MAX_HEADER_BLOCK: usize = 4 << 20;

// Control frame types (`spdy/types.go`, `ControlFrameType`).
const TYPE_SYN_STREAM: u16 = 1;
const TYPE_SYN_REPLY: u16 = 2;
const TYPE_RST_STREAM: u16 = 3;
const TYPE_SETTINGS: u16 = 4;
const TYPE_PING: u16 = 6;
const TYPE_GOAWAY: u16 = 7;
const TYPE_HEADERS: u16 = 8;
const TYPE_WINDOW_UPDATE: u16 = 9;

/// `ControlFlagFin` / `DataFlagFin`: the sender's half of the stream ends.
const FLAG_FIN: u8 = 0x01;
/// `ControlFlagUnidirectional` of SYN_STREAM.
const FLAG_UNIDIRECTIONAL: u8 = 0x02;
/// `ControlFlagSettingsClearSettings` of SETTINGS.
const FLAG_CLEAR_SETTINGS: u8 = 0x01;

/// RST_STREAM statuses (`spdy.RstStreamStatus`): the ones this crate sends.
pub mod rst {
    /// `ProtocolError`.
    pub const PROTOCOL_ERROR: u32 = 1;
    /// `RefusedStream`.
    pub const REFUSED_STREAM: u32 = 3;
    /// `Cancel`: what spdystream's `Stream.Reset` sends.
    pub const CANCEL: u32 = 5;
}

/// Header entries in the order they were read or are to be written; a name may repeat.
pub type Headers = Vec<(String, String)>;

/// One SPDY/3 frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// Opens a stream (`SynStreamFrame`).
    SynStream {
        /// Odd from the client, even from the server.
        stream_id: u32,
        /// The stream this one belongs to (0: none).
        associated_to: u32,
        /// 0 (highest) to 7.
        priority: u8,
        /// The sender sends nothing more on it.
        fin: bool,
        /// The receiver may not send on it.
        unidirectional: bool,
        /// The stream's headers.
        headers: Headers,
    },
    /// Accepts a stream (`SynReplyFrame`).
    SynReply {
        /// The stream accepted.
        stream_id: u32,
        /// The sender sends nothing more on it.
        fin: bool,
        /// Reply headers (kubelet sends none).
        headers: Headers,
    },
    /// Ends a stream abnormally (`RstStreamFrame`).
    RstStream {
        /// The stream.
        stream_id: u32,
        /// Why ([`rst`]); never 0.
        status: u32,
    },
    /// Connection settings (`SettingsFrame`).
    Settings {
        /// `FLAG_SETTINGS_CLEAR_SETTINGS`.
        clear: bool,
        /// `(flags, id, value)` entries.
        values: Vec<(u8, u32, u32)>,
    },
    /// A liveness probe, echoed by the side that did not send it (`PingFrame`).
    Ping {
        /// Odd from the client, even from the server; never 0.
        id: u32,
    },
    /// The sender accepts no more streams (`GoAwayFrame`).
    GoAway {
        /// The last stream the sender accepted.
        last_good_stream_id: u32,
        /// 0 OK, 1 protocol error, 2 internal error.
        status: u32,
    },
    /// More headers for a stream (`HeadersFrame`).
    Headers {
        /// The stream.
        stream_id: u32,
        /// The sender sends nothing more on it.
        fin: bool,
        /// The headers.
        headers: Headers,
    },
    /// Flow-control credit (`WindowUpdateFrame`), which spdystream ignores.
    WindowUpdate {
        /// The stream.
        stream_id: u32,
        /// Additional bytes the sender may receive.
        delta: u32,
    },
    /// Stream data (`DataFrame`).
    Data {
        /// The stream.
        stream_id: u32,
        /// The sender's half of the stream ends with this frame.
        fin: bool,
        /// The bytes.
        data: Vec<u8>,
    },
}

/// Why bytes are not a SPDY/3 frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpdyError {
    /// A control frame of another SPDY version.
    #[error("unsupported SPDY version {0}")]
    UnsupportedVersion(u16),
    /// A control frame type spdystream does not know.
    #[error("unknown control frame type {0}")]
    UnknownFrameType(u16),
    /// A control frame whose payload does not fit its type.
    #[error("invalid {frame} frame: {reason}")]
    InvalidControlFrame {
        /// The frame type.
        frame: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// Stream id 0 where a stream is needed (`ZeroStreamId`).
    #[error("stream id zero is disallowed")]
    ZeroStreamId,
    /// A header block that cannot be read.
    #[error("invalid header block: {0}")]
    HeaderBlock(String),
    /// The zlib stream of the header blocks is broken.
    #[error("header compression: {0}")]
    Compression(String),
    /// A frame longer than 24 bits can say.
    #[error("frame payload of {0} bytes is over SPDY's limit")]
    FrameTooLarge(usize),
}

/// SPDY/3's zlib dictionary for header blocks (draft-mbelshe-httpbis-spdy-00, section
/// 2.6.10.1; moby/spdystream `spdy/dictionary.go`, `headerDictionary`): each word prefixed
/// by its 32-bit big-endian length, then a run of status lines, dates and content types.
pub fn header_dictionary() -> &'static [u8] {
    static DICTIONARY: LazyLock<Vec<u8>> = LazyLock::new(|| {
        const WORDS: &[&str] = &[
            "options",
            "head",
            "post",
            "put",
            "delete",
            "trace",
            "accept",
            "accept-charset",
            "accept-encoding",
            "accept-language",
            "accept-ranges",
            "age",
            "allow",
            "authorization",
            "cache-control",
            "connection",
            "content-base",
            "content-encoding",
            "content-language",
            "content-length",
            "content-location",
            "content-md5",
            "content-range",
            "content-type",
            "date",
            "etag",
            "expect",
            "expires",
            "from",
            "host",
            "if-match",
            "if-modified-since",
            "if-none-match",
            "if-range",
            "if-unmodified-since",
            "last-modified",
            "location",
            "max-forwards",
            "pragma",
            "proxy-authenticate",
            "proxy-authorization",
            "range",
            "referer",
            "retry-after",
            "server",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
            "user-agent",
            "vary",
            "via",
            "warning",
            "www-authenticate",
            "method",
            "get",
            "status",
            "200 OK",
            "version",
            "HTTP/1.1",
            "url",
            "public",
            "set-cookie",
            "keep-alive",
            "origin",
        ];
        const TAIL: &str = concat!(
            "100101201202205206300302303304305306307402405406407408409410411412413414415416417",
            "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently",
            "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error",
            "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct ",
            "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,",
            "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,",
            "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8",
            "charset=iso-8859-1,utf-,*,enq=0.",
        );
        let mut dictionary = Vec::with_capacity(1423);
        for word in WORDS {
            dictionary.extend_from_slice(&(word.len() as u32).to_be_bytes());
            dictionary.extend_from_slice(word.as_bytes());
        }
        dictionary.extend_from_slice(TAIL.as_bytes());
        dictionary
    });
    &DICTIONARY
}

/// The uncompressed header block of `headers` (spdystream `writeHeaderValueBlock`): the
/// number of distinct names, then each lower-cased name and its values joined by NUL, in the
/// order names first appear.
pub fn encode_header_block(headers: &[(String, String)]) -> Vec<u8> {
    let mut names: Vec<(String, Vec<&str>)> = Vec::new();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        match names.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value),
            None => names.push((name, vec![value])),
        }
    }
    let mut block = Vec::new();
    block.extend_from_slice(&(names.len() as u32).to_be_bytes());
    for (name, values) in names {
        let value = values.join("\0");
        block.extend_from_slice(&(name.len() as u32).to_be_bytes());
        block.extend_from_slice(name.as_bytes());
        block.extend_from_slice(&(value.len() as u32).to_be_bytes());
        block.extend_from_slice(value.as_bytes());
    }
    block
}

/// Reads an uncompressed header block (spdystream `parseHeaderValueBlock`): names must be
/// lower case and appear once; a value holding NULs is several values of that name.
pub fn decode_header_block(block: &[u8]) -> Result<Headers, SpdyError> {
    let mut at = 0usize;
    let next_u32 = |at: &mut usize| -> Result<u32, SpdyError> {
        let bytes = block
            .get(*at..*at + 4)
            .ok_or_else(|| SpdyError::HeaderBlock("truncated".into()))?;
        *at += 4;
        Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    };
    let count = next_u32(&mut at)?;
    if count > MAX_HEADER_COUNT {
        return Err(SpdyError::HeaderBlock(format!("{count} headers")));
    }
    let mut headers = Headers::new();
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..count {
        let field = |at: &mut usize| -> Result<String, SpdyError> {
            let len = next_u32(at)?;
            if len > MAX_HEADER_FIELD {
                return Err(SpdyError::HeaderBlock(format!("a field of {len} bytes")));
            }
            let bytes = block
                .get(*at..*at + len as usize)
                .ok_or_else(|| SpdyError::HeaderBlock("truncated".into()))?;
            *at += len as usize;
            String::from_utf8(bytes.to_vec())
                .map_err(|_| SpdyError::HeaderBlock("a field is not UTF-8".into()))
        };
        let name = field(&mut at)?;
        if name != name.to_ascii_lowercase() {
            return Err(SpdyError::HeaderBlock(format!(
                "header was not lowercased: {name:?}"
            )));
        }
        if seen.contains(&name) {
            return Err(SpdyError::HeaderBlock(format!(
                "multiple headers with same name: {name:?}"
            )));
        }
        let value = field(&mut at)?;
        for part in value.split('\0') {
            headers.push((name.clone(), part.to_string()));
        }
        seen.push(name);
    }
    if at != block.len() {
        return Err(SpdyError::HeaderBlock(format!(
            "{} bytes after the last header",
            block.len() - at
        )));
    }
    Ok(headers)
}

/// The first value of header `name` (names are lower case on the wire).
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The total length (header included) of the frame at the start of `buf`, once its 8-byte
/// header has arrived.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let header = buf.get(..8)?;
    let length = u32::from_be_bytes([0, header[5], header[6], header[7]]) as usize;
    Some(8 + length)
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads frames from one direction of a connection, keeping that direction's zlib stream.
pub struct FrameReader {
    inflater: Decompress,
}

impl Default for FrameReader {
    fn default() -> Self {
        FrameReader {
            inflater: Decompress::new(true),
        }
    }
}

impl FrameReader {
    /// Takes the first frame off `buf` when it has arrived whole (`Ok(None)` until then).
    pub fn next_frame(&mut self, buf: &mut Vec<u8>) -> Result<Option<Frame>, SpdyError> {
        let Some(len) = frame_len(buf) else {
            return Ok(None);
        };
        if buf.len() < len {
            return Ok(None);
        }
        let frame: Vec<u8> = buf.drain(..len).collect();
        self.parse(&frame).map(Some)
    }

    /// Parses one whole frame (spdystream `Framer.ReadFrame`).
    pub fn parse(&mut self, frame: &[u8]) -> Result<Frame, SpdyError> {
        let first = be32(frame, 0);
        let flags = frame[4];
        let payload = &frame[8..];
        if first & 0x8000_0000 == 0 {
            let stream_id = first & 0x7fff_ffff;
            if stream_id == 0 {
                return Err(SpdyError::ZeroStreamId);
            }
            return Ok(Frame::Data {
                stream_id,
                fin: flags & FLAG_FIN != 0,
                data: payload.to_vec(),
            });
        }
        let version = ((first >> 16) & 0x7fff) as u16;
        if version != VERSION {
            return Err(SpdyError::UnsupportedVersion(version));
        }
        let kind = (first & 0xffff) as u16;
        let invalid = |frame: &'static str, reason: &'static str| {
            Err(SpdyError::InvalidControlFrame { frame, reason })
        };
        let stream = |at: usize| be32(payload, at) & 0x7fff_ffff;
        match kind {
            TYPE_SYN_STREAM => {
                if payload.len() < 10 {
                    return invalid("SYN_STREAM", "shorter than 10 bytes");
                }
                let headers = self.headers(&payload[10..])?;
                let stream_id = stream(0);
                if stream_id == 0 {
                    return Err(SpdyError::ZeroStreamId);
                }
                Ok(Frame::SynStream {
                    stream_id,
                    associated_to: stream(4),
                    priority: payload[8] >> 5,
                    fin: flags & FLAG_FIN != 0,
                    unidirectional: flags & FLAG_UNIDIRECTIONAL != 0,
                    headers,
                })
            }
            TYPE_SYN_REPLY | TYPE_HEADERS => {
                let name = if kind == TYPE_SYN_REPLY {
                    "SYN_REPLY"
                } else {
                    "HEADERS"
                };
                if payload.len() < 4 {
                    return invalid(name, "shorter than 4 bytes");
                }
                let headers = self.headers(&payload[4..])?;
                let stream_id = stream(0);
                if stream_id == 0 {
                    return Err(SpdyError::ZeroStreamId);
                }
                let fin = flags & FLAG_FIN != 0;
                Ok(if kind == TYPE_SYN_REPLY {
                    Frame::SynReply {
                        stream_id,
                        fin,
                        headers,
                    }
                } else {
                    Frame::Headers {
                        stream_id,
                        fin,
                        headers,
                    }
                })
            }
            TYPE_RST_STREAM => {
                if payload.len() != 8 {
                    return invalid("RST_STREAM", "length is not 8");
                }
                let (stream_id, status) = (stream(0), be32(payload, 4));
                if status == 0 {
                    return invalid("RST_STREAM", "status 0");
                }
                if stream_id == 0 {
                    return Err(SpdyError::ZeroStreamId);
                }
                Ok(Frame::RstStream { stream_id, status })
            }
            TYPE_SETTINGS => {
                if payload.len() < 4 {
                    return invalid("SETTINGS", "shorter than 4 bytes");
                }
                let count = be32(payload, 0) as usize;
                if count > (payload.len() - 4) / 8 {
                    return invalid("SETTINGS", "more entries than bytes");
                }
                let values = (0..count)
                    .map(|i| {
                        let id = be32(payload, 4 + 8 * i);
                        ((id >> 24) as u8, id & 0xff_ffff, be32(payload, 8 + 8 * i))
                    })
                    .collect();
                Ok(Frame::Settings {
                    clear: flags & FLAG_CLEAR_SETTINGS != 0,
                    values,
                })
            }
            TYPE_PING => {
                if payload.len() != 4 {
                    return invalid("PING", "length is not 4");
                }
                if flags != 0 {
                    return invalid("PING", "flags set");
                }
                match be32(payload, 0) {
                    0 => Err(SpdyError::ZeroStreamId),
                    id => Ok(Frame::Ping { id }),
                }
            }
            TYPE_GOAWAY => {
                if payload.len() != 8 || flags != 0 {
                    return invalid("GOAWAY", "length is not 8 or flags set");
                }
                Ok(Frame::GoAway {
                    last_good_stream_id: stream(0),
                    status: be32(payload, 4),
                })
            }
            TYPE_WINDOW_UPDATE => {
                if payload.len() != 8 || flags != 0 {
                    return invalid("WINDOW_UPDATE", "length is not 8 or flags set");
                }
                Ok(Frame::WindowUpdate {
                    stream_id: stream(0),
                    delta: be32(payload, 4) & 0x7fff_ffff,
                })
            }
            other => Err(SpdyError::UnknownFrameType(other)),
        }
    }

    /// Inflates a header block, continuing this direction's zlib stream; the first block
    /// asks for SPDY's dictionary.
    fn headers(&mut self, compressed: &[u8]) -> Result<Headers, SpdyError> {
        let mut block = Vec::with_capacity(compressed.len() * 4 + 64);
        let mut consumed = 0usize;
        loop {
            let (in_before, out_before) = (self.inflater.total_in(), self.inflater.total_out());
            let result = self.inflater.decompress_vec(
                &compressed[consumed..],
                &mut block,
                FlushDecompress::Sync,
            );
            consumed += (self.inflater.total_in() - in_before) as usize;
            let progressed =
                self.inflater.total_in() != in_before || self.inflater.total_out() != out_before;
            match result {
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflater
                        .set_dictionary(header_dictionary())
                        .map_err(|e| SpdyError::Compression(e.to_string()))?;
                    continue;
                }
                Err(e) => return Err(SpdyError::Compression(e.to_string())),
            }
            if block.len() > MAX_HEADER_BLOCK {
                return Err(SpdyError::HeaderBlock("over 4 MiB inflated".into()));
            }
            let room = block.len() < block.capacity();
            if consumed >= compressed.len() && room {
                break;
            }
            if !room {
                block.reserve(block.capacity().max(256));
            } else if !progressed {
                return Err(SpdyError::Compression(
                    "the compressed block does not end where the frame ends".into(),
                ));
            }
        }
        decode_header_block(&block)
    }
}

/// Writes frames for one direction of a connection, keeping that direction's zlib stream.
pub struct FrameWriter {
    deflater: Compress,
}

impl Default for FrameWriter {
    fn default() -> Self {
        // spdystream compresses with `zlib.BestCompression` and the dictionary.
        let mut deflater = Compress::new(Compression::best(), true);
        // Setting a dictionary on a fresh zlib stream cannot fail.
        let _ = deflater.set_dictionary(header_dictionary());
        FrameWriter { deflater }
    }
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Result<Vec<u8>, SpdyError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(SpdyError::FrameTooLarge(payload.len()));
    }
    let mut frame = Vec::with_capacity(8 + payload.len());
    frame.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    frame.extend_from_slice(&kind.to_be_bytes());
    frame.extend_from_slice(&((u32::from(flags) << 24) | payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(payload);
    Ok(frame)
}

fn fin_flag(fin: bool) -> u8 {
    if fin { FLAG_FIN } else { 0 }
}

impl FrameWriter {
    /// The bytes of `frame` (spdystream `Framer.WriteFrame`).
    pub fn encode(&mut self, frame: &Frame) -> Result<Vec<u8>, SpdyError> {
        match frame {
            Frame::Data {
                stream_id,
                fin,
                data,
            } => {
                if *stream_id == 0 {
                    return Err(SpdyError::ZeroStreamId);
                }
                if data.len() > MAX_PAYLOAD {
                    return Err(SpdyError::FrameTooLarge(data.len()));
                }
                let mut out = Vec::with_capacity(8 + data.len());
                out.extend_from_slice(&(stream_id & 0x7fff_ffff).to_be_bytes());
                out.extend_from_slice(
                    &((u32::from(fin_flag(*fin)) << 24) | data.len() as u32).to_be_bytes(),
                );
                out.extend_from_slice(data);
                Ok(out)
            }
            Frame::SynStream {
                stream_id,
                associated_to,
                priority,
                fin,
                unidirectional,
                headers,
            } => {
                let mut payload = Vec::new();
                payload.extend_from_slice(&nonzero(*stream_id)?.to_be_bytes());
                payload.extend_from_slice(&associated_to.to_be_bytes());
                payload.push(priority << 5);
                payload.push(0);
                payload.extend(self.compress(headers)?);
                let flags = fin_flag(*fin)
                    | if *unidirectional {
                        FLAG_UNIDIRECTIONAL
                    } else {
                        0
                    };
                control(TYPE_SYN_STREAM, flags, &payload)
            }
            Frame::SynReply {
                stream_id,
                fin,
                headers,
            }
            | Frame::Headers {
                stream_id,
                fin,
                headers,
            } => {
                let kind = if matches!(frame, Frame::SynReply { .. }) {
                    TYPE_SYN_REPLY
                } else {
                    TYPE_HEADERS
                };
                let mut payload = nonzero(*stream_id)?.to_be_bytes().to_vec();
                payload.extend(self.compress(headers)?);
                control(kind, fin_flag(*fin), &payload)
            }
            Frame::RstStream { stream_id, status } => {
                let mut payload = nonzero(*stream_id)?.to_be_bytes().to_vec();
                payload.extend_from_slice(&status.to_be_bytes());
                control(TYPE_RST_STREAM, 0, &payload)
            }
            Frame::Settings { clear, values } => {
                let mut payload = (values.len() as u32).to_be_bytes().to_vec();
                for (flags, id, value) in values {
                    payload.extend_from_slice(
                        &((u32::from(*flags) << 24) | (id & 0xff_ffff)).to_be_bytes(),
                    );
                    payload.extend_from_slice(&value.to_be_bytes());
                }
                let flags = if *clear { FLAG_CLEAR_SETTINGS } else { 0 };
                control(TYPE_SETTINGS, flags, &payload)
            }
            Frame::Ping { id } => control(TYPE_PING, 0, &nonzero(*id)?.to_be_bytes()),
            Frame::GoAway {
                last_good_stream_id,
                status,
            } => {
                let mut payload = last_good_stream_id.to_be_bytes().to_vec();
                payload.extend_from_slice(&status.to_be_bytes());
                control(TYPE_GOAWAY, 0, &payload)
            }
            Frame::WindowUpdate { stream_id, delta } => {
                let mut payload = stream_id.to_be_bytes().to_vec();
                payload.extend_from_slice(&delta.to_be_bytes());
                control(TYPE_WINDOW_UPDATE, 0, &payload)
            }
        }
    }

    /// Deflates a header block as a sync-flushed continuation of this direction's stream.
    fn compress(&mut self, headers: &[(String, String)]) -> Result<Vec<u8>, SpdyError> {
        let block = encode_header_block(headers);
        let mut out = Vec::with_capacity(block.len() + 64);
        let mut consumed = 0usize;
        loop {
            let before = self.deflater.total_in();
            self.deflater
                .compress_vec(&block[consumed..], &mut out, FlushCompress::Sync)
                .map_err(|e| SpdyError::Compression(e.to_string()))?;
            consumed += (self.deflater.total_in() - before) as usize;
            if consumed >= block.len() && out.len() < out.capacity() {
                return Ok(out);
            }
            out.reserve(out.capacity().max(64));
        }
    }
}

fn nonzero(id: u32) -> Result<u32, SpdyError> {
    if id == 0 {
        Err(SpdyError::ZeroStreamId)
    } else {
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Headers {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_dictionary_is_spdy3s() {
        let dictionary = header_dictionary();
        assert_eq!(dictionary.len(), 1423);
        // Its Adler-32, as zlib records it in the stream header (FDICT).
        let mut probe = Compress::new(Compression::best(), true);
        assert_eq!(probe.set_dictionary(dictionary).unwrap(), 0xe3c6_a7c2);
    }

    #[test]
    fn header_blocks_round_trip_and_reject_bad_blocks() {
        let port = h(&[
            ("streamtype", "error"),
            ("port", "8080"),
            ("requestid", "0"),
        ]);
        let block = encode_header_block(&port);
        assert_eq!(&block[..4], &[0, 0, 0, 3]);
        assert_eq!(decode_header_block(&block).unwrap(), port);
        // Repeated names travel as one NUL-joined value and come back apart.
        let repeated = h(&[("a", "1"), ("b", "x"), ("a", "2")]);
        let block = encode_header_block(&repeated);
        assert_eq!(&block[..4], &[0, 0, 0, 2]);
        assert_eq!(
            decode_header_block(&block).unwrap(),
            h(&[("a", "1"), ("a", "2"), ("b", "x")])
        );
        // Upper-case names are written lower-cased, as Go's http.Header keys are.
        let block = encode_header_block(&h(&[("StreamType", "data")]));
        assert_eq!(
            decode_header_block(&block).unwrap(),
            h(&[("streamtype", "data")])
        );
        let cases: &[(&[u8], &str)] = &[
            (b"\0\0", "truncated"),
            (b"\0\0\0\x01\0\0\0\x01A\0\0\0\0", "not lowercased"),
            (
                b"\0\0\0\x02\0\0\0\x01a\0\0\0\0\0\0\0\x01a\0\0\0\0",
                "multiple headers",
            ),
            (b"\0\0\0\x01\0\0\0\x05ab", "truncated"),
            (b"\0\0\0\0x", "after the last header"),
            (b"\xff\0\0\0", "headers"),
        ];
        for (block, want) in cases {
            let err = decode_header_block(block).unwrap_err().to_string();
            assert!(err.contains(want), "{block:?}: {err}");
        }
    }

    /// Every frame type survives writing and reading, with the header blocks of several
    /// frames sharing one zlib stream per direction.
    #[test]
    fn frames_round_trip_through_one_compression_stream() {
        let frames = vec![
            Frame::SynStream {
                stream_id: 1,
                associated_to: 0,
                priority: 0,
                fin: false,
                unidirectional: false,
                headers: h(&[("port", "80"), ("requestid", "0"), ("streamtype", "error")]),
            },
            Frame::SynReply {
                stream_id: 1,
                fin: false,
                headers: vec![],
            },
            Frame::Data {
                stream_id: 1,
                fin: true,
                data: vec![],
            },
            Frame::SynStream {
                stream_id: 3,
                associated_to: 0,
                priority: 7,
                fin: true,
                unidirectional: true,
                headers: h(&[("port", "80"), ("requestid", "0"), ("streamtype", "data")]),
            },
            Frame::Headers {
                stream_id: 3,
                fin: true,
                headers: h(&[("x", "y")]),
            },
            Frame::Data {
                stream_id: 3,
                fin: false,
                data: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            },
            Frame::RstStream {
                stream_id: 3,
                status: rst::CANCEL,
            },
            Frame::Settings {
                clear: true,
                values: vec![(1, 4, 100), (0, 7, 65536)],
            },
            Frame::Ping { id: 1 },
            Frame::GoAway {
                last_good_stream_id: 3,
                status: 0,
            },
            Frame::WindowUpdate {
                stream_id: 3,
                delta: 1024,
            },
        ];
        let mut writer = FrameWriter::default();
        let mut reader = FrameReader::default();
        let mut wire = Vec::new();
        for frame in &frames {
            wire.extend(writer.encode(frame).unwrap());
        }
        // Arriving a few bytes at a time changes nothing.
        let mut buf = Vec::new();
        let mut read = Vec::new();
        for chunk in wire.chunks(5) {
            buf.extend_from_slice(chunk);
            while let Some(frame) = reader.next_frame(&mut buf).unwrap() {
                read.push(frame);
            }
        }
        assert!(buf.is_empty());
        assert_eq!(read, frames);
    }

    #[test]
    fn fixed_frames_have_spdystreams_bytes() {
        let mut writer = FrameWriter::default();
        let cases: Vec<(Frame, Vec<u8>)> = vec![
            (
                Frame::Data {
                    stream_id: 3,
                    fin: true,
                    data: b"hi".to_vec(),
                },
                vec![0, 0, 0, 3, 1, 0, 0, 2, b'h', b'i'],
            ),
            (
                Frame::RstStream {
                    stream_id: 5,
                    status: rst::CANCEL,
                },
                vec![0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 5],
            ),
            (
                Frame::Ping { id: 2 },
                vec![0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 2],
            ),
            (
                Frame::GoAway {
                    last_good_stream_id: 7,
                    status: 0,
                },
                vec![0x80, 3, 0, 7, 0, 0, 0, 8, 0, 0, 0, 7, 0, 0, 0, 0],
            ),
            (
                Frame::WindowUpdate {
                    stream_id: 1,
                    delta: 16,
                },
                vec![0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 16],
            ),
            (
                Frame::Settings {
                    clear: false,
                    values: vec![(0, 7, 1)],
                },
                vec![
                    0x80, 3, 0, 4, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 1,
                ],
            ),
        ];
        for (frame, bytes) in cases {
            assert_eq!(writer.encode(&frame).unwrap(), bytes, "{frame:?}");
            assert_eq!(
                FrameReader::default().parse(&bytes).unwrap(),
                frame,
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn malformed_frames_are_refused() {
        let cases: Vec<(Vec<u8>, SpdyError)> = vec![
            (vec![0, 0, 0, 0, 0, 0, 0, 0], SpdyError::ZeroStreamId),
            (
                vec![0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1],
                SpdyError::UnsupportedVersion(2),
            ),
            (
                vec![0x80, 3, 0, 0x0a, 0, 0, 0, 0],
                SpdyError::UnknownFrameType(10),
            ),
            (
                vec![0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0],
                SpdyError::InvalidControlFrame {
                    frame: "RST_STREAM",
                    reason: "status 0",
                },
            ),
            (
                vec![0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 0],
                SpdyError::ZeroStreamId,
            ),
            (
                vec![0x80, 3, 0, 6, 1, 0, 0, 4, 0, 0, 0, 1],
                SpdyError::InvalidControlFrame {
                    frame: "PING",
                    reason: "flags set",
                },
            ),
            (
                vec![0x80, 3, 0, 4, 0, 0, 0, 4, 0, 0, 0, 9],
                SpdyError::InvalidControlFrame {
                    frame: "SETTINGS",
                    reason: "more entries than bytes",
                },
            ),
            (
                vec![0x80, 3, 0, 1, 0, 0, 0, 2, 0, 0],
                SpdyError::InvalidControlFrame {
                    frame: "SYN_STREAM",
                    reason: "shorter than 10 bytes",
                },
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                FrameReader::default().parse(&bytes),
                Err(want.clone()),
                "{bytes:?}"
            );
        }
        // A header block that is not zlib is a compression error, not a panic.
        let mut garbage = vec![0x80, 3, 0, 2, 0, 0, 0, 8, 0, 0, 0, 1];
        garbage.extend_from_slice(b"junk");
        assert!(matches!(
            FrameReader::default().parse(&garbage),
            Err(SpdyError::Compression(_))
        ));
        // Frames are not parsed before they have arrived whole.
        let mut partial = vec![0, 0, 0, 1, 0, 0, 0, 4, b'a'];
        assert_eq!(FrameReader::default().next_frame(&mut partial), Ok(None));
        assert_eq!(partial.len(), 9);
    }

    /// What the real kubectl v1.36.3 wrote after the 101 of `KUBECTL_PORT_FORWARD_WEBSOCKETS=false
    /// kubectl port-forward pod/web 18091:8080` while curl made two requests through it
    /// (recorded between kubectl and `kube-sandbox serve --tls`): per connection an `error`
    /// stream it half-closes at once and a `data` stream carrying the request, every header
    /// block a continuation of one zlib stream that opens with SPDY's dictionary id.
    const KUBECTL_SPDY: &str = concat!(
        "800300010000003e0000000100000000000078f9e3c6a7c202253a703a2b294a4dcc851625aca9a0808614cb",
        "45e01c60616061c0c0c0c0590489c64c50f2663400000000ffff000000010100000080030001000000180000",
        "0003000000000000c2aa19540e2512d60b000000ffff0000000300000057474554202f636170747572656420",
        "485454502f312e310d0a486f73743a203132372e302e302e313a31383039310d0a557365722d4167656e743a",
        "206375726c2f372e38382e310d0a4163636570743a202a2f2a0d0a0d0a000000030100000080030001000000",
        "1400000005000000000000a2c4624300000000ffff0000000501000000800300010000001700000007000000",
        "000000826ac61425c22900000000ffff0000000700000055474554202f7365636f6e6420485454502f312e31",
        "0d0a486f73743a203132372e302e302e313a31383039310d0a557365722d4167656e743a206375726c2f372e",
        "38382e310d0a4163636570743a202a2f2a0d0a0d0a0000000701000000",
    );

    #[test]
    fn frames_recorded_from_kubectl_decode() {
        let bytes: Vec<u8> = (0..KUBECTL_SPDY.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&KUBECTL_SPDY[i..i + 2], 16).unwrap())
            .collect();
        let mut reader = FrameReader::default();
        let mut buf = bytes;
        let mut frames = Vec::new();
        while let Some(frame) = reader.next_frame(&mut buf).unwrap() {
            frames.push(frame);
        }
        assert!(buf.is_empty());
        let syn = |stream_id, kind: &str, id: &str| Frame::SynStream {
            stream_id,
            associated_to: 0,
            priority: 0,
            fin: false,
            unidirectional: false,
            headers: h(&[("streamtype", kind), ("port", "8080"), ("requestid", id)]),
        };
        let fin = |stream_id| Frame::Data {
            stream_id,
            fin: true,
            data: vec![],
        };
        let request = |stream_id, path: &str| {
            Frame::Data {
            stream_id,
            fin: false,
            data: format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:18091\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"
            )
            .into_bytes(),
        }
        };
        // Go's map order puts the second data stream's requestid first.
        let Frame::SynStream { headers, .. } = &frames[7] else {
            panic!("{:?}", frames[7]);
        };
        let mut sorted = headers.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            h(&[("port", "8080"), ("requestid", "1"), ("streamtype", "data")])
        );
        let expected = vec![
            syn(1, "error", "0"),
            fin(1),
            syn(3, "data", "0"),
            request(3, "/captured"),
            fin(3),
            syn(5, "error", "1"),
            fin(5),
            frames[7].clone(),
            request(7, "/second"),
            fin(7),
        ];
        assert_eq!(frames, expected);
    }
}
