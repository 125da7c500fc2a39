#!/usr/bin/env bash
# Packages the workspace's crates exactly as they would be published (`cargo package`), then
# builds and tests this crate, which lives outside the workspace, against those packages: each
# dependency on a packaged crate is patched to the unpacked `.crate` file. Building the
# libraries here from their unpacked packages is their verification, so `cargo package` does
# not build them a second time (`--no-verify`): that halves the step's cost on a cold machine.
# The binaries' packages are checked for their manifests and contents, not compiled.
set -euo pipefail
consumer="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$consumer/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"

# --allow-dirty: what is checked is the packages' contents, also before a commit.
# `examples` is not published (publish = false).
cargo package --workspace --exclude examples --allow-dirty --no-verify

# The published libraries (members with a library target, but not `publish = false`), name and
# version.
mapfile -t packages < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p.get("publish") != [] and any("lib" in t["kind"] for t in p["targets"]):
        print(p["name"], p["version"])
')
unpacked="$target/consumer-packages"
rm -rf "$unpacked"
mkdir -p "$unpacked"
patches=()
for entry in "${packages[@]}"; do
  read -r name version <<<"$entry"
  tar -xzf "$target/package/$name-$version.crate" -C "$unpacked"
  patches+=(--config "patch.crates-io.$name.path=\"$unpacked/$name-$version\"")
done

# Start from the workspace's lock file so the consumer resolves the same dependency versions
# (and reuses their compiled artifacts).
cp "$root/Cargo.lock" "$consumer/Cargo.lock"
cd "$consumer"
cargo test "${patches[@]}"
