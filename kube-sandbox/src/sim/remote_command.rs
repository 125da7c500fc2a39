//! Exec and attach over SPDY/3.1 at the simulated kubelet, what kubectl falls back to (or
//! uses with `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`): the client negotiates
//! `v4.channel.k8s.io` … `channel.k8s.io` in `X-Stream-Protocol-Version`, then opens one
//! stream per channel it asked for, named by its `streamType` header (`error`, `stdin`,
//! `stdout`, `stderr`, and `resize` with a terminal from v3 on). Once all have arrived the
//! command runs; its output goes to the `stdout`/`stderr` streams and its end to the `error`
//! stream: the `Status` JSON in v4, the failure text in older protocols (cri-streaming
//! `remotecommand/httpstream.go`, `createHTTPStreamStreams`, `v4WriteStatusFunc`,
//! `v1WriteStatusFunc`; `exec.go`, `ServeExec`). Then the kubelet says GOAWAY.
//!
//! The simulated commands do not run concurrently with their input: a shell (`sh` with stdin)
//! reads all of stdin, up to the client's end of it, before it answers; other commands and
//! attach ignore stdin.

use super::command_streams::{StreamOptions, output_frames};
use super::commands::CommandOutput;
use super::port_forward::frame_writer;
use super::spdy::{Frame, FrameReader, header};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// Protocols of exec and attach over SPDY, in kubelet's order
/// (`remotecommand.SupportedStreamingProtocols`).
pub const PROTOCOLS: &[&str] = &[
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];

/// What the simulated container does with a command's input.
pub enum Command {
    /// Output known before any input (a non-interactive command, or attach).
    Fixed(CommandOutput),
    /// A shell reading its commands from stdin.
    Shell(Box<super::shell::Shell>),
}

/// The stream ids of one exec or attach, by type.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Streams {
    /// `error`: the exit status.
    pub error: Option<u32>,
    /// `stdin`.
    pub stdin: Option<u32>,
    /// `stdout`.
    pub stdout: Option<u32>,
    /// `stderr`.
    pub stderr: Option<u32>,
    /// `resize`: terminal sizes, which change nothing here.
    pub resize: Option<u32>,
}

impl Streams {
    /// Records a new stream; false for an unknown stream type (kubelet logs and ignores it).
    pub fn add(&mut self, stream_id: u32, stream_type: &str) -> bool {
        let slot = match stream_type {
            "error" => &mut self.error,
            "stdin" => &mut self.stdin,
            "stdout" => &mut self.stdout,
            "stderr" => &mut self.stderr,
            "resize" => &mut self.resize,
            _ => return false,
        };
        *slot = Some(stream_id);
        true
    }

    fn count(&self) -> usize {
        [
            self.error,
            self.stdin,
            self.stdout,
            self.stderr,
            self.resize,
        ]
        .iter()
        .filter(|s| s.is_some())
        .count()
    }
}

/// How many streams kubelet waits for: the error stream, one per standard stream asked for,
/// and the resize stream with a terminal from v3 on (`createHTTPStreamStreams`).
pub fn expected_streams(options: &StreamOptions, protocol: &str) -> usize {
    let resizing = matches!(protocol, "v4.channel.k8s.io" | "v3.channel.k8s.io");
    1 + usize::from(options.stdin)
        + usize::from(options.stdout)
        + usize::from(options.stderr && !options.tty)
        + usize::from(options.tty && resizing)
}

