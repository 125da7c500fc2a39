//! The Kairship API driven from Python with the client openapi-generator makes of its OpenAPI
//! document, against `kairship sandbox`.
//!
//! The API server publishes `/openapi.json`; any OpenAPI generator turns it into a client.
//! This program starts `kairship sandbox` (two Karmada instances, an admin and a viewer
//! token), generates the Python client with `openapi-generator-cli -g python`, and runs
//! `examples/python/sandbox_client.py` with it: the admin and the viewer list instances, the
//! admin creates a ConfigMap inside an instance that the viewer reads, and the viewer's create
//! is refused with 403. The script's lines are printed as they come.
//!
//! `cargo build -p kairship-bin && cargo run -p examples --bin generated_python_client`
//!
//! The `kairship` binary is `--kairship PATH`, else the one beside this program (cargo puts
//! both in `target/<profile>/`). The tools are looked up on PATH, then in the virtualenv
//! `.ci/run` installs (`~/.cache/kubeocean-rs/venv`): `openapi-generator-cli` (needs Java)
//! and a python with `pydantic`, `python-dateutil`, `urllib3` and `typing-extensions`. When
//! one is missing the program says which and exits with status 75 (`EX_TEMPFAIL`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;

/// Exit status when a tool is missing.
const MISSING_TOOL: i32 = 75;
/// How long `kairship sandbox` may take to come up.
const START_LIMIT: Duration = Duration::from_secs(180);

#[derive(Parser, Debug)]
#[command(about = "Drives `kairship sandbox` with a generated Python client")]
struct Cli {
    /// The `kairship` binary (default: beside this program).
    #[arg(long)]
    kairship: Option<PathBuf>,
}

/// `name` on PATH, else in the tools virtualenv.
fn find_tool(name: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let venv = PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache/kubeocean-rs/venv/bin")
            .join(name);
        venv.is_file().then_some(venv)
    })
}

/// A python that can import what the generated client imports.
fn find_python() -> Option<PathBuf> {
    let venv = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cache/kubeocean-rs/venv/bin/python"))
        .filter(|p| p.is_file());
    let candidates = [venv, find_tool("python3")];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args([
                "-c",
                "import pydantic, dateutil, urllib3, typing_extensions",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn missing(what: &str) -> ! {
    eprintln!(
        "missing tool: {what} (install: python3 -m venv ~/.cache/kubeocean-rs/venv && \
         ~/.cache/kubeocean-rs/venv/bin/pip install openapi-generator-cli pydantic \
         python-dateutil urllib3 typing-extensions, and a Java runtime)"
    );
    std::process::exit(MISSING_TOOL);
}

/// `kairship sandbox` and its directory, stopped and removed however this program ends.
struct Sandbox {
    child: Child,
    dir: PathBuf,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts `kairship sandbox` on `port` and waits for its `--- running` line.
fn start_sandbox(kairship: &Path, dir: &Path, port: u16) -> anyhow::Result<Sandbox> {
    let mut child = Command::new(kairship)
        .arg("sandbox")
        .arg(format!("--dir={}", dir.display()))
        .arg(format!("--api-port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", kairship.display()))?;
    let stdout = child.stdout.take().context("no stdout pipe")?;
    let sandbox = Sandbox {
        child,
        dir: dir.to_owned(),
    };
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + START_LIMIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with("--- running") => return Ok(sandbox),
            Ok(_) => {}
            Err(_) => bail!("kairship sandbox did not come up within {START_LIMIT:?}"),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let kairship = match cli.kairship {
        Some(path) => path,
        None => std::env::current_exe()?
            .parent()
            .context("this program has no folder")?
            .join("kairship"),
    };
    if !kairship.is_file() {
        bail!(
            "{} not found: build it with `cargo build -p kairship-bin` or pass --kairship",
            kairship.display()
        );
    }
    let generator =
        find_tool("openapi-generator-cli").unwrap_or_else(|| missing("openapi-generator-cli"));
    if find_tool("java").is_none() {
        missing("java");
    }
    let python = find_python().unwrap_or_else(|| {
        missing("a python with pydantic, python-dateutil, urllib3, typing-extensions")
    });

    let dir = std::env::temp_dir().join(format!("kairship-python-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let sandbox = start_sandbox(&kairship, &dir.join("sandbox"), port)?;
    let base = format!("http://127.0.0.1:{port}");
    println!("kairship sandbox serves the API at {base}");

    let client_dir = dir.join("client");
    let generated = Command::new(&generator)
        .arg("generate")
        .arg("-i")
        .arg(format!("{base}/openapi.json"))
        .args(["-g", "python", "-o"])
        .arg(&client_dir)
        .args([
            "--package-name",
            "kairship_client",
            "--global-property",
            "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false",
        ])
        .output()
        .context("running openapi-generator-cli")?;
    if !generated.status.success() {
        bail!(
            "openapi-generator-cli failed:\n{}",
            String::from_utf8_lossy(&generated.stderr)
        );
    }
    println!("proved: openapi-generator-cli made a Python client of {base}/openapi.json");

    let token = |user: &str| -> anyhow::Result<String> {
        let path = sandbox.dir.join(format!("{user}.token"));
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/sandbox_client.py");
    let run = Command::new(&python)
        .arg(&script)
        .env("PYTHONPATH", &client_dir)
        .env("KAIRSHIP_URL", &base)
        .env("KAIRSHIP_ADMIN_TOKEN", token("admin")?.trim())
        .env("KAIRSHIP_VIEWER_TOKEN", token("viewer")?.trim())
        .output()
        .context("running the Python script")?;
    print!("{}", String::from_utf8_lossy(&run.stdout));
    if !run.status.success() {
        bail!(
            "{} failed ({}):\n{}",
            script.display(),
            run.status,
            String::from_utf8_lossy(&run.stderr)
        );
    }
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
