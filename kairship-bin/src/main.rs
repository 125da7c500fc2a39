//! The `kairship` binary.

mod apiserver;
mod controller_manager;
mod oidc_flags;
#[cfg_attr(not(feature = "sandbox"), path = "sandbox_unavailable.rs")]
mod sandbox;
mod wiring;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kube_kit::process::{self, exit_code};

/// Kairship: the management plane of many Karmada instances.
#[derive(Parser, Debug)]
#[command(name = "kairship", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print Kairship's CustomResourceDefinitions as YAML.
    Crds,
    /// Run the controller-manager (instance lifecycle, statistics, status, roles, webhook).
    ControllerManager(Box<controller_manager::ControllerManagerArgs>),
    /// Run the API server (REST, OpenAPI, Swagger UI and the native proxy on one port).
    Apiserver(Box<apiserver::ApiserverArgs>),
    /// Print the API's OpenAPI 3.1 document as JSON.
    Openapi,
    /// Run a host and two Karmada-instance sandbox clusters with sample workloads, the
    /// controller-manager, the API server and two users (admin and viewer).
    Sandbox(sandbox::SandboxArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Crds => exit_code(print_crds()),
        Command::ControllerManager(args) => process::run(0, controller_manager::run(*args)),
        Command::Apiserver(args) => process::run(0, apiserver::run(*args)),
        Command::Openapi => exit_code(print_openapi()),
        Command::Sandbox(args) => process::run(0, sandbox::run(args)),
    }
}

fn print_crds() -> anyhow::Result<()> {
    let yaml = kairship_core::crds_yaml().context("rendering Kairship's CRDs")?;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(yaml.as_bytes())
        .context("writing CRDs to stdout")?;
    stdout.flush().context("writing CRDs to stdout")
}

fn print_openapi() -> anyhow::Result<()> {
    let spec = serde_json::to_string_pretty(&kairship_core::rest::openapi())
        .context("rendering the OpenAPI document")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{spec}").context("writing the OpenAPI document to stdout")
}
