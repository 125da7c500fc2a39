//! The simulated commands a container runs when exec'd or attached (`echo`, `hostname`,
//! `env`), shared by one-shot execs and the interactive shell.

use serde_json::Value;

/// What a simulated command printed and how it exited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit code.
    pub exit_code: i32,
}

/// Runs one of the simulated commands in a container of `pod` (its spec, named `pod_name`):
/// `echo`, `hostname` (the pod's hostname) and `env` (HOSTNAME and the container's literal env
/// values); anything else exits 127.
pub fn run_command(
    pod: &Value,
    pod_name: &str,
    container: &str,
    command: &[String],
) -> CommandOutput {
    let Some((program, args)) = command.split_first() else {
        return CommandOutput {
            exit_code: 127,
            stderr: "no command given\n".into(),
            ..Default::default()
        };
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    let hostname = pod
        .pointer("/spec/hostname")
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty())
        .unwrap_or(pod_name);
    let ok = |stdout: String| CommandOutput {
        stdout,
        ..Default::default()
    };
    match base {
        "echo" => match args.split_first() {
            Some((n, rest)) if n == "-n" => ok(rest.join(" ")),
            _ => ok(format!("{}\n", args.join(" "))),
        },
        "hostname" => ok(format!("{hostname}\n")),
        "env" => {
            let env = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c["name"] == container))
                .and_then(|c| c.get("env"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut out = format!("HOSTNAME={hostname}\n");
            for var in env.iter().filter(|v| v.get("valueFrom").is_none()) {
                let Some(name) = var.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let value = var.get("value").and_then(Value::as_str).unwrap_or("");
                out.push_str(&format!("{name}={value}\n"));
            }
            ok(out)
        }
        _ => CommandOutput {
            stdout: String::new(),
            stderr: format!("exec: \"{program}\": executable file not found in $PATH\n"),
            exit_code: 127,
        },
    }
}
