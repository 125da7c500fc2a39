use super::*;
use serde_json::json;

/// The `openAPIV3Schema` of the kubeocean ResourceLeasingPolicy CRD (descriptions dropped).
const RLP_SCHEMA: &str = r#"
{
 "properties": {
  "apiVersion": {
   "type": "string"
  },
  "kind": {
   "type": "string"
  },
  "metadata": {
   "type": "object"
  },
  "spec": {
   "properties": {
"cluster": {
 "type": "string"
},
"forceReclaim": {
 "type": "boolean"
},
"gracefulReclaimPeriodSeconds": {
 "format": "int32",
 "type": "integer"
},
"nodeSelector": {
 "properties": {
  "nodeSelectorTerms": {
   "items": {
    "properties": {
     "matchExpressions": {
      "items": {
       "properties": {
        "key": {
         "type": "string"
        },
        "operator": {
         "type": "string"
        },
        "values": {
         "items": {
          "type": "string"
         },
         "type": "array",
         "x-kubernetes-list-type": "atomic"
        }
       },
       "required": [
        "key",
        "operator"
       ],
       "type": "object"
      },
      "type": "array",
      "x-kubernetes-list-type": "atomic"
     },
     "matchFields": {
      "items": {
       "properties": {
        "key": {
         "type": "string"
        },
        "operator": {
         "type": "string"
        },
        "values": {
         "items": {
          "type": "string"
         },
         "type": "array",
         "x-kubernetes-list-type": "atomic"
        }
       },
       "required": [
        "key",
        "operator"
       ],
       "type": "object"
      },
      "type": "array",
      "x-kubernetes-list-type": "atomic"
     }
    },
    "type": "object",
    "x-kubernetes-map-type": "atomic"
   },
   "type": "array",
   "x-kubernetes-list-type": "atomic"
  }
 },
 "required": [
  "nodeSelectorTerms"
 ],
 "type": "object",
 "x-kubernetes-map-type": "atomic"
},
"resourceLimits": {
 "items": {
  "properties": {
   "percent": {
    "format": "int32",
    "type": "integer"
   },
   "quantity": {
    "anyOf": [
     {
      "type": "integer"
     },
     {
      "type": "string"
     }
    ],
    "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
    "x-kubernetes-int-or-string": true
   },
   "resource": {
    "type": "string"
   }
  },
  "required": [
   "resource"
  ],
  "type": "object"
 },
 "type": "array"
},
"timeWindows": {
 "items": {
  "properties": {
   "days": {
    "items": {
     "type": "string"
    },
    "type": "array"
   },
   "end": {
    "type": "string"
   },
   "start": {
    "type": "string"
   }
  },
  "required": [
   "end",
   "start"
  ],
  "type": "object"
 },
 "type": "array"
}
   },
   "required": [
"cluster"
   ],
   "type": "object"
  },
  "status": {
   "properties": {
"activeTimeWindow": {
 "type": "boolean"
},
"conditions": {
 "items": {
  "properties": {
   "lastTransitionTime": {
    "format": "date-time",
    "type": "string"
   },
   "message": {
    "maxLength": 32768,
    "type": "string"
   },
   "observedGeneration": {
    "format": "int64",
    "minimum": 0,
    "type": "integer"
   },
   "reason": {
    "maxLength": 1024,
    "minLength": 1,
    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    "type": "string"
   },
   "status": {
    "enum": [
     "True",
     "False",
     "Unknown"
    ],
    "type": "string"
   },
   "type": {
    "maxLength": 316,
    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    "type": "string"
   }
  },
  "required": [
   "lastTransitionTime",
   "message",
   "reason",
   "status",
   "type"
  ],
  "type": "object"
 },
 "type": "array"
},
"lastAppliedTime": {
 "format": "date-time",
 "type": "string"
},
"phase": {
 "type": "string"
}
   },
   "type": "object"
  }
 },
 "type": "object"
}
"#;

fn rlp_schema() -> Value {
    serde_json::from_str(RLP_SCHEMA).expect("the RLP schema is valid JSON")
}

fn texts(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(FieldError::to_string_k8s).collect()
}

/// A root schema whose `spec` has the given properties (and optional extra keywords).
fn spec_schema(spec: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec
        }
    })
}

fn with_spec(spec: Value) -> Value {
    json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec})
}

