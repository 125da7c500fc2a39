use super::value::MAX_DEPTH;
use super::*;
use serde_json::{Value, json};

fn run(rule: &str, self_json: Value) -> Result<CelValue, EvalError> {
    let program = match compile(rule) {
        Ok(p) => p,
        Err(e) => return Err(EvalError::Unsupported(format!("compile: {e}"))),
    };
    program.eval(&value_from_json(None, &self_json), None)
}

fn truth(rule: &str, self_json: Value) -> Option<bool> {
    match run(rule, self_json) {
        Ok(CelValue::Bool(b)) => Some(b),
        _ => None,
    }
}

#[test]
fn evaluates_table_of_rules() {
    let obj = json!({
        "name": "web-1", "minReplicas": 2, "maxReplicas": 5, "ratio": 0.5,
        "days": ["monday", "tuesday"], "labels": {"app": "web"}, "empty": ""
    });
    let cases: &[(&str, bool)] = &[
        ("self.minReplicas <= self.maxReplicas", true),
        ("self.minReplicas > self.maxReplicas", false),
        ("self.name.size() <= 24 && size(self.name) == 5", true),
        ("self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", true),
        ("matches(self.name, '^[A-Z]')", false),
        (
            "self.name.startsWith('web') && self.name.endsWith('-1')",
            true,
        ),
        ("self.name.contains('b-')", true),
        ("!has(self.quantity) || self.quantity != ''", true),
        ("has(self.empty) && self.empty == ''", true),
        (
            "self.days.all(d, d in ['monday', 'tuesday', 'friday'])",
            true,
        ),
        ("self.days.all(d, d in ['monday'])", false),
        ("self.days.exists(d, d == 'tuesday')", true),
        ("self.days.exists_one(d, d.startsWith('t'))", true),
        ("self.days.map(d, d.size()).sum() == 13", true),
        ("self.days.filter(d, d.size() > 6) == ['tuesday']", true),
        ("'app' in self.labels && self.labels['app'] == 'web'", true),
        ("self.labels.all(k, k.lowerAscii() == k)", true),
        ("self.days[1] == 'tuesday'", true),
        ("self.minReplicas + 3 == self.maxReplicas", true),
        (
            "self.maxReplicas % 2 == 1 && self.maxReplicas / 2 == 2",
            true,
        ),
        ("self.ratio < 1.0 && self.ratio * 2.0 == 1.0", true),
        ("self.ratio == 0.5 && 1 == 1.0 && 2u == 2", true),
        (
            "int('42') == 42 && string(7) == '7' && double(1) == 1.0",
            true,
        ),
        ("self.minReplicas > 3 ? false : true", true),
        (
            "'abc'.substring(1) == 'bc' && 'a,b'.split(',') == ['a', 'b']",
            true,
        ),
        (
            "'Hello'.upperAscii() == 'HELLO' && '  x '.trim() == 'x'",
            true,
        ),
        (
            "['a', 'b'].join('-') == 'a-b' && 'abcb'.lastIndexOf('b') == 3",
            true,
        ),
        ("[3, 1].isSorted() == false && [1, 3].max() == 3", true),
        ("\"esc\\n\".size() == 4 && r'\\d'.size() == 2", true),
        ("'''multi\nline'''.contains('\\n')", true),
        ("{'a': 1}.a == 1 && size({'a': 1, 'b': 2}) == 2", true),
        ("null == null && self.name != null", true),
        ("-self.minReplicas == -2 && 0x10 == 16", true),
    ];
    for (rule, want) in cases {
        assert_eq!(truth(rule, obj.clone()), Some(*want), "rule {rule}");
    }
}

#[test]
fn runtime_errors_match_cel_wording() {
    let obj = json!({"a": 1, "l": [1]});
    let cases: &[(&str, &str)] = &[
        ("self.missing == 1", "no such key: missing"),
        ("self.l[3] == 1", "index '3' out of range in list size '1'"),
        ("self.a / 0 == 1", "division by zero"),
        ("self.a % 0 == 1", "modulus by zero"),
        ("9223372036854775807 + self.a > 0", "integer overflow"),
    ];
    for (rule, want) in cases {
        assert_eq!(
            run(rule, obj.clone()).err(),
            Some(EvalError::Runtime(want.to_string())),
            "rule {rule}"
        );
    }
}

#[test]
fn logical_operators_absorb_errors() {
    let obj = json!({"a": 1});
    assert_eq!(truth("self.missing == 1 || true", obj.clone()), Some(true));
    assert_eq!(
        truth("false && self.missing == 1", obj.clone()),
        Some(false)
    );
    assert_eq!(
        truth("self.missing == 1 && false", obj.clone()),
        Some(false)
    );
    assert!(matches!(
        run("self.missing == 1 || false", obj),
        Err(EvalError::Runtime(_))
    ));
}

