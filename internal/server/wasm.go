package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/facet-sds/facet/internal/filter/wasm"
	"github.com/facet-sds/facet/internal/meta"
)

// wasmFilters is a gateway's sandboxed filter runtime: wazero with its
// on-disk compilation cache (under the data directory, so a restart does
// not recompile), and the catalog that loads the modules registered in
// the metadata store.
type wasmFilters struct {
	rt      *wasm.Runtime
	catalog *wasm.Catalog
}

func startWasm(ctx context.Context, dataDir string, store wasm.Store, onFailure func(filter, reason string), logger *slog.Logger) (*wasmFilters, error) {
	var cacheDir, depsDir string
	if dataDir != "" {
		cacheDir, depsDir = filepath.Join(dataDir, "wasm", "cache"), filepath.Join(dataDir, "wasm", "deps")
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			return nil, err
		}
	}
	rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: cacheDir, Logger: logger, OnFailure: onFailure})
	if err != nil {
		return nil, err
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

// announcingFilterStore tells the fleet about run-time filter changes, as
// announcingStore does for policies, so other gateways load a new module
// without waiting for their poll.
type announcingFilterStore struct {
	*meta.Store
	sync *fleetSync
}

func (s announcingFilterStore) after(ctx context.Context, err error) error {
	if err == nil {
		s.sync.announceVersion(ctx)
	}
	return err
}

func (s announcingFilterStore) PutFilterCode(ctx context.Context, name string, spec json.RawMessage, blobs map[string][]byte, drop []string) (meta.FilterEntry, error) {
	e, err := s.Store.PutFilterCode(ctx, name, spec, blobs, drop)
	return e, s.after(ctx, err)
}

func (s announcingFilterStore) DeleteFilterCode(ctx context.Context, name string, drop []string) error {
	return s.after(ctx, s.Store.DeleteFilterCode(ctx, name, drop))
}

func (s announcingFilterStore) PutDependency(ctx context.Context, d meta.Dependency, data []byte) (meta.Dependency, error) {
	out, err := s.Store.PutDependency(ctx, d, data)
	return out, s.after(ctx, err)
}

func (s announcingFilterStore) DeleteDependency(ctx context.Context, name string) error {
	return s.after(ctx, s.Store.DeleteDependency(ctx, name))
}
