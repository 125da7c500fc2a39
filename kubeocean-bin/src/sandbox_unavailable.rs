//! `kubeocean sandbox` in a build without the `sandbox` feature (an operator image): it says
//! how to get a build that has it.

use std::process::ExitCode;

/// Whatever was passed to `kubeocean sandbox`; this build cannot use it.
#[derive(clap::Args, Debug)]
pub struct SandboxArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    ignored: Vec<String>,
}

/// Explains the missing feature and exits with 2.
pub fn main(args: SandboxArgs) -> ExitCode {
    drop(args.ignored);
    eprintln!(
        "error: this kubeocean was built without the `sandbox` feature, so it cannot run the \
         sandbox; build one that has it (the feature is on by default): \
         cargo build -p kubeocean-bin --features sandbox"
    );
    ExitCode::from(2)
}
