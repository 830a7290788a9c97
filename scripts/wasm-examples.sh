#!/bin/sh
# Builds the example WebAssembly filters (examples/filters) and the hostile
# test module into ${OUT:-bin/wasm} (gitignored): the Go ones with the Go
# toolchain (GOOS=wasip1 GOARCH=wasm), the Rust one with rustc when rustc
# and its wasm32-wasip1 target are installed (rustup adds the target) — otherwise it says so and the
# tests that need it skip with that reason.
set -eu
GO=${GO:-go}
OUT=${OUT:-bin/wasm}
mkdir -p "$OUT"
for d in examples/filters/*/; do
	name=$(basename "$d")
	[ -f "$d/main.go" ] || continue
	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 "$GO" build -trimpath -o "$OUT/$name.wasm" "./$d"
done
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 "$GO" build -trimpath -o "$OUT/hostile.wasm" ./internal/filter/wasm/testdata/hostile

RUSTC=${RUSTC:-$(command -v rustc || echo "$HOME/.cargo/bin/rustc")}
RUSTUP=$(command -v rustup || echo "$HOME/.cargo/bin/rustup")
# Where rustup manages the toolchain, the WASI target is installed here
# (from rustup's distribution server) rather than by hand.
if [ -x "$RUSTUP" ] && ! "$RUSTUP" target list --installed 2>/dev/null | grep -qx wasm32-wasip1; then
	echo "wasm examples: installing the Rust wasm32-wasip1 target with rustup"
	"$RUSTUP" target add wasm32-wasip1 || echo "wasm examples: rustup could not add wasm32-wasip1"
fi
rm -f "$OUT/rust-noop.wasm"
if [ -x "$RUSTC" ] && "$RUSTC" --print sysroot >/dev/null 2>&1 &&
	[ -d "$("$RUSTC" --print sysroot)/lib/rustlib/wasm32-wasip1" ]; then
	"$RUSTC" --edition 2021 -O --target wasm32-wasip1 -C strip=symbols examples/filters/rust-noop/main.rs -o "$OUT/rust-noop.wasm"
	echo "wasm examples: Go and Rust modules built into $OUT"
else
	echo "wasm examples: Go modules built into $OUT; the Rust example was NOT built (no rustc with the wasm32-wasip1 target: rustup target add wasm32-wasip1)"
fi