#[test]
fn value_validation_keywords_use_apiserver_wording() {
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "type",
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}),
            json!({"replicas": "3"}),
            vec![
                r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
            ],
        ),
        (
            "integral float is an integer",
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}),
            json!({"replicas": 3.0}),
            vec![],
        ),
        (
            "fractional float is not",
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}),
            json!({"replicas": 3.5}),
            vec![
                r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#,
            ],
        ),
        (
            "required",
            json!({"type": "object", "required": ["clusterID"], "properties": {"clusterID": {"type": "string"}}}),
            json!({}),
            vec!["spec.clusterID: Required value"],
        ),
        (
            "enum",
            json!({"type": "object", "properties": {"mode": {"type": "string", "enum": ["Provision", "Adopt"]}}}),
            json!({"mode": "x"}),
            vec![r#"spec.mode: Unsupported value: "x": supported values: "Provision", "Adopt""#],
        ),
        (
            "integer enum",
            json!({"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}),
            json!({"n": 3}),
            vec![r#"spec.n: Unsupported value: 3: supported values: "1", "2""#],
        ),
        (
            "maxLength",
            json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 24}}}),
            json!({"name": "a-name-that-is-longer-than-24"}),
            vec!["spec.name: Too long: may not be longer than 24"],
        ),
        (
            "maxLength counts characters, not bytes",
            json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}),
            json!({"name": "äöü"}),
            vec![],
        ),
        (
            "minLength",
            json!({"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}}),
            json!({"name": ""}),
            vec![
                r#"spec.name: Invalid value: "": spec.name in body should be at least 1 chars long"#,
            ],
        ),
        (
            "pattern",
            json!({"type": "object", "properties": {"clusterID": {"type": "string", "pattern": "^[a-z]"}}}),
            json!({"clusterID": "ABC"}),
            vec![
                r#"spec.clusterID: Invalid value: "ABC": spec.clusterID in body should match '^[a-z]'"#,
            ],
        ),
        (
            "minimum",
            json!({"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}),
            json!({"replicas": 0}),
            vec![
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            ],
        ),
        (
            "exclusiveMaximum",
            json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}}}),
            json!({"n": 10}),
            vec!["spec.n: Invalid value: 10: spec.n in body should be less than 10"],
        ),
        (
            "exclusiveMinimum on a number",
            json!({"type": "object", "properties": {"r": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true}}}),
            json!({"r": 0.5}),
            vec!["spec.r: Invalid value: 0.5: spec.r in body should be greater than 0.5"],
        ),
        (
            "maximum on a number",
            json!({"type": "object", "properties": {"r": {"type": "number", "maximum": 1}}}),
            json!({"r": 1.5}),
            vec!["spec.r: Invalid value: 1.5: spec.r in body should be less than or equal to 1"],
        ),
        (
            "multipleOf int",
            json!({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 5}}}),
            json!({"n": 7}),
            vec!["spec.n: Invalid value: 7: spec.n in body should be a multiple of 5"],
        ),
        (
            "multipleOf fraction",
            json!({"type": "object", "properties": {"r": {"type": "number", "multipleOf": 0.5}}}),
            json!({"r": 0.25}),
            vec!["spec.r: Invalid value: 0.25: spec.r in body should be a multiple of 0.5"],
        ),
        (
            "maxItems",
            json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 2, "items": {"type": "string"}}}}),
            json!({"l": ["a", "b", "c"]}),
            vec!["spec.l: Too many: 3: must have at most 2 items"],
        ),
        (
            "minItems",
            json!({"type": "object", "properties": {"l": {"type": "array", "minItems": 1, "items": {"type": "string"}}}}),
            json!({"l": []}),
            vec!["spec.l: Invalid value: 0: spec.l in body should have at least 1 items"],
        ),
        (
            "uniqueItems",
            json!({"type": "object", "properties": {"l": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}}}),
            json!({"l": [1, 2, 1]}),
            vec![r#"spec.l: Invalid value: "": spec.l in body shouldn't contain duplicates"#],
        ),
        (
            "minProperties",
            json!({"type": "object", "properties": {"m": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "string"}}}}),
            json!({"m": {"a": "x"}}),
            vec!["spec.m: Invalid value: 1: spec.m in body should have at least 2 properties"],
        ),
        (
            "maxProperties",
            json!({"type": "object", "properties": {"m": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}}}),
            json!({"m": {"a": "x", "b": "y"}}),
            vec!["spec.m: Too many: 2: must have at most 1 items"],
        ),
        (
            "additionalProperties schema",
            json!({"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            json!({"labels": {"a": 1}}),
            vec![
                r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#,
            ],
        ),
        (
            "additionalProperties false",
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": false}}}),
            json!({"m": {"x": 1}}),
            vec![r#"spec.m: Invalid value: "x": spec.m.x in body is a forbidden property"#],
        ),
        (
            "nullable",
            json!({"type": "object", "properties": {"a": {"type": "string", "nullable": true}, "b": {"type": "string"}}}),
            json!({"a": null, "b": null}),
            vec![r#"spec.b: Invalid value: "null": spec.b in body must be of type string: "null""#],
        ),
        (
            "int-or-string",
            json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
            json!({"port": true}),
            vec![
                r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#,
            ],
        ),
        (
            "int-or-string accepts both",
            json!({"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": true}, "b": {"x-kubernetes-int-or-string": true}}}),
            json!({"a": 8080, "b": "http"}),
            vec![],
        ),
        (
            "format date-time",
            json!({"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}, "ok": {"type": "string", "format": "date-time"}}}),
            json!({"at": "yesterday", "ok": "2024-02-29T10:00:00.5+01:00"}),
            vec![
                r#"spec.at: Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday""#,
            ],
        ),
        (
            "format int32 is stripped by the apiserver",
            json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}}),
            json!({"n": 5_000_000_000_i64}),
            vec![],
        ),
        (
            "format byte and uuid",
            json!({"type": "object", "properties": {"b": {"type": "string", "format": "byte"}, "u": {"type": "string", "format": "uuid"}}}),
            json!({"b": "aGVsbG8=", "u": "not-a-uuid"}),
            vec![
                r#"spec.u: Invalid value: "not-a-uuid": spec.u in body must be of type uuid: "not-a-uuid""#,
            ],
        ),
        (
            "anyOf none",
            json!({"type": "object", "properties": {"s": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^bb"}]}}}),
            json!({"s": "c"}),
            vec![
                r#"<nil>: Invalid value: "": "spec.s" must validate at least one schema (anyOf)"#,
                r#"spec.s: Invalid value: "c": spec.s in body should match '^a'"#,
            ],
        ),
        (
            "oneOf two valid",
            json!({"type": "object", "properties": {"s": {"type": "string", "oneOf": [{"minLength": 1}, {"maxLength": 5}]}}}),
            json!({"s": "abc"}),
            vec![
                r#"<nil>: Invalid value: "": "spec.s" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
            ],
        ),
        (
            "allOf",
            json!({"type": "object", "properties": {"n": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]}}}),
            json!({"n": 5}),
            vec![
                "spec.n: Invalid value: 5: spec.n in body should be less than or equal to 3",
                r#"<nil>: Invalid value: "": "spec.n" must validate all the schemas (allOf)"#,
            ],
        ),
        (
            "not",
            json!({"type": "object", "properties": {"s": {"type": "string", "not": {"enum": ["forbidden"]}}}}),
            json!({"s": "forbidden"}),
            vec![r#"<nil>: Invalid value: "": "spec.s" must not validate the schema (not)"#],
        ),
        (
            "nested items",
            json!({"type": "object", "properties": {"timeWindows": {"type": "array", "items": {
                "type": "object", "required": ["start"], "properties": {"start": {"type": "string"}}}}}}),
            json!({"timeWindows": [{"start": "08:00"}, {}]}),
            vec!["spec.timeWindows[1].start: Required value"],
        ),
        (
            "list-type set",
            json!({"type": "object", "properties": {"days": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}),
            json!({"days": ["monday", "tuesday", "monday", "monday"]}),
            vec![r#"spec.days[2]: Duplicate value: "monday""#],
        ),
        (
            "list-type map",
            json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}),
            json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}, {"name": "http", "port": 8080}]}),
            vec![r#"spec.ports[2]: Duplicate value: map[string]interface {}{"name":"http"}"#],
        ),
        (
            "list-type map with two keys",
            json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"], "items": {"type": "object",
                "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}}}}}}),
            json!({"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}),
            vec![
                r#"spec.ports[2]: Duplicate value: map[string]interface {}{"port":53, "protocol":"UDP"}"#,
            ],
        ),
    ];
    for (name, spec, value, want) in cases {
        let errors = validate_object(&spec_schema(spec), &with_spec(value), None);
        assert_eq!(texts(&errors), want, "case {name}");
    }
}