#[test]
fn unsupported_constructs_are_compile_errors() {
    for rule in [
        "self.x == timestamp('2020-01-01T00:00:00Z')",
        "duration('1h') > duration('1m')",
        "self.?x.orValue(1) == 1",
        "b'abc' == self.x",
        "quantity(self.q).isGreaterThan(quantity('1'))",
        "type(self) == int",
        "foo == 1",
        "self.x ==",
        "(self.x",
        "self.x = 1",
    ] {
        assert!(compile(rule).is_err(), "rule {rule} should not compile");
    }
}

#[test]
fn type_mismatches_are_unsupported_not_runtime_errors() {
    let obj = json!({"s": "x", "n": 1});
    assert!(matches!(
        run("self.s + self.n == 'x1'", obj.clone()),
        Err(EvalError::Unsupported(_))
    ));
    assert!(matches!(
        run("self.s < self.n", obj),
        Err(EvalError::Unsupported(_))
    ));
}

#[test]
fn old_self_marks_transition_rules() {
    let p = compile("self == oldSelf").map_err(|e| e.to_string());
    assert_eq!(p.as_ref().map(Program::uses_old_self), Ok(true));
    let p = compile("self.all(x, x > 0)").map_err(|e| e.to_string());
    assert_eq!(p.as_ref().map(Program::uses_old_self), Ok(false));
    // A macro variable named like a bound identifier is still in scope only inside the macro.
    assert!(compile("self.all(x, x > 0) && x > 0").is_err());
}

#[test]
fn schema_types_drive_conversion() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "number"}, "i": {"type": "integer"},
        "t": {"type": "string", "format": "date-time"},
        "q": {"x-kubernetes-int-or-string": true}
    }});
    let v = value_from_json(
        Some(&schema),
        &json!({"n": 3, "i": 3.0, "t": "2024-01-01T00:00:00Z", "q": "5"}),
    );
    let CelValue::Map(m) = v else {
        panic!("expected map")
    };
    assert!(matches!(m.get("n"), Some(CelValue::Double(d)) if *d == 3.0));
    assert!(matches!(m.get("i"), Some(CelValue::Int(3))));
    assert!(matches!(
        m.get("t"),
        Some(CelValue::Opaque {
            kind: OpaqueKind::Timestamp,
            ..
        })
    ));
    assert!(matches!(m.get("q"), Some(CelValue::String(s)) if s == "5"));
}

#[test]
fn escaped_property_names_resolve() {
    let obj = json!({"namespace": "a", "x-y": 1, "a.b": 2});
    assert_eq!(truth("self.__namespace__ == 'a'", obj.clone()), Some(true));
    assert_eq!(
        truth("self.x__dash__y == 1 && self.a__dot__b == 2", obj),
        Some(true)
    );
}

#[test]
fn deep_nesting_is_rejected_without_overflow() {
    let rule = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(compile(&rule).is_err());
    let rule = format!("{}true", "!".repeat(5000));
    assert!(compile(&rule).is_err());
    let rule = format!("1{}", " + 1".repeat(5000));
    assert!(compile(&rule).is_err());
    let rule = format!("self{}", ".a".repeat(5000));
    assert!(compile(&rule).is_err());
    let rule = format!("true{}", " && true".repeat(60));
    assert!(compile(&rule).is_ok());
}

#[test]
fn deepest_accepted_rules_evaluate_on_a_small_stack() {
    // The deepest rules the parser accepts must compile and evaluate well within a 2 MiB
    // async worker stack, even in unoptimised builds.
    let shapes: [(&str, &str, &str); 6] = [
        ("!(", "self.all(x, x > 0)", ")"),
        ("[", "1", "]"),
        ("self.all(x, ", "x > 0", ")"),
        ("(1 + ", "1", ")"),
        ("true ? (", "1", ") : 2"),
        ("size(", "'a'", ")"),
    ];
    for (open, core, close) in shapes {
        let rule_at = |d: usize| format!("{}{core}{}", open.repeat(d), close.repeat(d));
        let depth = (0..=MAX_DEPTH)
            .rev()
            .find(|d| compile(&rule_at(*d)).is_ok())
            .unwrap_or(0);
        assert!(depth >= 10, "{open}: depth {depth}");
        let rule = rule_at(depth);
        let handle = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || {
                let program = compile(&rule).map_err(|e| e.to_string())?;
                // Type errors are fine here; only the stack matters.
                let _ = program.eval(&value_from_json(None, &json!([1, 2])), None);
                Ok::<(), String>(())
            })
            .expect("spawn");
        assert_eq!(handle.join().ok(), Some(Ok(())), "{open}");
    }
}

#[test]
fn runaway_rules_hit_the_step_limit() {
    let depth = 12;
    let rule = format!("{}true{}", "self.all(x, ".repeat(depth), ")".repeat(depth));
    let started = std::time::Instant::now();
    let result = run(&rule, json!([1, 2, 3]));
    assert!(
        matches!(result, Err(EvalError::Unsupported(ref m)) if m.contains("step limit")),
        "{result:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
