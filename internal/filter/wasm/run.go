package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/facet-sds/facet/internal/filter"
)

// The reasons an invocation fails; *Error wraps one of them.
var (
	ErrDeadline  = errors.New("deadline exceeded")
	ErrOutputCap = errors.New("output limit exceeded")
	ErrMemory    = errors.New("memory limit exceeded")
	ErrExit      = errors.New("exited with non-zero status")
	ErrTrap      = errors.New("trapped")
	ErrCanceled  = errors.New("request canceled")
	// ErrBusy refuses an instance the node's budget had no room for
	// (BudgetConfig): the S3 front end answers 503 SlowDown.
	ErrBusy = filter.ErrBusy
)

// Error is a failed invocation. Its message names the filter and the
// reason; it never quotes the stream or the filter's parameters.
type Error struct {
	Filter string
	Reason error
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("wasm filter %q: %v", e.Filter, e.Reason)
	}
	return fmt.Sprintf("wasm filter %q: %v (%s)", e.Filter, e.Reason, e.Detail)
}

func (e *Error) Unwrap() error { return e.Reason }

// FailedFilter implements filter.Failure.
func (e *Error) FailedFilter() string { return e.Filter }

// FailureReason implements filter.Failure: a short label (trap, timeout,
// memory, output, exit, canceled, busy), the metric's reason label.
func (e *Error) FailureReason() string { return reasonLabel(e.Reason) }

var _ filter.Failure = (*Error)(nil)

// reasonLabel names a failure reason for metrics.
func reasonLabel(r error) string {
	switch {
	case errors.Is(r, ErrTrap):
		return "trap"
	case errors.Is(r, ErrDeadline):
		return "timeout"
	case errors.Is(r, ErrMemory):
		return "memory"
	case errors.Is(r, ErrOutputCap):
		return "output"
	case errors.Is(r, ErrExit):
		return "exit"
	case errors.Is(r, ErrCanceled):
		return "canceled"
	case errors.Is(r, ErrBusy):
		return "busy"
	}
	return "other"
}

// DepsPath is where a filter's dependencies appear in its file system:
// /deps/<dependency name>.
const DepsPath = "/deps"

// Invocation is the request context a module is run with; it reaches the
// module as environment variables (see docs/filters.md).
type Invocation struct {
	Tenant      string
	Bucket      string
	Key         string
	Method      string
	Size        int64 // -1 when unknown
	ContentType string
	Direction   string // "put" or "get"
	Version     int
	Params      map[string]string
	// Deps is a host directory mounted read-only at /deps (the filter's
	// declared dependencies); empty mounts nothing.
	Deps string
}

// args and env build the module's argv and environment: argv is the
// filter name then --name=value per parameter in name order; the
// environment holds the request context and FACET_PARAM_<NAME>.
func (inv *Invocation) args(filter string) []string {
	names := make([]string, 0, len(inv.Params))
	for n := range inv.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	args := []string{filter}
	for _, n := range names {
		args = append(args, "--"+n+"="+inv.Params[n])
	}
	return args
}

func (inv *Invocation) env(filter string) [][2]string {
	env := [][2]string{
		{"FACET_FILTER", filter},
		{"FACET_FILTER_VERSION", strconv.Itoa(inv.Version)},
		{"FACET_TENANT", inv.Tenant},
		{"FACET_BUCKET", inv.Bucket},
		{"FACET_KEY", inv.Key},
		{"FACET_METHOD", inv.Method},
		{"FACET_SIZE", strconv.FormatInt(inv.Size, 10)},
		{"FACET_CONTENT_TYPE", inv.ContentType},
		{"FACET_DIRECTION", inv.Direction},
	}
	for n, v := range inv.Params {
		env = append(env, [2]string{"FACET_PARAM_" + envName(n), v})
	}
	return env
}

// envName upper-cases a parameter name and maps anything but letters and
// digits to '_', so names like "max-len" stay valid variable names.
func envName(n string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - ('a' - 'A')
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return r
		}
		return '_'
	}, n)
}