#[test]
fn field_errors_render_like_apimachinery() {
    let cases: Vec<(FieldError, &str, &str)> = vec![
        (
            FieldError::required("spec.a", ""),
            "FieldValueRequired",
            "spec.a: Required value",
        ),
        (
            FieldError::forbidden("spec.a", "nope"),
            "FieldValueForbidden",
            "spec.a: Forbidden: nope",
        ),
        (
            FieldError::too_long("spec.a", json!("xxxx"), 3),
            "FieldValueTooLong",
            "spec.a: Too long: may not be longer than 3",
        ),
        (
            FieldError::too_many("spec.a", 4, 3),
            "FieldValueTooMany",
            "spec.a: Too many: 4: must have at most 3 items",
        ),
        (
            FieldError::duplicate("spec.a[1]", json!({"b": 1.5, "a": [true, null]})),
            "FieldValueDuplicate",
            r#"spec.a[1]: Duplicate value: map[string]interface {}{"a":[]interface {}{true, interface {}(nil)}, "b":1.5}"#,
        ),
        (
            FieldError::not_supported("spec.a", json!("x\"y"), &["A".to_string()]),
            "FieldValueNotSupported",
            r#"spec.a: Unsupported value: "x\"y": supported values: "A""#,
        ),
        (
            FieldError::invalid("spec.a", Some(json!(1e6)), "d"),
            "FieldValueInvalid",
            "spec.a: Invalid value: 1e+06: d",
        ),
        (
            FieldError::invalid(NIL_FIELD, None, "d"),
            "FieldValueInvalid",
            r#"<nil>: Invalid value: "null": d"#,
        ),
        (
            FieldError::type_invalid("spec.a", Some(json!("string")), "m"),
            "FieldValueTypeInvalid",
            r#"spec.a: Invalid value: "string": m"#,
        ),
    ];
    for (error, reason, text) in cases {
        assert_eq!(error.reason(), reason);
        assert_eq!(error.to_string_k8s(), text);
        assert_eq!(error.to_string(), text);
    }
    let prefixed = FieldError::required("properties[spec].type", "x")
        .with_prefix("spec.versions[0].schema.openAPIV3Schema");
    assert_eq!(
        prefixed.field,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type"
    );
    assert_eq!(
        FieldError::required(NIL_FIELD, "").with_prefix("p").field,
        "p"
    );
}

