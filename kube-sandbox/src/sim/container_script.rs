//! What a simulated container prints, and when: its command and args read as the small shell
//! scripts containers are given (`sh -c 'echo started; while true; do echo tick; sleep 1;
//! done'`). A statement holding `echo TEXT` prints TEXT (`$(date)` becomes the time it is
//! printed), `sleep N` waits N seconds (`sleep infinity` ends the output), `exit N` ends the
//! script, and `while true` / `while :` repeats the statements up to `done` as a real
//! container's shell would. Statements are separated by `;` and newlines. Everything else
//! prints nothing. Pure; the kubelet runs the steps ([`super::kubelet`]).

use serde_json::Value;
use std::time::Duration;

/// One step of a container's output.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Print a line (`$(date)` is replaced when it is printed).
    Print(String),
    /// Wait.
    Sleep(Duration),
    /// Print nothing more.
    End,
}

/// A container's output: `once` runs first, then `repeat` runs again and again (when it is not
/// empty) until the container stops.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Script {
    /// The steps before a loop (or all of them).
    pub once: Vec<Step>,
    /// The body of a `while true` loop.
    pub repeat: Vec<Step>,
}

/// How long a loop without a `sleep` waits between rounds: the simulation prints such a loop
/// once a second rather than flooding its log.
pub const LOOP_WITHOUT_SLEEP: Duration = Duration::from_secs(1);

fn step_of(statement: &str) -> Option<Step> {
    let words: Vec<&str> = statement.split_whitespace().collect();
    if let Some(at) = statement.find("echo ") {
        let text = statement[at + 5..].trim().trim_matches(['"', '\'']);
        return Some(Step::Print(text.to_string()));
    }
    if words.first() == Some(&"echo") {
        return Some(Step::Print(String::new()));
    }
    if let Some(i) = words.iter().position(|w| *w == "sleep") {
        let arg = words.get(i + 1).map(|a| a.trim_matches(['"', '\'']));
        return match arg {
            Some("infinity") => Some(Step::End),
            Some(n) => n
                .trim_end_matches('s')
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| Step::Sleep(Duration::from_secs_f64(s))),
            None => None,
        };
    }
    words
        .windows(2)
        .any(|w| w[0] == "exit" && w[1].parse::<i64>().is_ok())
        .then_some(Step::End)
        .or_else(|| (words.last() == Some(&"exit")).then_some(Step::End))
}

fn is_endless_loop(statement: &str) -> bool {
    let words: Vec<&str> = statement.split_whitespace().collect();
    words
        .windows(2)
        .any(|w| w[0] == "while" && matches!(w[1], "true" | ":" | "[" | "[["))
}