// Start starts a fresh instance of m with in as stdin and returns its
// stdout. It first waits for room in the runtime's budget (BudgetConfig),
// and answers an *Error wrapping ErrBusy when it finds none. Nothing is
// buffered beyond what the module itself holds: the instance runs in its
// own goroutine and writes into a pipe the caller reads. A failure of the
// instance surfaces as the read error, an *Error. Closing the returned
// reader before EOF stops the instance.
func (m *Module) Start(ctx context.Context, inv Invocation, lim Limits, in io.Reader) (io.ReadCloser, error) {
	lim = lim.withDefaults()
	if !m.rt.enter() {
		return nil, &Error{Filter: m.name, Reason: ErrCanceled, Detail: errRuntimeClosed.Error()}
	}
	release, err := m.rt.admit(ctx, inv.Tenant, m.reserve)
	if err != nil {
		m.rt.live.Done()
		if errors.Is(err, ErrBusy) {
			return nil, &Error{Filter: m.name, Reason: err}
		}
		return nil, &Error{Filter: m.name, Reason: ErrCanceled, Detail: err.Error()}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	pr, pw := io.Pipe()
	stopWithRuntime := context.AfterFunc(m.rt.life, func() { cancel(errRuntimeClosed) })
	// fail stops the instance at its next check and unblocks a write
	// pending on the pipe, whichever comes first.
	fail := func(err error) {
		cancel(err)
		pw.CloseWithError(err)
	}
	stdin := &meter{r: in}
	stdout := &capWriter{w: pw, in: stdin, size: inv.Size, lim: lim, fail: func(detail string) {
		fail(&Error{Filter: m.name, Reason: ErrOutputCap, Detail: detail})
	}}
	stderr := &stderrLog{m: m, tenant: inv.Tenant, max: lim.StderrLines}
	wd := startWatchdog(lim, stdin, func(d time.Duration) {
		fail(&Error{Filter: m.name, Reason: ErrDeadline, Detail: fmt.Sprintf("ran %v for %d input bytes", d.Round(time.Millisecond), stdin.n.Load())})
	})

	cfg := m.config.
		WithStdin(stdin).
		WithStdout(stdout).
		WithStderr(stderr).
		WithArgs(inv.args(m.name)...)
	for _, kv := range inv.env(m.name) {
		cfg = cfg.WithEnv(kv[0], kv[1])
	}
	if inv.Deps != "" {
		cfg = cfg.WithFSConfig(m.depsFS(inv.Deps))
	}

	go func() {
		defer m.rt.live.Done()
		defer stopWithRuntime()
		defer cancel(nil)
		clock := m.rt.startClock()
		mod, err := m.rt.rt.InstantiateModule(m.image.withMemory(ctx), m.compiled, cfg)
		if mod != nil {
			_ = mod.Close(context.WithoutCancel(ctx))
		}
		m.rt.charge(clock, inv.Tenant, m.name)
		// The instance and its memory are gone: its slot is free before
		// the rest of its input is drained.
		release()
		wd.stop()
		stderr.finish()
		cerr := m.classify(ctx, err, stderr)
		if cerr == nil {
			// A module may stop reading early (a filter that keeps only a
			// head, or ignores its input); the rest of the stream is still
			// read, so that the request's body is received and checked.
			if _, derr := io.Copy(io.Discard, stdin); derr != nil {
				cerr = derr
			}
		}
		var fe *Error
		if errors.As(cerr, &fe) && m.rt.onFailure != nil && !errors.Is(fe.Reason, ErrCanceled) {
			m.rt.onFailure(m.name, fe.FailureReason())
		}
		pw.CloseWithError(cerr)
	}()
	return &output{pr: pr, bufs: &m.rt.copyBufs, stop: func() {
		cancel(&Error{Filter: m.name, Reason: ErrCanceled, Detail: "output closed before EOF"})
	}}, nil
}

// baseConfig is what every instance of every module shares; Start derives
// each request's configuration from it (each With* copies, so the base
// is never changed). It holds no environment: wazero appends variables
// to the slice a copy shares with its base.
func baseConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		// Anonymous, so that concurrent instances do not clash on a name.
		WithName("").
		// Go's runtime seeds its maps from random_get; the default source
		// is deterministic.
		WithRandSource(rand.Reader)
}

// depsFS returns the file system configuration mounting dir read-only at
// DepsPath, made once per directory (a version's dependencies).
func (m *Module) depsFS(dir string) wazero.FSConfig {
	if c, ok := m.fsConfigs.Load(dir); ok {
		return c.(wazero.FSConfig)
	}
	c, _ := m.fsConfigs.LoadOrStore(dir, wazero.NewFSConfig().WithReadOnlyDirMount(dir, DepsPath))
	return c.(wazero.FSConfig)
}

// classify turns how an instance ended into nil or an *Error.
func (m *Module) classify(ctx context.Context, err error, stderr *stderrLog) error {
	if ctx.Err() != nil {
		var fe *Error
		if cause := context.Cause(ctx); errors.As(cause, &fe) {
			return fe
		}
		return &Error{Filter: m.name, Reason: ErrCanceled, Detail: context.Cause(ctx).Error()}
	}
	if err == nil {
		return nil
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() == 0 {
			return nil
		}
		if stderr.oom.Load() {
			return &Error{Filter: m.name, Reason: ErrMemory, Detail: fmt.Sprintf("cap %d pages of 64 KiB, exit code %d", m.rt.pages, ee.ExitCode())}
		}
		return &Error{Filter: m.name, Reason: ErrExit, Detail: fmt.Sprintf("exit code %d", ee.ExitCode())}
	}
	// A trap: wazero's message starts with the trap kind, then a stack
	// trace we leave to the log.
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if _, kind, ok := strings.Cut(msg, "wasm error: "); ok {
		msg = kind
	}
	m.rt.logger.Warn("wasm filter trapped", "filter", m.name, "err", err)
	return &Error{Filter: m.name, Reason: ErrTrap, Detail: msg}
}