#[test]
fn root_metadata_is_only_checked_for_name_constraints() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}},
        "spec": {"type": "object"}
    }});
    let obj = json!({"metadata": {"name": "toolong", "labels": {"a": "b"}, "resourceVersion": "1"}, "spec": {}});
    assert_eq!(
        texts(&validate_object(&schema, &obj, None)),
        ["metadata.name: Too long: may not be longer than 5"]
    );
    let obj = json!({"metadata": {"name": "ok", "labels": {"a": "b"}}, "spec": {}});
    assert!(validate_object(&schema, &obj, None).is_empty());
}

#[test]
fn unchanged_values_ratchet_on_update() {
    let schema = spec_schema(json!({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 3},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}}
    }}));
    let old = with_spec(json!({"name": "toolong", "ports": [{"name": "a", "port": 200}]}));
    // Unchanged invalid values (also reordered list-map items) keep passing.
    let new = with_spec(
        json!({"name": "toolong", "ports": [{"name": "b", "port": 1}, {"name": "a", "port": 200}]}),
    );
    assert!(validate_object(&schema, &new, Some(&old)).is_empty());
    // A changed value is validated again, and so is everything on create.
    let new = with_spec(json!({"name": "toolonger", "ports": [{"name": "a", "port": 201}]}));
    assert_eq!(
        texts(&validate_object(&schema, &new, Some(&old))),
        [
            "spec.name: Too long: may not be longer than 3",
            "spec.ports[0].port: Invalid value: 201: spec.ports[0].port in body should be less than or equal to 100",
        ]
    );
    assert_eq!(validate_object(&schema, &old, None).len(), 2);
}

