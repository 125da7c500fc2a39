//! What an exec or attach asks for (its streams and command) and what it sends back: the
//! frames of its output, channel byte first, and the `Status` it ends with; shared by the
//! WebSocket (`kubelet_api`) and SPDY (`remote_command`) forms.

use serde_json::{Value, json};

use super::commands::CommandOutput;

/// Channel of standard output.
pub(crate) const STDOUT_CHANNEL: u8 = 1;
/// Channel of standard error.
pub(crate) const STDERR_CHANNEL: u8 = 2;
/// Channel of the exit status.
pub(crate) const STATUS_CHANNEL: u8 = 3;

/// Which streams an exec or attach request wants, and the command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// Standard input.
    pub stdin: bool,
    /// Standard output.
    pub stdout: bool,
    /// Standard error.
    pub stderr: bool,
    /// A terminal (stderr goes to stdout).
    pub tty: bool,
    /// The command (exec).
    pub command: Vec<String>,
}

impl StreamOptions {
    /// Reads the query of an exec or attach request, in kube-apiserver's form (`input=1`) or
    /// the API's (`stdin=true`).
    pub fn parse(params: &[(String, String)], exec: bool) -> Result<StreamOptions, String> {
        let flag = |names: &[&str]| {
            params
                .iter()
                .any(|(k, v)| names.contains(&k.as_str()) && (v == "1" || v == "true"))
        };
        let options = StreamOptions {
            stdin: flag(&["input", "stdin"]),
            stdout: flag(&["output", "stdout"]),
            stderr: flag(&["error", "stderr"]),
            tty: flag(&["tty"]),
            command: params
                .iter()
                .filter(|(k, _)| k == "command")
                .map(|(_, v)| v.clone())
                .collect(),
        };
        if !(options.stdin || options.stdout || options.stderr) {
            return Err("you must specify at least 1 of stdin, stdout, stderr".into());
        }
        if exec && options.command.is_empty() {
            return Err("you must specify at least 1 command".into());
        }
        Ok(options)
    }
}

/// The `Status` an exec ends with on channel 3 (v4 and later).
pub fn exit_status(command: &[String], exit_code: i32) -> Value {
    if exit_code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command [{}], exit code {exit_code}",
            command.join(" ")
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]}
    })
}

/// The frames (channel byte first) an exec or attach sends, then the connection closes.
pub fn output_frames(
    options: &StreamOptions,
    output: &CommandOutput,
    protocol: Option<&str>,
) -> Vec<Vec<u8>> {
    let frame = |ch: u8, data: &[u8]| {
        let mut f = Vec::with_capacity(data.len() + 1);
        f.push(ch);
        f.extend_from_slice(data);
        f
    };
    let mut frames = Vec::new();
    if options.stdout && !output.stdout.is_empty() {
        frames.push(frame(STDOUT_CHANNEL, output.stdout.as_bytes()));
    }
    if !output.stderr.is_empty() {
        // A terminal has no separate stderr.
        if options.tty && options.stdout {
            frames.push(frame(STDOUT_CHANNEL, output.stderr.as_bytes()));
        } else if options.stderr {
            frames.push(frame(STDERR_CHANNEL, output.stderr.as_bytes()));
        }
    }
    let status = exit_status(&options.command, output.exit_code);
    match protocol {
        Some("v4.channel.k8s.io" | "v5.channel.k8s.io") => {
            frames.push(frame(STATUS_CHANNEL, status.to_string().as_bytes()));
        }
        _ if output.exit_code != 0 => {
            let message = status["message"].as_str().unwrap_or("").as_bytes().to_vec();
            frames.push(frame(STATUS_CHANNEL, &message));
        }
        _ => {}
    }
    frames
}
