#!/usr/bin/env python3
"""Writes the Kubernetes protobuf schemas kube-sandbox decodes and encodes with.

The field numbers and types come from the prost code of the `k8s-pb` crate (crates.io, which
ships no .proto files); the JSON names of messages and fields, which the upstream
`generated.proto` files use as proto names and prost renamed to Rust case, come back from
kube-apiserver's OpenAPI v2 document. Fields of messages the OpenAPI document lacks (older
API versions, internal types) get the lowerCamelCase of the Rust name.

Usage (from the repository root; `cargo info k8s-pb@0.9.0` downloads the crate's source into
the cargo registry):
    python3 kube-sandbox/proto/generate.py ~/.cargo/registry/src/*/k8s-pb-0.9.0 \
        ../shared/reference/kube-apiserver-v1.36/openapi/v2.json.gz kube-sandbox/proto
"""

import gzip
import json
import os
import re
import sys

HEADER = """// Derived from the Kubernetes generated.proto files (k8s.io/api, k8s.io/apimachinery,
// k8s.io/apiextensions-apiserver, k8s.io/kube-aggregator, k8s.io/metrics) as published in
// the k8s-pb crate {version}, with the JSON names of kube-apiserver v1.36's OpenAPI document.
// Written by kube-sandbox/proto/generate.py; do not edit.
//
// Copyright The Kubernetes Authors.
// Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file
// except in compliance with the License. You may obtain a copy of the License at
//     http://www.apache.org/licenses/LICENSE-2.0
// Unless required by applicable law or agreed to in writing, software distributed under the
// License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND.

syntax = "proto2";
"""

SCALARS = {"string", "int32", "int64", "bool", "double", "float", "bytes"}

# The packages kube-sandbox serves (the group versions of kube-apiserver v1.36's discovery,
# aggregated discovery v2 and v2beta1, metrics.k8s.io) and the apimachinery packages they
# import. Nothing else is written: every schema lengthens the build.
SERVED = {
    "api/admissionregistration/v1",
    "api/apidiscovery/v2",
    "api/apidiscovery/v2beta1",
    "api/apps/v1",
    "api/authentication/v1",
    "api/authorization/v1",
    "api/autoscaling/v1",
    "api/autoscaling/v2",
    "api/batch/v1",
    "api/certificates/v1",
    "api/coordination/v1",
    "api/core/v1",
    "api/discovery/v1",
    "api/events/v1",
    "api/flowcontrol/v1",
    "api/networking/v1",
    "api/node/v1",
    "api/policy/v1",
    "api/rbac/v1",
    "api/resource/v1",
    "api/scheduling/v1",
    "api/storage/v1",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1",
    "apimachinery/pkg/api/resource",
    "apimachinery/pkg/apis/meta/v1",
    "apimachinery/pkg/runtime",
    "apimachinery/pkg/util/intstr",
    "kube_aggregator/pkg/apis/apiregistration/v1",
    "metrics/pkg/apis/metrics/v1beta1",
}


def served_group_version(group, version, _kind, message):
    """Whether a kinds.tsv row belongs: its message is written and its group version served
    (`DeleteOptions` and `WatchEvent` are listed under every group version)."""
    package = message.rsplit(".", 1)[0]
    module = package[len("k8s.io."):].replace(".", "/")
    if module not in SERVED:
        return False
    if group == "":
        return version == "v1"
    return any(
        m.startswith("api/") and m.split("/")[1] == group.split(".")[0] and m.split("/")[2] == version
        for m in SERVED
    ) or (group, version) in {
        ("apiextensions.k8s.io", "v1"),
        ("apiregistration.k8s.io", "v1"),
        ("metrics.k8s.io", "v1beta1"),
    }


def norm(name):
    return re.sub(r"[^a-z0-9]", "", name.lower())