fn rules_schema() -> Value {
    spec_schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
            {"rule": "!has(self.quantity) || self.quantity != ''"},
            {"rule": "!has(self.name) || !self.name.startsWith('x')", "reason": "FieldValueForbidden", "fieldPath": ".name", "message": "name must not start with x"}
        ],
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "quantity": {"type": "string"},
            "clusterID": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
            "name": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self.size() <= 24"},
                {"rule": "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", "message": "must be a DNS label"}
            ]},
            "days": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [
                {"rule": "self.all(d, d in ['monday', 'tuesday'])", "message": "only monday and tuesday"}
            ]},
            "labels": {"type": "object", "additionalProperties": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}},
            "at": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self == timestamp('2024-01-01T00:00:00Z')"},
                {"rule": "self.missing == 1", "optionalOldSelf": true}
            ]}
        }
    }))
}

#[test]
fn cel_rules_fail_with_their_messages() {
    let schema = rules_schema();
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "valid",
            json!({"minReplicas": 1, "maxReplicas": 2, "name": "web", "days": ["monday"], "labels": {"a": "ok"}, "at": "x"}),
            vec![],
        ),
        (
            "object rule with message",
            json!({"minReplicas": 3, "maxReplicas": 2}),
            vec![r#"spec: Invalid value: "object": minReplicas must not exceed maxReplicas"#],
        ),
        (
            "rule without message",
            json!({"minReplicas": 1, "maxReplicas": 2, "quantity": ""}),
            vec![
                r#"spec: Invalid value: "object": failed rule: !has(self.quantity) || self.quantity != ''"#,
            ],
        ),
        (
            "string rules, reason and fieldPath",
            json!({"minReplicas": 1, "maxReplicas": 2, "name": "x-Name-that-is-far-too-long"}),
            vec![
                "spec.name: Forbidden: name must not start with x",
                r#"spec.name: Invalid value: "string": failed rule: self.size() <= 24"#,
                r#"spec.name: Invalid value: "string": must be a DNS label"#,
            ],
        ),
        (
            "list macro",
            json!({"minReplicas": 1, "maxReplicas": 2, "days": ["monday", "sunday"]}),
            vec![r#"spec.days: Invalid value: "array": only monday and tuesday"#],
        ),
        (
            "map values use key paths",
            json!({"minReplicas": 1, "maxReplicas": 2, "labels": {"k": "bad"}}),
            vec![r#"spec.labels[k]: Invalid value: "string": failed rule: self != 'bad'"#],
        ),
        (
            "runtime error",
            json!({"maxReplicas": 2}),
            vec![
                r#"spec: Invalid value: "object": no such key: minReplicas evaluating rule: minReplicas must not exceed maxReplicas"#,
            ],
        ),
    ];
    for (name, spec, want) in cases {
        let errors = validate_object(&schema, &with_spec(spec), None);
        assert_eq!(texts(&errors), want, "case {name}");
    }
}

#[test]
fn transition_rules_run_only_on_update() {
    let schema = rules_schema();
    let base = json!({"minReplicas": 1, "maxReplicas": 2});
    let mut created = base.clone();
    created["clusterID"] = json!("c1");
    assert!(validate_object(&schema, &with_spec(created.clone()), None).is_empty());
    assert!(
        validate_object(
            &schema,
            &with_spec(created.clone()),
            Some(&with_spec(created.clone()))
        )
        .is_empty()
    );
    let mut changed = base.clone();
    changed["clusterID"] = json!("c2");
    assert_eq!(
        texts(&validate_object(
            &schema,
            &with_spec(changed.clone()),
            Some(&with_spec(created))
        )),
        [r#"spec.clusterID: Invalid value: "string": Value is immutable"#]
    );
    // Without an old value for the field (it was unset before) the rule does not run.
    assert!(validate_object(&schema, &with_spec(changed), Some(&with_spec(base))).is_empty());
}

#[test]
fn transition_rules_correlate_list_map_items_by_key() {
    let schema = spec_schema(json!({"type": "object", "properties": {"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"},
            "port": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]}}}
    }}}));
    let old = with_spec(json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}));
    let reordered = with_spec(
        json!({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}, {"name": "c", "port": 3}]}),
    );
    assert!(validate_object(&schema, &reordered, Some(&old)).is_empty());
    let changed = with_spec(json!({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 5}]}));
    assert_eq!(
        texts(&validate_object(&schema, &changed, Some(&old))),
        [r#"spec.ports[1].port: Invalid value: "integer": immutable"#]
    );
}

