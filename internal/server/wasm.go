package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/facet-sds/facet/internal/filter/wasm"
)

// wasmFilters is a gateway's sandboxed filter runtime: wazero with its
// on-disk compilation cache, so a restart does not recompile, and the
// catalog that loads the modules registered in the metadata store.
type wasmFilters struct {
	rt      *wasm.Runtime
	catalog *wasm.Catalog
}

// wasmCacheOff is the --wasm-cache-dir value that keeps compiled code in
// memory only.
const wasmCacheOff = "off"

// wasmCacheDir resolves where compiled modules are kept: the configured
// directory, else DATA/wasm/cache when the node has a data directory,
// else (a stateless gateway) the user's cache directory or, without one,
// the temporary directory. Gateways hold no state, but a compilation
// cache is not state: it is checked (wazero refuses an entry of another
// version or a corrupt one and recompiles) and may be lost at any time.
func wasmCacheDir(dataDir, configured string) string {
	switch {
	case configured == wasmCacheOff:
		return ""
	case configured != "":
		return configured
	case dataDir != "":
		return filepath.Join(dataDir, "wasm", "cache")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "facet", "wasm")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("facet-wasm-cache-%d", os.Getuid()))
}

// wasmHooks are where the runtime reports to the metrics.
type wasmHooks interface {
	FilterFailed(filter, reason string)
	WasmAdmitted(tenant, outcome string)
	WasmCPU(tenant, filter string, d time.Duration)
}

func startWasm(ctx context.Context, dataDir, cacheDir string, budget wasm.BudgetConfig, store wasm.Store, hooks wasmHooks, logger *slog.Logger) (*wasmFilters, error) {
	var depsDir string
	if dataDir != "" {
		depsDir = filepath.Join(dataDir, "wasm", "deps")
	}
	configured := cacheDir != ""
	if cacheDir = wasmCacheDir(dataDir, cacheDir); cacheDir != "" {
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			if configured || dataDir != "" {
				return nil, fmt.Errorf("compilation cache: %w", err)
			}
			// The default place of a gateway's cache is unusable (a
			// read-only home): a cache is not worth refusing to start.
			logger.Warn("wasm compilation cache unavailable: modules are compiled at every start", "dir", cacheDir, "err", err)
			cacheDir = ""
		}
	}
	cfg := wasm.Config{CacheDir: cacheDir, Logger: logger, Budget: budget}
	if hooks != nil {
		cfg.OnFailure, cfg.OnAdmit, cfg.OnCPU = hooks.FilterFailed, hooks.WasmAdmitted, hooks.WasmCPU
	}
	rt, err := wasm.NewRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cacheDir != "" {
		logger.Info("wasm compilation cache", "dir", cacheDir)
	}
	if budget.Instances > 0 {
		logger.Info("wasm budget", "instances", budget.Instances, "memory_mib", budget.Memory>>20, "queue_timeout", budget.Wait)
	}
	cat, err := wasm.NewCatalog(wasm.CatalogConfig{Runtime: rt, Store: store, Logger: logger, DepsDir: depsDir, Limits: wasm.DefaultLimits()})
	if err != nil {
		return nil, errors.Join(err, rt.Close(ctx))
	}
	return &wasmFilters{rt: rt, catalog: cat}, nil
}

func (w *wasmFilters) close() {
	ctx := context.Background()
	_ = w.catalog.Close(ctx)
	_ = w.rt.Close(ctx)
}