def lower_camel(snake):
    parts = snake.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def field_decl(json_name, tag):
    """`name = tag`, with the JSON name as an option where it is no proto identifier."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", json_name).lstrip("_")
    if ident == json_name:
        return f"{ident} = {tag}"
    return f'{ident} = {tag} [json_name = "{json_name}"]'


def parse_module(path):
    """[(struct name, [(rust field, prost attr, rust type)])] of one mod.rs."""
    text = open(path).read()
    messages = []
    current = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^pub struct (\w+) \{", line)
        if m:
            current = (m.group(1), [])
            messages.append(current)
        elif line.startswith("}"):
            current = None
        elif current is not None and line.strip().startswith("#[prost("):
            attr = line.strip()[len("#[prost(") : -2]
            decl = ""
            i += 1
            while True:
                decl += lines[i].strip()
                if decl.endswith(",") and decl.count("<") == decl.count(">"):
                    break
                i += 1
            m = re.match(r"pub (r#)?(\w+):\s*(.*),$", decl)
            if m is None:
                raise SystemExit(f"cannot parse {path}: {decl}")
            current[1].append((m.group(2), attr, m.group(3)))
        i += 1
    return messages


def inner_type(rust_type):
    """The message type path inside Option<..>/Vec<..>/Box<..>/BTreeMap<String, ..>."""
    t = re.sub(r"\s+", "", rust_type).replace(",>", ">")
    for wrapper in (
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
    ):
        while t.startswith(wrapper):
            t = t[len(wrapper) : -1]
    m = re.match(r"::prost::alloc::collections::BTreeMap<::prost::alloc::string::String,(.*)>$", t)
    if m:
        t = m.group(1).strip()
    return t


def main():
    crate, openapi_path, out = sys.argv[1:4]
    version = os.path.basename(os.path.normpath(crate))
    src = os.path.join(crate, "src")
    defs = json.load(gzip.open(openapi_path))["definitions"]
    modules = {}
    for root, _, files in os.walk(src):
        if "mod.rs" in files:
            module = os.path.relpath(root, src)
            parsed = parse_module(os.path.join(root, "mod.rs"))
            if parsed:
                modules[module] = parsed

    # Restore message names from the OpenAPI definitions of the same package.
    names = {}  # (module, rust name) -> proto name
    openapi_of = {}  # (module, rust name) -> definition
    for module, messages in modules.items():
        prefix = "io.k8s." + module.replace("/", ".").replace("_", "-") + "."
        by_norm = {norm(k[len(prefix) :]): k for k in defs if k.startswith(prefix) and "." not in k[len(prefix) :]}
        for rust_name, _ in messages:
            key = by_norm.get(norm(rust_name))
            names[(module, rust_name)] = key[len(prefix) :] if key else rust_name
            if key:
                openapi_of[(module, rust_name)] = defs[key]

    def package(module):
        return "k8s.io." + module.replace("/", ".")

    def resolve(module, path):
        parts = path.split("::")
        base = module.split("/")
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        target = "/".join(base + parts[:-1])
        return target, "." + package(target) + "." + names[(target, parts[-1])]

    kinds = []
    fallbacks = 0
    for module, messages in sorted(modules.items()):
        if module not in SERVED:
            continue
        imports = set()
        body = []
        for rust_name, fields in messages:
            proto_name = names[(module, rust_name)]
            definition = openapi_of.get((module, rust_name), {})
            json_names = {norm(p): p for p in definition.get("properties", {})}
            for gvk in definition.get("x-kubernetes-group-version-kind", []):
                kinds.append((gvk["group"], gvk["version"], gvk["kind"], package(module) + "." + proto_name))
            body.append(f"message {proto_name} {{")
            for rust_field, attr, rust_type in fields:
                tag = re.search(r'tag = "(\d+)"', attr).group(1)
                json_name = json_names.get(norm(rust_field))
                kind = attr.split(",")[0].split(" ")[0].strip()
                if json_name is None and definition and kind == "message" and "repeated" not in attr:
                    # An embedded Go struct (`json:",inline"`): its fields sit in the parent's JSON.
                    target = resolve(module, inner_type(rust_type))[0]
                    embedded = [f for n, f in modules[target] if n == inner_type(rust_type).split("::")[-1]]
                    if embedded and all(norm(f[0]) in json_names or f[1].startswith("message, optional") for f in embedded[0]):
                        json_name = "inline_" + rust_field
                if json_name is None:
                    json_name = lower_camel(rust_field)
                    if definition:
                        fallbacks += 1
                        print(f"no JSON name: {module} {proto_name}.{rust_field}", file=sys.stderr)
                if kind == "btree_map":
                    key_type, value_type = re.search(r'btree_map = "(\w+), (\w+)"', attr).groups()
                    if value_type == "message":
                        target, value_type = resolve(module, inner_type(rust_type))
                        if target != module:
                            imports.add(target)
                    body.append(f"  map<{key_type}, {value_type}> {field_decl(json_name, tag)};")
                    continue
                label = "repeated" if "repeated" in attr else "optional"
                if kind == "message":
                    target, proto_type = resolve(module, inner_type(rust_type))
                    if target != module:
                        imports.add(target)
                elif kind in SCALARS:
                    proto_type = kind
                else:
                    raise SystemExit(f"unhandled field kind {attr} in {module} {rust_name}")
                body.append(f"  {label} {proto_type} {field_decl(json_name, tag)};")
            body.append("}")
            body.append("")
        path = os.path.join(out, "k8s.io", module, "generated.proto")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(HEADER.format(version=version))
            f.write(f"\npackage {package(module)};\n\n")
            for imp in sorted(imports):
                f.write(f'import "k8s.io/{imp}/generated.proto";\n')
            f.write("\n" + "\n".join(body))
    with open(os.path.join(out, "kinds.tsv"), "w") as f:
        f.write("# group\tversion\tkind\tmessage (from the OpenAPI document's x-kubernetes-group-version-kind)\n")
        for row in sorted(set(kinds)):
            if served_group_version(*row):
                f.write("\t".join(row) + "\n")
    print(f"{len(modules)} packages, {len(set(kinds))} kinds, {fallbacks} fields without a JSON name", file=sys.stderr)


if __name__ == "__main__":
    main()