#[test]
fn unsupported_rules_are_skipped_and_listed() {
    let schema = rules_schema();
    assert_eq!(
        unsupported_rules(&schema),
        [
            "properties[spec].properties[at].x-kubernetes-validations[0]: self == timestamp('2024-01-01T00:00:00Z'): unsupported: function timestamp() with 1 argument(s)",
            "properties[spec].properties[at].x-kubernetes-validations[1]: self.missing == 1: optionalOldSelf is not supported",
        ]
    );
    let spec = json!({"minReplicas": 1, "maxReplicas": 2, "at": "2023-01-01T00:00:00Z"});
    assert!(validate_object(&schema, &with_spec(spec), None).is_empty());
    assert!(unsupported_rules(&rlp_schema()).is_empty());
}

#[test]
fn blocking_schema_errors_skip_cel_rules() {
    let schema = rules_schema();
    let spec = json!({"minReplicas": "3", "maxReplicas": 2});
    assert_eq!(
        texts(&validate_object(&schema, &with_spec(spec), None)),
        [
            r#"spec.minReplicas: Invalid value: "string": spec.minReplicas in body must be of type integer: "string""#,
            r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#,
        ]
    );
}

#[test]
fn root_rules_see_only_name_in_metadata() {
    let schema = json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.size() <= 5", "message": "name too long"},
            {"rule": "!has(self.metadata.labels)"}
        ],
        "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}}});
    let obj = json!({"metadata": {"name": "abcdefg", "labels": {"a": "b"}}, "spec": {}});
    assert_eq!(
        texts(&validate_object(&schema, &obj, None)),
        [r#"<nil>: Invalid value: "object": name too long"#]
    );
}

#[test]
fn defaulting_fills_missing_fields_recursively() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "default": {}, "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "Provision"},
            "strategy": {"type": "object", "default": {"type": "Rolling"}, "properties": {
                "type": {"type": "string"}, "maxSurge": {"type": "integer", "default": 25}}},
            "note": {"type": "string"},
            "maybe": {"type": "string", "nullable": true},
            "windows": {"type": "array", "items": {"type": "object", "properties": {
                "days": {"type": "integer", "default": 7}}}},
            "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "percent": {"type": "integer", "default": 100}}}}
        }}
    }});
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "root spec default",
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"name": "a"}, "spec": {"replicas": 1, "mode": "Provision", "strategy": {"type": "Rolling", "maxSurge": 25}}}),
        ),
        (
            "present values win, nulls are dropped or defaulted",
            json!({"spec": {"replicas": 3, "mode": null, "note": null, "maybe": null, "strategy": {"type": "Recreate"}}}),
            json!({"spec": {"replicas": 3, "mode": "Provision", "maybe": null, "strategy": {"type": "Recreate", "maxSurge": 25}}}),
        ),
        (
            "items and additionalProperties",
            json!({"spec": {"windows": [{}, {"days": 2}], "limits": {"cpu": {}, "memory": {"percent": 50}}}}),
            json!({"spec": {"replicas": 1, "mode": "Provision", "strategy": {"type": "Rolling", "maxSurge": 25},
                "windows": [{"days": 7}, {"days": 2}], "limits": {"cpu": {"percent": 100}, "memory": {"percent": 50}}}}),
        ),
    ];
    for (name, mut obj, want) in cases {
        default_object(&schema, &mut obj);
        assert_eq!(obj, want, "case {name}");
    }
}

#[test]
fn pruning_drops_unknown_fields_and_reports_them() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {
            "known": {"type": "string"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "typed": {"type": "object", "properties": {"a": {"type": "string"}}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
        }}
    }});
    let mut obj = json!({
        "apiVersion": "x.io/v1", "kind": "X",
        "metadata": {"name": "a", "labels": {"l": "v"}, "whatever": 1},
        "status": {"phase": "Ready"},
        "spec": {
            "known": "k", "unknown": 1,
            "free": {"anything": {"deep": true}, "typed": {"a": "x", "b": "dropped"}},
            "labels": {"any": "kept"},
            "list": [{"name": "n", "extra": 1}, {"extra": 2}],
            "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}, "other": 1}
        }
    });
    let pruned = prune_unknown(&schema, &mut obj);
    assert_eq!(
        pruned,
        [
            "spec.embedded.other",
            "spec.embedded.spec.x",
            "spec.free.typed.b",
            "spec.list[0].extra",
            "spec.list[1].extra",
            "spec.unknown",
            "status",
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "x.io/v1", "kind": "X",
            "metadata": {"name": "a", "labels": {"l": "v"}, "whatever": 1},
            "spec": {
                "known": "k",
                "free": {"anything": {"deep": true}, "typed": {"a": "x"}},
                "labels": {"any": "kept"},
                "list": [{"name": "n"}, {}],
                "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
            }
        })
    );
}