// output is the instance's stdout as seen by the caller.
type output struct {
	pr   *io.PipeReader
	stop func()
	bufs *sync.Pool
}

func (o *output) Read(p []byte) (int, error) { return o.pr.Read(p) }

// WriteTo copies the module's output to w with a large buffer (the
// runtime's copyBufs): one fd_write of the module is then one handoff
// through the pipe rather than one per 32 KiB (io.Copy's buffer) or 8 KiB
// (io.Discard's).
func (o *output) WriteTo(w io.Writer) (int64, error) {
	bp := o.bufs.Get().(*[]byte)
	defer o.bufs.Put(bp)
	// Hide w's ReaderFrom, which would pick its own small buffer.
	return io.CopyBuffer(struct{ io.Writer }{w}, o.pr, *bp)
}

func (o *output) Close() error {
	o.stop()
	return o.pr.Close()
}

// meter counts bytes read from the input; the watchdog and the output
// cap read the count from other goroutines.
type meter struct {
	r io.Reader
	n atomic.Int64
}

func (m *meter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.n.Add(int64(n))
	return n, err
}

// capWriter passes output on until it exceeds the cap.
type capWriter struct {
	w    io.Writer
	in   *meter
	size int64
	lim  Limits
	n    int64
	fail func(detail string)
}

func (c *capWriter) Write(p []byte) (int, error) {
	base := max(c.in.n.Load(), c.size)
	limit := int64(c.lim.OutputRatio*float64(base)) + c.lim.OutputSlack
	if c.n+int64(len(p)) > limit {
		c.fail(fmt.Sprintf("wrote over %d bytes for %d input bytes", limit, base))
		return 0, ErrOutputCap
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// watchdog ends an invocation whose run time exceeds Timeout + PerMiB per
// MiB read so far. It re-arms itself instead of ticking, so an idle
// invocation costs one timer.
type watchdog struct {
	start time.Time
	lim   Limits
	in    *meter
	onExp func(time.Duration)
	mu    sync.Mutex
	t     *time.Timer
	done  bool
}

func startWatchdog(lim Limits, in *meter, onExp func(time.Duration)) *watchdog {
	w := &watchdog{start: time.Now(), lim: lim, in: in, onExp: onExp}
	w.mu.Lock()
	w.t = time.AfterFunc(lim.Timeout, w.fire)
	w.mu.Unlock()
	return w
}

func (w *watchdog) allowance() time.Duration {
	return w.lim.Timeout + time.Duration(float64(w.lim.PerMiB)*float64(w.in.n.Load())/(1<<20))
}

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	ran, allowed := time.Since(w.start), w.allowance()
	if ran < allowed {
		w.t.Reset(allowed - ran)
		return
	}
	w.done = true
	w.onExp(ran)
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.t.Stop()
}

// stderrLog sends a module's stderr to the log line by line: at most max
// lines per invocation, each cut to maxStderrLine bytes, and at most
// stderrBurst lines per filter refilled at stderrRate per second, so a
// noisy module cannot flood the log. It notes a Go runtime's
// out-of-memory message, the only sign of a failed memory.grow.
type stderrLog struct {
	m       *Module
	tenant  string
	max     int
	logged  int
	dropped int
	partial []byte
	oom     atomic.Bool
}

const (
	maxStderrLine = 256
	stderrRate    = 10.0
	stderrBurst   = 50.0
)

func (s *stderrLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		line, rest, full := bytes.Cut(p, []byte{'\n'})
		if room := maxStderrLine - len(s.partial); room > 0 {
			s.partial = append(s.partial, line[:min(len(line), room)]...)
		}
		p = rest
		if !full {
			break
		}
		s.emit()
	}
	return n, nil
}

func (s *stderrLog) emit() {
	line := s.partial
	s.partial = s.partial[:0]
	if bytes.Contains(line, []byte("out of memory")) {
		s.oom.Store(true)
	}
	if s.logged >= s.max || !s.m.stderrTokens.take() {
		s.dropped++
		return
	}
	s.logged++
	s.m.rt.logger.Info("wasm filter stderr", "filter", s.m.name, "tenant", s.tenant, "line", string(line))
}

func (s *stderrLog) finish() {
	if len(s.partial) > 0 {
		s.emit()
	}
	if s.dropped > 0 {
		s.m.rt.logger.Info("wasm filter stderr lines dropped", "filter", s.m.name, "tenant", s.tenant, "dropped", s.dropped)
	}
}

// bucket is a token bucket shared by a module's invocations.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func (b *bucket) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.last.IsZero() {
		b.tokens = stderrBurst
	} else {
		b.tokens = min(stderrBurst, b.tokens+now.Sub(b.last).Seconds()*stderrRate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