/// Serves one exec or attach over an upgraded SPDY connection.
pub async fn serve_spdy<IO>(
    io: IO,
    protocol: &'static str,
    options: StreamOptions,
    command: Command,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut rd, wr) = tokio::io::split(io);
    let (frames, writer) = frame_writer(wr);
    let mut decoder = FrameReader::default();
    let (mut buf, mut chunk) = (Vec::new(), vec![0u8; 32 * 1024]);
    let mut streams = Streams::default();
    let mut stdin = Vec::new();
    let mut stdin_done = false;
    let mut last_stream = 0;
    let wants_stdin = matches!(command, Command::Shell(_));
    let expected = expected_streams(&options, protocol);
    let ready = 'connection: loop {
        while let Ok(Some(frame)) = decoder.next_frame(&mut buf) {
            match frame {
                Frame::SynStream {
                    stream_id, headers, ..
                } => {
                    last_stream = last_stream.max(stream_id);
                    let kind = header(&headers, "streamtype").unwrap_or_default();
                    if !streams.add(stream_id, kind) {
                        tracing::debug!("exec stream {stream_id} of unknown type {kind:?}");
                    }
                    let reply = Frame::SynReply {
                        stream_id,
                        fin: false,
                        headers: Vec::new(),
                    };
                    if frames.send(reply).await.is_err() {
                        break 'connection false;
                    }
                }
                Frame::Data {
                    stream_id,
                    fin,
                    data,
                } if Some(stream_id) == streams.stdin => {
                    stdin.extend_from_slice(&data);
                    stdin_done |= fin;
                }
                Frame::RstStream { stream_id, .. } if Some(stream_id) == streams.stdin => {
                    stdin_done = true;
                }
                Frame::Ping { id } if id % 2 == 1 => {
                    let _ = frames.send(Frame::Ping { id }).await;
                }
                Frame::GoAway { .. } => break 'connection false,
                _ => {}
            }
        }
        if streams.count() >= expected && (!wants_stdin || !options.stdin || stdin_done) {
            break true;
        }
        let read = tokio::select! {
            _ = shutdown.cancelled() => break false,
            read = rd.read(&mut chunk) => read,
        };
        match read {
            Ok(0) | Err(_) => break false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    if ready {
        let output = match command {
            Command::Fixed(output) => output,
            Command::Shell(mut shell) => {
                let mut written = shell.start();
                let fed = shell.feed(&stdin);
                written.stdout.extend(fed.stdout);
                written.stderr.extend(fed.stderr);
                shell.close_input();
                CommandOutput {
                    stdout: String::from_utf8_lossy(&written.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&written.stderr).into_owned(),
                    exit_code: shell.exited().unwrap_or(0),
                }
            }
        };
        // The WebSocket channels of the same answer: 1 stdout, 2 stderr, 3 the status.
        for frame in output_frames(&options, &output, Some(protocol)) {
            let Some((&channel, data)) = frame.split_first() else {
                continue;
            };
            let stream = match channel {
                1 => streams.stdout,
                2 => streams.stderr,
                _ => streams.error,
            };
            if let Some(stream_id) = stream {
                let data = Frame::Data {
                    stream_id,
                    fin: false,
                    data: data.to_vec(),
                };
                let _ = frames.send(data).await;
            }
        }
        for stream_id in [streams.stdout, streams.stderr, streams.error]
            .into_iter()
            .flatten()
        {
            let fin = Frame::Data {
                stream_id,
                fin: true,
                data: Vec::new(),
            };
            let _ = frames.send(fin).await;
        }
    }
    let _ = frames
        .send(Frame::GoAway {
            last_good_stream_id: last_stream,
            status: 0,
        })
        .await;
    drop(frames);
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::spdy::FrameWriter;
    use tokio::io::AsyncWriteExt;

    fn options(stdin: bool, stdout: bool, stderr: bool, tty: bool) -> StreamOptions {
        StreamOptions {
            stdin,
            stdout,
            stderr,
            tty,
            command: vec!["sh".into(), "-c".into(), "exit 3".into()],
        }
    }

    #[test]
    fn kubelet_waits_for_the_streams_asked_for() {
        let cases = [
            (options(false, true, true, false), "v4.channel.k8s.io", 3),
            (options(true, true, true, false), "v4.channel.k8s.io", 4),
            (options(true, true, false, true), "v4.channel.k8s.io", 4),
            (options(true, true, false, true), "v2.channel.k8s.io", 3),
            // A terminal has no stderr stream.
            (options(false, true, true, true), "v3.channel.k8s.io", 3),
            (options(false, true, false, false), "channel.k8s.io", 2),
        ];
        for (options, protocol, want) in cases {
            assert_eq!(
                expected_streams(&options, protocol),
                want,
                "{options:?} {protocol}"
            );
        }
        let mut streams = Streams::default();
        assert!(streams.add(1, "error"));
        assert!(streams.add(3, "stdout"));
        assert!(!streams.add(5, "other"));
        assert_eq!(streams.count(), 2);
    }

    #[tokio::test]
    async fn a_failing_command_ends_with_its_status_on_the_error_stream() {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let output = CommandOutput {
            stdout: "out\n".into(),
            stderr: "err\n".into(),
            exit_code: 3,
        };
        tokio::spawn(serve_spdy(
            server,
            "v4.channel.k8s.io",
            options(false, true, true, false),
            Command::Fixed(output),
            CancellationToken::new(),
        ));
        let mut writer = FrameWriter::default();
        for (stream_id, kind) in [(1, "error"), (3, "stdout"), (5, "stderr")] {
            let frame = Frame::SynStream {
                stream_id,
                associated_to: 0,
                priority: 0,
                fin: false,
                unidirectional: false,
                headers: vec![("streamtype".into(), kind.into())],
            };
            client
                .write_all(&writer.encode(&frame).unwrap())
                .await
                .unwrap();
        }
        let mut all = Vec::new();
        client.read_to_end(&mut all).await.unwrap();
        let mut reader = FrameReader::default();
        let mut data: std::collections::BTreeMap<u32, Vec<u8>> = Default::default();
        let mut frames = Vec::new();
        while let Some(frame) = reader.next_frame(&mut all).unwrap() {
            if let Frame::Data {
                stream_id, data: d, ..
            } = &frame
            {
                data.entry(*stream_id).or_default().extend(d);
            }
            frames.push(frame);
        }
        assert_eq!(data[&3], b"out\n");
        assert_eq!(data[&5], b"err\n");
        let status: serde_json::Value = serde_json::from_slice(&data[&1]).unwrap();
        assert_eq!(status["reason"], "NonZeroExitCode");
        assert_eq!(status["details"]["causes"][0]["message"], "3");
        assert_eq!(
            frames.last(),
            Some(&Frame::GoAway {
                last_good_stream_id: 5,
                status: 0
            })
        );
    }
}
