//! Running a binary under test until it exits, with a guard against a hang, against a
//! sandbox cluster whose kubeconfig it reads from a file.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::{Cluster, ServeOptions, Served};

/// Runs `binary` with `args` until it exits, killing it after `guard` (and then panicking with
/// the end of its stderr); its exit status and everything it wrote to stderr.
pub fn run_to_exit(binary: &Path, args: &[String], guard: Duration) -> (ExitStatus, String) {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    let Some(mut stderr) = child.stderr.take() else {
        panic!("{} has no stderr pipe", binary.display());
    };
    // Read on a thread so that a chatty process cannot block on a full pipe.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => panic!("cannot wait for {}: {e}", binary.display()),
        }
        if started.elapsed() > guard {
            let _ = child.kill();
            let _ = child.wait();
            let text = reader.join().unwrap_or_default();
            panic!(
                "{args:?} still ran after {guard:?}; stderr ends:\n{}",
                tail(&text)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, reader.join().unwrap_or_default())
}

/// The last 2,000 bytes (at a character boundary) of a long output, for failure messages.
pub fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(2000);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// A loopback port held taken for as long as the returned listener lives.
pub fn busy_port() -> (TcpListener, SocketAddr) {
    let listener =
        TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("cannot take a port: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("no local address: {e}"));
    (listener, addr)
}

/// Asserts that a process failed (non-zero exit) saying `cannot listen on <addr> (<what>)`
/// and the operating system's words for the busy port exactly once.
pub fn assert_fails_naming(status: ExitStatus, stderr: &str, addr: SocketAddr, what: &str) {
    assert!(
        !status.success(),
        "exit status {status}; stderr:\n{}",
        tail(stderr)
    );
    let needle = if what.is_empty() {
        format!("cannot listen on {addr}: ")
    } else {
        format!("cannot listen on {addr} ({what})")
    };
    assert!(
        stderr.contains(&needle),
        "stderr does not say {needle:?}:\n{}",
        tail(stderr)
    );
    // The OS's words for the busy port, once: not repeated by a printed error chain.
    let cause = match TcpListener::bind(addr) {
        Ok(_) => panic!("{addr} is not busy"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        stderr.matches(cause.as_str()).count(),
        1,
        "the cause once:\n{}",
        tail(stderr)
    );
}

/// A sandbox cluster served over loopback with its kubeconfig written to
/// `<dir>/<cluster>.kubeconfig`, in a temporary directory of its own that is removed on drop.
pub struct ServedWithKubeconfig {
    /// The cluster.
    pub cluster: Cluster,
    /// Its loopback server.
    pub served: Served,
    /// The temporary directory, removed on drop.
    pub dir: PathBuf,
    /// The kubeconfig file, `<dir>/<cluster>.kubeconfig`.
    pub kubeconfig: PathBuf,
}

impl ServedWithKubeconfig {
    /// A fresh cluster named `cluster`, its files in the directory `<dir_name>-<process id>`.
    pub async fn start(cluster: &str, dir_name: &str) -> ServedWithKubeconfig {
        let dir = std::env::temp_dir().join(format!("{dir_name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        let kubeconfig = dir.join(format!("{cluster}.kubeconfig"));
        let cluster = Cluster::new(cluster);
        let served = cluster
            .serve(ServeOptions {
                kubeconfig_path: Some(kubeconfig.clone()),
                ..ServeOptions::default()
            })
            .await
            .unwrap_or_else(|e| panic!("cannot serve the sandbox: {e}"));
        ServedWithKubeconfig {
            cluster,
            served,
            dir,
            kubeconfig,
        }
    }

    /// Runs `binary` with `args`, `--kubeconfig` naming this cluster's and `--log-level=warn`
    /// until it exits (see [`run_to_exit`]), on a blocking thread so that the async runtime
    /// keeps serving the sandbox.
    pub async fn run_to_exit(
        &self,
        binary: &Path,
        args: &[&str],
        guard: Duration,
    ) -> (ExitStatus, String) {
        let binary = binary.to_owned();
        let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--kubeconfig={}", self.kubeconfig.display()));
        args.push("--log-level=warn".to_owned());
        tokio::task::spawn_blocking(move || run_to_exit(&binary, &args, guard))
            .await
            .unwrap_or_else(|e| panic!("the process runner failed: {e}"))
    }
}

impl Drop for ServedWithKubeconfig {
    fn drop(&mut self) {
        self.served.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A child process (a sandbox command under test) killed when dropped, whose standard output
/// lines can be awaited.
pub struct Background {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Everything read from its standard output so far.
    pub printed: String,
}

impl Background {
    /// Starts `command` with its standard output piped (stderr goes to the test's).
    pub fn spawn(mut command: Command) -> Background {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let Some(stdout) = child.stdout.take() else {
            panic!("{command:?} has no stdout pipe");
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Background {
            child,
            lines,
            printed: String::new(),
        }
    }

    /// Reads output until a line satisfies `done` (returned), or panics after `limit`.
    pub fn wait_for_line(&mut self, limit: Duration, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.printed.push_str(&line);
                    self.printed.push('\n');
                    if done(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "the expected line did not come within {limit:?}; the process printed:\n{}",
                    self.printed
                ),
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end_at_a_character_boundary() {
        assert_eq!(tail("short"), "short");
        let long = format!("{}é{}", "a".repeat(10), "b".repeat(1999));
        let end = tail(&long);
        assert!(end.ends_with('b') && end.len() <= 2000, "{}", end.len());
    }

    #[test]
    fn a_busy_port_cannot_be_bound_again() {
        let (_held, addr) = busy_port();
        assert!(TcpListener::bind(addr).is_err());
    }
}
