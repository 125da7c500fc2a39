#!/usr/bin/env bash
# Packages the workspace's crates exactly as they would be published (`cargo package`, which
# also builds each package from its own contents), then builds and tests this crate, which
# lives outside the workspace, against those packages: each dependency on a packaged crate
# is patched to the unpacked `.crate` file.
set -euo pipefail
consumer="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$consumer/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"

# The workspace's dev profile for the verification builds too (packages carry no profile), so
# they reuse the dependencies the workspace compiled in the same target directory.
profile=(--config 'profile.dev.debug="line-tables-only"' --config 'profile.dev.package."*".opt-level=1')
# --allow-dirty: what is checked is the packages' contents, also before a commit.
# `examples` is not published (publish = false).
cargo package --workspace --exclude examples --allow-dirty "${profile[@]}"

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
