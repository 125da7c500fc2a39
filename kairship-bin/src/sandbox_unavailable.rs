//! `kairship sandbox` in a build without the `sandbox` feature (an operator image): it says how
//! to get a build that has it.

/// Whatever was passed to `kairship sandbox`; this build cannot use it.
#[derive(clap::Args, Debug)]
pub struct SandboxArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    ignored: Vec<String>,
}

/// Explains the missing feature and exits with 2.
pub async fn run(args: SandboxArgs) -> anyhow::Result<()> {
    drop(args.ignored);
    eprintln!(
        "error: this kairship was built without the `sandbox` feature, so it cannot run the \
         sandbox; build one that has it (the feature is on by default): \
         cargo build -p kairship-bin --features sandbox"
    );
    std::process::exit(2)
}