#[test]
fn preserve_unknown_fields_at_the_root_keeps_everything_unknown() {
    let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
    let mut obj = json!({"spec": {"a": "x", "b": 1}, "status": {"c": 2}});
    assert_eq!(prune_unknown(&schema, &mut obj), ["spec.b"]);
    assert_eq!(obj, json!({"spec": {"a": "x"}, "status": {"c": 2}}));
}

#[test]
fn resource_leasing_policy_schema() {
    let schema = rlp_schema();
    assert_eq!(validate_crd_schema(&schema), []);
    let valid = json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": {"name": "rlp"},
        "spec": {
            "cluster": "cb-1",
            "gracefulReclaimPeriodSeconds": 30,
            "resourceLimits": [{"resource": "cpu", "quantity": "10"}, {"resource": "memory", "quantity": "10Gi"}, {"resource": "pods", "quantity": 5}],
            "timeWindows": [{"start": "08:00", "end": "18:00", "days": ["monday"]}],
            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]}
        },
        "status": {"phase": "Active", "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2024-05-01T10:00:00Z"}]}
    });
    assert_eq!(
        texts(&validate_object(&schema, &valid, None)),
        Vec::<String>::new()
    );

    let mut invalid = valid.clone();
    invalid["spec"]["unknownField"] = json!(1);
    assert_eq!(prune_unknown(&schema, &mut invalid), ["spec.unknownField"]);
    if let Some(spec) = invalid["spec"].as_object_mut() {
        spec.remove("cluster");
    }
    invalid["spec"]["resourceLimits"][0]["quantity"] = json!("lots");
    invalid["spec"]["timeWindows"][0] = json!({"start": "08:00"});
    invalid["spec"]["gracefulReclaimPeriodSeconds"] = json!("30s");
    invalid["status"]["conditions"][0]["status"] = json!("Maybe");
    invalid["status"]["conditions"][0]["lastTransitionTime"] = json!("May 1st");
    let pattern = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
    let mut got = texts(&validate_object(&schema, &invalid, None));
    got.sort();
    let mut want = vec![
        r#"spec.gracefulReclaimPeriodSeconds: Invalid value: "string": spec.gracefulReclaimPeriodSeconds in body must be of type integer: "string""#.to_string(),
        format!(r#"spec.resourceLimits[0].quantity: Invalid value: "lots": spec.resourceLimits[0].quantity in body should match '{pattern}'"#),
        "spec.timeWindows[0].end: Required value".to_string(),
        "spec.cluster: Required value".to_string(),
        r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#.to_string(),
        r#"status.conditions[0].lastTransitionTime: Invalid value: "May 1st": status.conditions[0].lastTransitionTime in body must be of type date-time: "May 1st""#.to_string(),
    ];
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn crd_schema_violations_use_apiserver_paths() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "missing types",
            json!({"type": "object", "properties": {"spec": {"properties": {"a": {}}}}}),
            vec![
                "properties[spec].properties[a].type: Required value: must not be empty for specified object fields",
                "properties[spec].type: Required value: must not be empty for specified object fields",
            ],
        ),
        (
            "root type, array items",
            json!({"type": "array"}),
            vec![
                "items: Required value: must be specified",
                r#"type: Invalid value: "array": must be object at the root"#,
            ],
        ),
        (
            "missing item type",
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}),
            vec![
                "properties[l].items.type: Required value: must not be empty for specified array items",
            ],
        ),
        (
            "nested defaults count when validating a default, metadata may constrain its name",
            json!({"type": "object", "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
                "spec": {"type": "object", "default": {}, "required": ["replicas"],
                    "properties": {"replicas": {"type": "integer", "default": 1}}}}}),
            vec![],
        ),
        (
            "metadata restrictions",
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            vec![
                "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ],
        ),
        (
            "unsupported keywords",
            json!({"type": "object", "properties": {
                "a": {"$ref": "#/definitions/x", "type": "string"},
                "b": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
                "c": {"type": "null"},
                "d": {"type": "text"},
                "e": {"type": "string", "pattern": "(unclosed"}
            }}),
            vec![
                "properties[a].$ref: Forbidden: $ref is not supported",
                "properties[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                "properties[c].type: Forbidden: type cannot be set to null, use nullable as an alternative",
                r#"properties[d].type: Unsupported value: "text": supported values: "array", "boolean", "integer", "number", "object", "string""#,
                r#"properties[e].pattern: Invalid value: "(unclosed": must be a valid regular expression, but isn't: error parsing regexp: unclosed group: `(unclosed`"#,
            ],
        ),
        (
            "properties with additionalProperties",
            json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
            vec![
                "properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            ],
        ),
        (
            "value validations stay structural",
            json!({"type": "object", "properties": {"s": {"type": "string", "anyOf": [{"type": "string"}, {"properties": {"x": {}}}]},
                "q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
            vec![
                "properties[s].anyOf[0].type: Forbidden: must be empty to be structural",
                "properties[s].properties[x]: Required value: because it is defined in properties[s].anyOf[1].properties[x]",
            ],
        ),
        (
            "list types",
            json!({"type": "object", "properties": {
                "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
                "b": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
                "c": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
            }}),
            vec![
                "properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
                r#"properties[b].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#,
                "properties[c].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ],
        ),
        (
            "defaults must validate and be pruned",
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "default": "one"},
                "o": {"type": "object", "default": {"x": 1}, "properties": {"y": {"type": "integer"}}}
            }}),
            vec![
                r#"properties[n].default: Invalid value: "string":  in body must be of type integer: "string""#,
                r#"properties[o].default: Invalid value: map[string]interface {}{"x":1}: must not have unknown fields"#,
            ],
        ),
        (
            "rule reasons",
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "Nope"}, {"rule": ""}]}),
            vec![
                "x-kubernetes-validations[1].rule: Required value",
                r#"x-kubernetes-validations[0].reason: Unsupported value: "Nope": supported values: "FieldValueRequired", "FieldValueForbidden", "FieldValueInvalid", "FieldValueDuplicate""#,
            ],
        ),
        (
            "preserve-unknown-fields false",
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}),
            vec![
                "x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
            ],
        ),
    ];
    for (name, schema, want) in cases {
        let mut want: Vec<String> = want.into_iter().map(String::from).collect();
        want.sort();
        assert_eq!(texts(&validate_crd_schema(&schema)), want, "case {name}");
    }
}

