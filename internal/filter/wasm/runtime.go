// Package wasm owns Facet's sandboxed filter runtime: it compiles
// WebAssembly (WASI preview1 command) modules once with wazero in compiled
// mode, runs a fresh instance per request with stdin as the input stream
// and stdout as the output stream, and enforces the sandbox's limits
// (memory pages, a deadline that grows with the bytes processed, an output
// cap proportional to the input, bounded stderr logging), and the node's
// budget of all its instances (running at once, their memory), shared
// fairly between tenants, with each instance's CPU time charged to its
// tenant. The ABI is documented in docs/filters.md.
package wasm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Config configures a Runtime.
type Config struct {
	// CacheDir holds wazero's compilation cache, so that a restart does
	// not recompile every module; empty means in-memory only.
	CacheDir string
	// MemoryPages caps every instance's linear memory, in 64 KiB pages;
	// 0 means DefaultMemoryPages. wazero applies it runtime-wide.
	MemoryPages uint32
	// Logger receives filters' stderr; nil means slog.Default().
	Logger *slog.Logger
	// OnFailure, when set, is told each failed invocation's filter and
	// reason (trap, timeout, memory, output, exit), for metrics; a request
	// canceled by its client is not the filter's failure and is not told.
	OnFailure func(filter, reason string)
	// Budget bounds the instances running at once and their memory,
	// node-wide and fairly between tenants; the zero value admits all.
	Budget BudgetConfig
	// OnAdmit, when set, is told the outcome of each instance's wait for
	// the budget (Admit*), by tenant.
	OnAdmit func(tenant, outcome string)
	// OnCPU, when set, is told each instance's CPU time, by tenant and
	// filter: its thread's CPU time on Linux, its wall time elsewhere.
	OnCPU func(tenant, filter string, d time.Duration)
}

// DefaultMemoryPages is 128 MiB: a Go wasip1 module needs a few MiB for
// its runtime alone.
const DefaultMemoryPages = 2048

// Runtime compiles and runs filter modules. It is safe for concurrent use.
type Runtime struct {
	rt        wazero.Runtime
	cache     wazero.CompilationCache
	pages     uint32
	logger    *slog.Logger
	onFailure func(filter, reason string)
	onCPU     func(tenant, filter string, d time.Duration)
	// budget admits instances; nil admits all at once.
	budget *budget
	// copyBufs holds 1 MiB buffers for copying instances' output.
	copyBufs sync.Pool
	// cacheDir is the on-disk compilation cache ("" for none); compileMu
	// serializes compiles so that each can tell whether it wrote a new
	// cache entry (compiled) or found its code there (loaded).
	cacheDir  string
	compileMu sync.Mutex
	compiled  atomic.Uint64
	loaded    atomic.Uint64
	// life ends when Close begins, which stops every running instance;
	// live counts those instances so that Close frees the runtime only
	// after the last has returned (freeing it under a running instance
	// races with the instance's own memory and file table).
	life    context.Context
	endLife context.CancelFunc
	liveMu  sync.Mutex
	closed  bool
	live    sync.WaitGroup
}

// errRuntimeClosed is the cause an instance sees when its runtime closes
// under it.
var errRuntimeClosed = errors.New("filter runtime closed")

// NewRuntime returns a runtime; Close releases it.
func NewRuntime(ctx context.Context, cfg Config) (*Runtime, error) {
	pages := cfg.MemoryPages
	if pages == 0 {
		pages = DefaultMemoryPages
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	rc := wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(pages).
		// Interrupts loops in guest code when the request's context ends:
		// without it an infinite loop would hold its goroutine forever.
		WithCloseOnContextDone(true)
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache %s: %w", cfg.CacheDir, err)
		}
		cache = c
		rc = rc.WithCompilationCache(c)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiating WASI: %w", err)
	}
	r := &Runtime{rt: rt, cache: cache, pages: pages, logger: logger, onFailure: cfg.OnFailure, onCPU: cfg.OnCPU, cacheDir: cfg.CacheDir}
	if cfg.Budget.Instances > 0 {
		r.budget = newBudget(cfg.Budget, cfg.OnAdmit)
		if capBytes := int64(pages) * pageSize; r.budget.cfg.Memory < capBytes {
			_ = rt.Close(ctx)
			return nil, fmt.Errorf("wasm: a memory budget of %d MiB holds no instance of the %d MiB memory cap", r.budget.cfg.Memory>>20, capBytes>>20)
		}
	}
	r.life, r.endLife = context.WithCancel(context.WithoutCancel(ctx))
	r.copyBufs.New = func() any { b := make([]byte, 1<<20); return &b }
	return r, nil
}

// Close stops the running instances, waits for them to return, and
// releases every compiled module. Start after Close fails.
func (r *Runtime) Close(ctx context.Context) error {
	r.liveMu.Lock()
	r.closed = true
	r.liveMu.Unlock()
	r.endLife()
	r.live.Wait()
	err := r.rt.Close(ctx)
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(ctx))
	}
	return err
}

// enter registers a new instance; it reports false once Close has begun.
func (r *Runtime) enter() bool {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if r.closed {
		return false
	}
	r.live.Add(1)
	return true
}

// MemoryPages reports the memory cap applied to every instance.
func (r *Runtime) MemoryPages() uint32 { return r.pages }

