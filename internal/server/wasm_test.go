package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/facet-sds/facet/internal/filter/wasm"
)

func TestWasmCacheDir(t *testing.T) {
	if got := wasmCacheDir("/data", ""); got != filepath.Join("/data", "wasm", "cache") {
		t.Errorf("serve: %s", got)
	}
	if got := wasmCacheDir("/data", "/c"); got != "/c" {
		t.Errorf("configured: %s", got)
	}
	if got := wasmCacheDir("", wasmCacheOff); got != "" {
		t.Errorf("off: %s", got)
	}
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if got := wasmCacheDir("", ""); got != filepath.Join("/xdg", "facet", "wasm") {
		t.Errorf("gateway: %s", got)
	}
}

// A gateway whose default cache place cannot be created still starts,
// without an on-disk cache; a configured one that cannot is an error.
func TestWasmCacheUnavailable(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// root writes anywhere: a file in the way does the job.
		ro = filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(ro, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CACHE_HOME", ro)
	logger := slog.New(slog.DiscardHandler)
	w, err := startWasm(context.Background(), "", "", wasm.BudgetConfig{}, nil, nil, logger)
	if err != nil {
		t.Fatalf("default cache place unusable: %v", err)
	}
	w.close()
	if _, err := startWasm(context.Background(), "", filepath.Join(ro, "x"), wasm.BudgetConfig{}, nil, nil, logger); err == nil {
		t.Fatal("a configured cache directory that cannot be made was accepted")
	}
}