#[test]
fn formats_follow_go_openapi() {
    let cases: &[(&str, &str, bool)] = &[
        ("date-time", "2024-01-31T23:59:60Z", true),
        ("date-time", "2024-02-30T00:00:00Z", false),
        ("date-time", "2024-01-01 00:00:00Z", false),
        ("date-time", "2024-01-01T00:00:00", false),
        ("date", "2023-02-29", false),
        ("date", "2024-02-29", true),
        ("byte", "aGk=", true),
        ("byte", "aGk", false),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
        ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
        ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
        ("ipv4", "10.0.0.1", true),
        ("ipv4", "10.0.0.256", false),
        ("ipv6", "fe80::1", true),
        ("cidr", "10.0.0.0/8", true),
        ("cidr", "10.0.0.0/33", false),
        ("mac", "00:1a:2b:3c:4d:5e", true),
        ("mac", "00:1a:2b", false),
        ("hostname", "my-host.example.com", true),
        ("hostname", "-bad-", false),
        ("email", "a@b.io", true),
        ("email", "not an email", false),
        ("uri", "https://example.com/x", true),
        ("uri", "relative/path", false),
        ("duration", "1h30m", true),
        ("duration", "3 days", true),
        ("duration", "soon", false),
        ("hexcolor", "#ff00aa", true),
        ("bsonobjectid", "507f1f77bcf86cd799439011", true),
    ];
    for (format, value, want) in cases {
        assert_eq!(check_format(format, value), Some(*want), "{format} {value}");
    }
    assert_eq!(check_format("int32", "x"), None);
}
