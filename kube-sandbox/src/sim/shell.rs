//! The shell of a simulated container: `kubectl exec -it POD -- sh` reads command lines from
//! stdin and runs each with the simulated commands ([`super::commands::run_command`]),
//! `exit [N]` (or end of input) ends it. With a terminal (`tty`) it behaves as a terminal's
//! line discipline does for a shell: typed characters are echoed, Enter is `\r`, output lines
//! end in `\r\n`, backspace erases, Ctrl-C drops the line and Ctrl-D on an empty line exits,
//! and a `$ ` prompt is printed. `sh -c 'a; b'` runs its statements in turn. Pure.

use super::commands::{CommandOutput, run_command};
use serde_json::Value;

/// The prompt printed on a terminal.
pub const PROMPT: &str = "$ ";

/// Whether `command` starts an interactive shell (`sh`, `bash`, `ash`, with no `-c`).
pub fn is_interactive(command: &[String]) -> bool {
    let Some((program, args)) = command.split_first() else {
        return false;
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    matches!(base, "sh" | "bash" | "ash") && !args.iter().any(|a| a == "-c")
}

/// The words of a command line: split at blanks, `'...'` and `"..."` quote.
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// Runs a command as the container's shell would: `sh -c SCRIPT` runs the `;`-separated
/// statements of SCRIPT in turn (stopping at `exit N`), anything else is one command.
pub fn run(pod: &Value, pod_name: &str, container: &str, command: &[String]) -> CommandOutput {
    let script = match command {
        [program, flag, script, ..] if flag == "-c" && is_shell(program) => script,
        _ => return run_command(pod, pod_name, container, command),
    };
    let mut out = CommandOutput::default();
    for statement in script.split(['\n', ';']) {
        let words = words(statement);
        if words.is_empty() {
            continue;
        }
        if words[0] == "exit" {
            out.exit_code = words.get(1).and_then(|c| c.parse().ok()).unwrap_or(0);
            return out;
        }
        let one = run_command(pod, pod_name, container, &words);
        out.stdout.push_str(&one.stdout);
        out.stderr.push_str(&one.stderr);
        out.exit_code = one.exit_code;
    }
    out
}

fn is_shell(program: &str) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    matches!(base, "sh" | "bash" | "ash")
}

/// What the shell writes in answer to some input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// To stdout (on a terminal, everything).
    pub stdout: Vec<u8>,
    /// To stderr.
    pub stderr: Vec<u8>,
}

/// An interactive shell in one container.
#[derive(Debug)]
pub struct Shell {
    pod: Value,
    pod_name: String,
    container: String,
    tty: bool,
    line: Vec<u8>,
    exited: Option<i32>,
    /// The last byte was a `\r` (a `\n` right after it is the same Enter).
    after_cr: bool,
}

impl Shell {
    /// A shell in `container` of `pod`; `tty` when a terminal was asked for.
    pub fn new(pod: Value, pod_name: &str, container: &str, tty: bool) -> Shell {
        Shell {
            pod,
            pod_name: pod_name.to_string(),
            container: container.to_string(),
            tty,
            line: Vec::new(),
            exited: None,
            after_cr: false,
        }
    }

    /// What the shell prints when it starts (the prompt, on a terminal).
    pub fn start(&self) -> Written {
        Written {
            stdout: self.prompt(),
            ..Default::default()
        }
    }

    fn prompt(&self) -> Vec<u8> {
        if self.tty {
            PROMPT.as_bytes().to_vec()
        } else {
            Vec::new()
        }
    }

    /// The exit code, once the shell has ended.
    pub fn exited(&self) -> Option<i32> {
        self.exited
    }

    /// Ends the input (stdin closed): the shell exits 0, as `sh` does at end of input.
    pub fn close_input(&mut self) {
        if self.exited.is_none() {
            self.exited = Some(0);
        }
    }