/// The script of a container spec (its `command` and `args`).
pub fn script(container: &Value) -> Script {
    let words: Vec<&str> = ["command", "args"]
        .iter()
        .filter_map(|k| container.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    parse(&words.join(" "))
}

/// The script of a command line.
pub fn parse(text: &str) -> Script {
    let mut out = Script::default();
    let mut in_loop = false;
    for statement in text.split(['\n', ';']).map(str::trim) {
        if statement.is_empty() {
            continue;
        }
        if !in_loop && is_endless_loop(statement) {
            in_loop = true;
            continue;
        }
        let (body, ends_loop) = match statement.strip_prefix("do ") {
            Some(rest) => (rest.trim(), false),
            None if statement == "do" => continue,
            None if statement == "done" => ("", true),
            None => (statement, false),
        };
        if in_loop && ends_loop {
            // Nothing after an endless loop runs.
            break;
        }
        let Some(step) = step_of(body) else { continue };
        let steps = if in_loop {
            &mut out.repeat
        } else {
            &mut out.once
        };
        let end = step == Step::End;
        steps.push(step);
        if end {
            if !in_loop {
                out.repeat.clear();
                break;
            }
            // `exit` inside the loop: the loop runs once.
            let body = std::mem::take(&mut out.repeat);
            out.once.extend(body);
            break;
        }
    }
    if !out.repeat.is_empty() && !out.repeat.iter().any(|s| matches!(s, Step::Sleep(_))) {
        out.repeat.push(Step::Sleep(LOOP_WITHOUT_SLEEP));
    }
    out
}

/// A line as printed at `now`: `$(date)` (and `` `date` ``) become the time, as `date` prints
/// it in UTC.
pub fn expand(text: &str, now: jiff::Timestamp) -> String {
    if !text.contains("date") {
        return text.to_string();
    }
    let date = now.strftime("%a %b %e %H:%M:%S UTC %Y").to_string();
    text.replace("$(date)", &date).replace("`date`", &date)
}

impl Script {
    /// The lines printed at once, before any wait: what a container without waits prints.
    pub fn immediate(&self) -> (Vec<String>, usize) {
        let mut lines = Vec::new();
        for (i, step) in self.once.iter().enumerate() {
            match step {
                Step::Print(text) => lines.push(text.clone()),
                Step::Sleep(_) | Step::End => return (lines, i),
            }
        }
        (lines, self.once.len())
    }

    /// Whether anything is printed after the immediate lines.
    pub fn continues(&self) -> bool {
        let (_, at) = self.immediate();
        let rest = &self.once[at..];
        let prints_later = rest
            .iter()
            .take_while(|s| **s != Step::End)
            .any(|s| matches!(s, Step::Print(_)));
        prints_later || (!rest.contains(&Step::End) && !self.repeat.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Step {
        Step::Print(s.into())
    }
    fn s(secs: f64) -> Step {
        Step::Sleep(Duration::from_secs_f64(secs))
    }

    #[test]
    fn scripts_of_command_lines() {
        let cases = [
            ("nginx", vec![], vec![]),
            ("sh -c echo hello", vec![p("hello")], vec![]),
            ("sh -c echo hi; exit 3", vec![p("hi"), Step::End], vec![]),
            (
                "sh -c echo a; sleep 2; echo 'b'",
                vec![p("a"), s(2.0), p("b")],
                vec![],
            ),
            (
                "sh -c echo started; while true; do echo tick $(date); sleep 0.5; done",
                vec![p("started")],
                vec![p("tick $(date)"), s(0.5)],
            ),
            (
                "sh -c while :; do echo x; done",
                vec![],
                vec![p("x"), Step::Sleep(LOOP_WITHOUT_SLEEP)],
            ),
            ("sh -c sleep infinity; echo never", vec![Step::End], vec![]),
            (
                "sh -c while true\ndo\necho once\nexit 1\ndone",
                vec![p("once"), Step::End],
                vec![],
            ),
            ("sh -c sleep 5s", vec![s(5.0)], vec![]),
        ];
        for (text, once, repeat) in cases {
            assert_eq!(parse(text), Script { once, repeat }, "{text}");
        }
    }

    #[test]
    fn immediate_lines_stop_at_the_first_wait() {
        let c = json!({"command": ["sh", "-c"], "args": ["echo a; echo b; sleep 1; echo c"]});
        let sc = script(&c);
        assert_eq!(sc.immediate(), (vec!["a".to_string(), "b".to_string()], 2));
        assert!(sc.continues());
        let done = script(&json!({"command": ["sh", "-c", "echo a; exit 0"]}));
        assert!(!done.continues());
        let forever =
            script(&json!({"args": ["sh", "-c", "while true; do echo t; sleep 1; done"]}));
        assert!(forever.continues());
        assert!(!script(&json!({"image": "nginx"})).continues());
    }

    #[test]
    fn dates_are_expanded_when_printed() {
        let now: jiff::Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
        assert_eq!(
            expand("tick $(date)", now),
            "tick Fri Jan  2 03:04:05 UTC 2026"
        );
        assert_eq!(expand("plain", now), "plain");
    }
}