// Module is a compiled filter module, shared by all its invocations.
type Module struct {
	name     string
	rt       *Runtime
	compiled wazero.CompiledModule
	// image is the initial memory instances map, nil when the compiled
	// code initialises memory itself.
	image *memImage
	// reserve is what an instance takes of the budget's memory: the
	// runtime's cap or the module's declared maximum, the smaller.
	reserve int64
	// config is baseConfig; fsConfigs caches depsFS by directory.
	config    wazero.ModuleConfig
	fsConfigs sync.Map
	// stderrTokens rate-limits stderr logging across invocations.
	stderrTokens bucket
}

// Compile validates and compiles a module once. name is the filter's name,
// used in errors and logs.
func (r *Runtime) Compile(ctx context.Context, name string, code []byte) (*Module, error) {
	r.compileMu.Lock()
	before := cacheEntries(r.cacheDir)
	img, prepared := prepare(code)
	cm, err := r.rt.CompileModule(ctx, prepared)
	if err == nil {
		if r.cacheDir != "" && cacheEntries(r.cacheDir) == before {
			r.loaded.Add(1)
		} else {
			r.compiled.Add(1)
		}
	}
	r.compileMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("wasm filter %q: compiling: %w", name, err)
	}
	if _, ok := cm.ExportedFunctions()["_start"]; !ok {
		_ = cm.Close(ctx)
		return nil, fmt.Errorf("wasm filter %q: not a WASI command (no exported _start)", name)
	}
	for _, imp := range cm.ImportedFunctions() {
		mod, fn, _ := imp.Import()
		if mod != wasi_snapshot_preview1.ModuleName {
			_ = cm.Close(ctx)
			return nil, fmt.Errorf("wasm filter %q: imports %s.%s; only %s is provided", name, mod, fn, wasi_snapshot_preview1.ModuleName)
		}
	}
	return &Module{name: name, rt: r, compiled: cm, image: img, config: baseConfig(), reserve: memoryReserve(cm, r.pages)}, nil
}

// pageSize is WebAssembly's memory page.
const pageSize = 64 << 10

// memoryReserve is the most linear memory an instance of cm can hold
// under a cap of pages.
func memoryReserve(cm wazero.CompiledModule, pages uint32) int64 {
	p := pages
	lower := func(d api.MemoryDefinition) {
		if m, ok := d.Max(); ok && m < p {
			p = m
		}
	}
	for _, d := range cm.ExportedMemories() {
		lower(d)
	}
	for _, d := range cm.ImportedMemories() {
		lower(d)
	}
	return int64(p) * pageSize
}

// BudgetStats reports what the runtime's budget holds now (zero without
// a budget).
func (r *Runtime) BudgetStats() BudgetStats {
	if r.budget == nil {
		return BudgetStats{}
	}
	return r.budget.stats()
}

// prepare returns the code to compile and, when the module's data can
// move into a memory image (splitData, newMemImage), that image: the code
// then has no data segments. Otherwise the code's data segments are
// coalesced (coalesceData) and the image is nil.
func prepare(code []byte) (*memImage, []byte) {
	stripped, data, err := splitData(code, imagePageSize())
	if err == nil {
		if img, err := newMemImage(data); err == nil {
			return img, stripped
		}
	}
	return nil, coalesceData(code)
}

// CompileStats counts the modules a Runtime compiled to machine code and
// those it loaded from its on-disk compilation cache.
type CompileStats struct {
	Compiled uint64
	Loaded   uint64
}

// Stats reports how the runtime's modules were obtained.
func (r *Runtime) Stats() CompileStats {
	return CompileStats{Compiled: r.compiled.Load(), Loaded: r.loaded.Load()}
}

// cacheEntries counts the files of wazero's compilation cache under dir
// (it keeps them in a subdirectory per wazero version and platform; a
// compile that finds its code there writes none). Another process sharing
// the directory could blur a count; the cache itself stays correct.
func cacheEntries(dir string) int {
	if dir == "" {
		return 0
	}
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasSuffix(d.Name(), ".tmp") {
			n++
		}
		return nil
	})
	return n
}

// Close releases the compiled code. Invocations already running keep
// theirs (wazero reference-counts it).
func (m *Module) Close(ctx context.Context) error { return m.compiled.Close(ctx) }

// Limits bound one invocation.
type Limits struct {
	// Timeout is the base deadline; PerMiB is added for every MiB read
	// from stdin, so a large object gets proportionally more time.
	Timeout time.Duration
	PerMiB  time.Duration
	// OutputRatio and OutputSlack cap output at
	// OutputRatio*max(input read, declared size) + OutputSlack bytes.
	OutputRatio float64
	OutputSlack int64
	// StderrLines caps the stderr lines logged per invocation.
	StderrLines int
}

// DefaultLimits are generous enough for the example filters on a busy
// machine and tight enough that a hostile module is stopped quickly.
func DefaultLimits() Limits {
	return Limits{
		Timeout:     5 * time.Second,
		PerMiB:      200 * time.Millisecond,
		OutputRatio: 4,
		OutputSlack: 64 << 10,
		StderrLines: 20,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.PerMiB < 0 {
		l.PerMiB = 0
	}
	if l.OutputRatio <= 0 {
		l.OutputRatio = d.OutputRatio
	}
	if l.OutputSlack <= 0 {
		l.OutputSlack = d.OutputSlack
	}
	if l.StderrLines <= 0 {
		l.StderrLines = d.StderrLines
	}
	return l
}