    /// Feeds bytes read from stdin; returns what the shell writes.
    pub fn feed(&mut self, input: &[u8]) -> Written {
        let mut out = Written::default();
        for &b in input {
            if self.exited.is_some() {
                break;
            }
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            match b {
                b'\r' | b'\n' => {
                    // A terminal sends `\r` for Enter; `\r\n` is one line.
                    if b == b'\n' && after_cr {
                        continue;
                    }
                    if self.tty {
                        out.stdout.extend_from_slice(b"\r\n");
                    }
                    let line =
                        String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
                    self.run_line(&line, &mut out);
                    if self.exited.is_none() {
                        out.stdout.extend(self.prompt());
                    }
                }
                0x7f | 0x08 if self.tty => {
                    if self.line.pop().is_some() {
                        out.stdout.extend_from_slice(b"\x08 \x08");
                    }
                }
                0x03 if self.tty => {
                    self.line.clear();
                    out.stdout.extend_from_slice(b"^C\r\n");
                    out.stdout.extend(self.prompt());
                }
                0x04 if self.tty => {
                    if self.line.is_empty() {
                        out.stdout.extend_from_slice(b"exit\r\n");
                        self.exited = Some(0);
                    }
                }
                b => {
                    self.line.push(b);
                    if self.tty {
                        out.stdout.push(b);
                    }
                }
            }
        }
        out
    }

    fn run_line(&mut self, line: &str, out: &mut Written) {
        let words = words(line);
        let Some(first) = words.first() else { return };
        if first == "exit" {
            self.exited = Some(words.get(1).and_then(|c| c.parse().ok()).unwrap_or(0));
            return;
        }
        let done = run(&self.pod, &self.pod_name, &self.container, &words);
        if self.tty {
            // One stream on a terminal, with its line endings.
            for text in [&done.stdout, &done.stderr] {
                out.stdout
                    .extend_from_slice(text.replace('\n', "\r\n").as_bytes());
            }
        } else {
            out.stdout.extend_from_slice(done.stdout.as_bytes());
            out.stderr.extend_from_slice(done.stderr.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn interactive_shells_are_recognised() {
        for (command, want) in [
            (s(&["sh"]), true),
            (s(&["/bin/bash", "-i"]), true),
            (s(&["sh", "-c", "echo hi"]), false),
            (s(&["echo", "hi"]), false),
            (s(&[]), false),
        ] {
            assert_eq!(is_interactive(&command), want, "{command:?}");
        }
    }

    #[test]
    fn words_split_and_quote() {
        for (line, want) in [
            ("echo hello", s(&["echo", "hello"])),
            ("  echo   'a b'  \"c\"", s(&["echo", "a b", "c"])),
            ("echo ''", s(&["echo", ""])),
            ("", s(&[])),
        ] {
            assert_eq!(words(line), want, "{line}");
        }
    }

    #[test]
    fn sh_c_runs_statements() {
        let pod = json!({"spec": {"containers": [{"name": "app"}]}});
        let out = run(
            &pod,
            "p",
            "app",
            &s(&["sh", "-c", "echo a; echo b; exit 4; echo c"]),
        );
        assert_eq!((out.stdout.as_str(), out.exit_code), ("a\nb\n", 4));
        let out = run(&pod, "p", "app", &s(&["echo", "x"]));
        assert_eq!(out.stdout, "x\n");
    }

    #[test]
    fn a_terminal_echoes_runs_and_exits() {
        let pod = json!({"spec": {"containers": [{"name": "app"}]}});
        let mut shell = Shell::new(pod.clone(), "p", "app", true);
        assert_eq!(shell.start().stdout, b"$ ");
        let out = shell.feed(b"echo hellp\x7fo\r");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "echo hellp\x08 \x08o\r\nhello\r\n$ "
        );
        let out = shell.feed(b"nope\r");
        assert!(String::from_utf8_lossy(&out.stdout).contains("not found in $PATH\r\n$ "));
        let out = shell.feed(b"ab\x03");
        assert_eq!(out.stdout, b"ab^C\r\n$ ");
        shell.feed(b"exit 3\r");
        assert_eq!(shell.exited(), Some(3));

        let mut plain = Shell::new(pod, "p", "app", false);
        assert!(plain.start().stdout.is_empty());
        let out = plain.feed(b"echo hi\nnope\n");
        assert_eq!(out.stdout, b"hi\n");
        assert!(!out.stderr.is_empty());
        plain.close_input();
        assert_eq!(plain.exited(), Some(0));
    }
}
