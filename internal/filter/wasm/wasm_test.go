package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
)

// The modules are built once per test run from examples/filters and
// testdata/hostile; no .wasm binary is committed.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error

	rtOnce    sync.Once
	sharedRT  *Runtime
	rtErr     error
	logRecs   atomic.Int64 // stderr lines the shared runtime logged
	cacheRoot string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "facet-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheRoot = dir
	code := m.Run()
	if sharedRT != nil {
		_ = sharedRT.Close(context.Background())
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func moduleBytes(t testing.TB, name string) []byte {
	t.Helper()
	buildOnce.Do(func() {
		buildDir = filepath.Join(cacheRoot, "bin")
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", buildDir+string(filepath.Separator),
			"./examples/filters/...", "./internal/filter/wasm/testdata/hostile")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building wasm modules: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	b, err := os.ReadFile(filepath.Join(buildDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countingHandler counts log records whose message is the stderr line.
type countingHandler struct{ slog.Handler }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "wasm filter stderr" {
		logRecs.Add(1)
	}
	return nil
}

func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	rtOnce.Do(func() {
		logger := slog.New(countingHandler{slog.NewTextHandler(io.Discard, nil)})
		sharedRT, rtErr = NewRuntime(context.Background(), Config{
			CacheDir:    filepath.Join(cacheRoot, "cache"),
			MemoryPages: 1024, // 64 MiB
			Logger:      logger,
		})
	})
	if rtErr != nil {
		t.Fatal(rtErr)
	}
	return sharedRT
}

func newFilter(t testing.TB, module string, info filter.Info, lim Limits, p filter.Params) filter.Filter {
	t.Helper()
	in, err := New(context.Background(), testRuntime(t), info, moduleBytes(t, module), lim)
	if err != nil {
		t.Fatal(err)
	}
	f, err := in.New(p, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func basicInfo(name string) filter.Info {
	return filter.Info{Name: name, Version: 1, Methods: []filter.Method{filter.MethodPut, filter.MethodGet},
		Stages: []filter.Stage{filter.StageGateway}}
}

func hostileInfo() filter.Info {
	in := basicInfo("hostile")
	in.Params = []filter.ParamSpec{{Name: "mode", Type: filter.TypeString}}
	return in
}

func xorInfo() filter.Info {
	in := basicInfo("xor")
	in.Reversible = true
	in.Params = []filter.ParamSpec{{Name: "key", Type: filter.TypeString, Default: "k3y"}}
	return in
}

func transform(t testing.TB, f filter.Filter, req *filter.Request, in []byte) ([]byte, error) {
	t.Helper()
	out, err := f.(filter.Transformer).Transform(context.Background(), req, bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(out)
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func nativeXor(b, key []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = c ^ key[i%len(key)]
	}
	return out
}

func TestExamples(t *testing.T) {
	req := &filter.Request{Tenant: "t1", Bucket: "b", Key: "k", Method: filter.MethodPut, Size: -1}

	t.Run("noop", func(t *testing.T) {
		in := randBytes(1<<20 + 17)
		got, err := transform(t, newFilter(t, "noop", basicInfo("wnoop"), Limits{}, nil), req, in)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("noop: err %v, equal %v (%d bytes)", err, bytes.Equal(got, in), len(got))
		}
	})
	t.Run("uppercase", func(t *testing.T) {
		got, err := transform(t, newFilter(t, "uppercase", basicInfo("upper"), Limits{}, nil), req, []byte("Hello, wörld 42 abc\n"))
		if err != nil || string(got) != "HELLO, WöRLD 42 ABC\n" {
			t.Fatalf("uppercase: %q, %v", got, err)
		}
	})
	t.Run("redact", func(t *testing.T) {
		in := "Contact jane.doe+s3@example.co.uk or bob@mail.example.com today.\n" +
			"card 4111 1111 1111 1111 exp 12/29, other 5500-0000-0000-0004\n" +
			"amex 378282246310005 and a short number 123456789012 stays\n" +
			"no newline at end: x@y.io"
		want := "Contact [email] or [email] today.\n" +
			"card [card] exp 12/29, other [card]\n" +
			"amex [card] and a short number 123456789012 stays\n" +
			"no newline at end: [email]"
		got, err := transform(t, newFilter(t, "redact", basicInfo("redact"), Limits{}, nil), req, []byte(in))
		if err != nil || string(got) != want {
			t.Fatalf("redact:\n got %q\nwant %q\n err %v", got, want, err)
		}
	})
}

// TestABI checks the argv and environment a module receives.
func TestABI(t *testing.T) {
	f := newFilter(t, "hostile", hostileInfo(), Limits{}, filter.Params{"mode": "env"})
	req := &filter.Request{Tenant: "acme", Bucket: "logs", Key: "a/b.txt", Method: filter.MethodGet, Size: 12,
		Header: map[string]string{"Content-Type": "text/plain"}}
	got, err := transform(t, f, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"hostile --mode=env\n", "FACET_FILTER=hostile\n", "FACET_FILTER_VERSION=1\n", "FACET_TENANT=acme\n",
		"FACET_BUCKET=logs\n", "FACET_KEY=a/b.txt\n", "FACET_METHOD=GET\n", "FACET_SIZE=12\n",
		"FACET_CONTENT_TYPE=text/plain\n", "FACET_DIRECTION=get\n", "FACET_PARAM_MODE=env\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("module output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "PATH=") || strings.Contains(string(got), "HOME=") {
		t.Errorf("host environment leaked into the module:\n%s", got)
	}
}

// memSource is a filter.Source over a byte slice that counts opens.
type memSource struct {
	b     []byte
	opens atomic.Int64
}

func (m *memSource) Size() int64 { return int64(len(m.b)) }

func (m *memSource) Open(_ context.Context, off, n int64) (io.ReadCloser, error) {
	m.opens.Add(1)
	return io.NopCloser(bytes.NewReader(m.b[off : off+n])), nil
}

func TestXorRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newFilter(t, "xor", xorInfo(), Limits{}, filter.Params{"key": "s3cr3t"})
	rev, ok := f.(filter.Reversible)
	if !ok {
		t.Fatalf("reversible wasm filter is %T, not filter.Reversible", f)
	}
	if _, isT := f.(filter.Transformer); isT {
		t.Fatal("a reversible wasm filter must not also be a one-way Transformer")
	}
	plain := randBytes(1<<20 + 3)
	req := &filter.Request{Tenant: "t", Method: filter.MethodPut, Size: int64(len(plain))}
	enc, record, err := rev.Encode(ctx, req, bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := record(); err == nil {
		t.Fatal("record before EOF must fail")
	}
	stored, err := io.ReadAll(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, nativeXor(plain, []byte("s3cr3t"))) {
		t.Fatal("stored bytes are not plain XOR key")
	}
	rec, err := record()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Filter != "xor" || rec.Version != 1 || rec.Size != int64(len(stored)) || rec.Params["key"] != "s3cr3t" {
		t.Fatalf("record %+v", rec)
	}

	// Decode with an instance built with another key: the record's
	// parameters must win.
	other := newFilter(t, "xor", xorInfo(), Limits{}, nil).(filter.Reversible)
	src := &memSource{b: stored}
	view, err := other.Decode(ctx, &filter.Request{Method: filter.MethodGet}, rec, src)
	if err != nil {
		t.Fatal(err)
	}
	if view.Size() != int64(len(plain)) {
		t.Fatalf("decoded size %d, want %d", view.Size(), len(plain))
	}
	for _, r := range [][2]int64{{0, int64(len(plain))}, {1000, 5000}, {int64(len(plain)) - 10, 10}, {7, 0}} {
		rc, err := view.Open(ctx, r[0], r[1])
		if err != nil {
			t.Fatalf("open %v: %v", r, err)
		}
		got, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil || !bytes.Equal(got, plain[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: err %v, %d bytes, equal %v", r, err, len(got), bytes.Equal(got, plain[r[0]:r[0]+r[1]]))
		}
	}

	// A stored stream of the wrong size, a wrong record, a truncated plain size.
	if _, err := other.Decode(ctx, nil, rec, &memSource{b: stored[1:]}); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("short stored stream: %v", err)
	}
	bad := rec
	bad.Filter = "noop"
	if _, err := other.Decode(ctx, nil, bad, src); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("foreign record: %v", err)
	}
	bad = rec
	bad.Params = map[string]string{"key": "s3cr3t", sizeParam: fmt.Sprint(len(plain) + 1)}
	v2, err := other.Decode(ctx, nil, bad, src)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := v2.Open(ctx, 0, v2.Size())
	if err == nil {
		_, err = io.ReadAll(rc)
		_ = rc.Close()
	}
	if !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("decoded fewer bytes than recorded: %v", err)
	}
}

// trapModule is a hand-assembled WASI command whose _start executes
// `unreachable`: a real trap, not a Go panic.
var trapModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: func()
	0x03, 0x02, 0x01, 0x00, // function 0 has type 0
	0x05, 0x03, 0x01, 0x00, 0x01, // one memory of one page
	0x07, 0x13, 0x02, // two exports
	0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
	0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
	0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b, // body: unreachable; end
}

func TestHostileModulesFailAlone(t *testing.T) {
	lim := Limits{Timeout: 2 * time.Second, PerMiB: time.Second}
	trapInfo, err := New(context.Background(), testRuntime(t), basicInfo("trap"), trapModule, lim)
	if err != nil {
		t.Fatal(err)
	}
	trap, err := trapInfo.New(nil, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	good := newFilter(t, "noop", basicInfo("good"), Limits{}, nil)
	input := []byte(strings.Repeat("some text\n", 1000))
	cases := []struct {
		mode   string
		f      filter.Filter
		reason error
		detail string
	}{
		{"loop", nil, ErrDeadline, "ran"},
		{"alloc", nil, ErrMemory, "1024 pages"},
		{"flood", nil, ErrOutputCap, "for 10000 input bytes"},
		{"panic", nil, ErrExit, "exit code 2"},
		{"open", nil, ErrExit, "exit code 3"},
		{"exit", nil, ErrExit, "exit code 7"},
		{"trap", trap, ErrTrap, "unreachable"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			f := c.f
			if f == nil {
				f = newFilter(t, "hostile", hostileInfo(), lim, filter.Params{"mode": c.mode})
			}
			req := &filter.Request{Tenant: "evil", Method: filter.MethodPut, Size: int64(len(input))}
			goodIn := randBytes(256 << 10)
			var goodOut []byte
			var goodErr error
			var wg sync.WaitGroup
			wg.Go(func() {
				goodOut, goodErr = transform(t, good, &filter.Request{Tenant: "nice", Size: -1}, goodIn)
			})
			out, err := transform(t, f, req, input)
			wg.Wait()
			if goodErr != nil || !bytes.Equal(goodOut, goodIn) {
				t.Errorf("concurrent good invocation: err %v, equal %v", goodErr, bytes.Equal(goodOut, goodIn))
			}
			t.Logf("%s: %v", c.mode, err)
			var fe *Error
			if !errors.As(err, &fe) || !errors.Is(err, c.reason) {
				t.Fatalf("want *Error wrapping %v, got %v (%T)", c.reason, err, err)
			}
			if fe.Filter != f.Info().Name || !strings.Contains(err.Error(), `"`+f.Info().Name+`"`) || !strings.Contains(err.Error(), c.detail) {
				t.Fatalf("error %q should name filter %q and say %q", err, f.Info().Name, c.detail)
			}
			if c.mode == "open" && bytes.Contains(out, []byte("root:")) {
				t.Fatal("module read the host's /etc/passwd")
			}
		})
	}
}

func TestConcurrentInvocations(t *testing.T) {
	// Deadlines are not what this test is about: 64 instances starting at
	// once under the race detector on a loaded 2-core machine can take
	// longer than the production default.
	relaxed := Limits{Timeout: 2 * time.Minute}
	noop := newFilter(t, "noop", basicInfo("noop64"), relaxed, nil)
	xor := newFilter(t, "xor", xorInfo(), relaxed, filter.Params{"key": "abc"}).(filter.Reversible)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			in := randBytes(64<<10 + i)
			if i%2 == 0 {
				out, err := transform(t, noop, &filter.Request{Size: -1}, in)
				if err != nil || !bytes.Equal(out, in) {
					errs <- fmt.Errorf("noop %d: %v", i, err)
				}
				return
			}
			enc, _, err := xor.Encode(context.Background(), &filter.Request{Size: -1}, bytes.NewReader(in))
			if err == nil {
				var out []byte
				if out, err = io.ReadAll(enc); err == nil && !bytes.Equal(out, nativeXor(in, []byte("abc"))) {
					err = errors.New("wrong output")
				}
			}
			if err != nil {
				errs <- fmt.Errorf("xor %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestOutputCapScalesWithInput: the flood module writes 100x its input;
// with a ratio of 200 that fits, with the default 4 it does not.
func TestOutputCapScalesWithInput(t *testing.T) {
	in := randBytes(4 << 10)
	req := &filter.Request{Size: -1}
	wide := newFilter(t, "hostile", hostileInfo(), Limits{OutputRatio: 200}, filter.Params{"mode": "flood"})
	out, err := transform(t, wide, req, in)
	if err != nil || len(out) != 100*len(in) {
		t.Fatalf("ratio 200: %d bytes, %v", len(out), err)
	}
	narrow := newFilter(t, "hostile", hostileInfo(), Limits{}, filter.Params{"mode": "flood"})
	if _, err := transform(t, narrow, req, in); !errors.Is(err, ErrOutputCap) {
		t.Fatalf("ratio 4: %v", err)
	}
}

// TestDeadlineAllowance checks the arithmetic of the scaling deadline;
// the loop case of TestHostileModulesFailAlone checks that it fires.
func TestDeadlineAllowance(t *testing.T) {
	m := &meter{}
	w := &watchdog{lim: Limits{Timeout: time.Second, PerMiB: 100 * time.Millisecond}, in: m}
	if got := w.allowance(); got != time.Second {
		t.Fatalf("no input: %v", got)
	}
	m.n.Store(10 << 20)
	if got := w.allowance(); got != 2*time.Second {
		t.Fatalf("10 MiB: %v", got)
	}
}

// TestStderrIsBounded: a module writing 100000 stderr lines gets at most
// StderrLines of them logged, and still succeeds.
func TestStderrIsBounded(t *testing.T) {
	f := newFilter(t, "hostile", hostileInfo(), Limits{StderrLines: 5, Timeout: 2 * time.Minute}, filter.Params{"mode": "stderr"})
	before := logRecs.Load()
	out, err := transform(t, f, &filter.Request{Size: -1}, []byte("ok"))
	if err != nil || string(out) != "ok" {
		t.Fatalf("%q, %v", out, err)
	}
	if n := logRecs.Load() - before; n > 5 || n == 0 {
		t.Fatalf("logged %d stderr lines, want 1..5", n)
	}
}

func TestClosingOutputStopsInstance(t *testing.T) {
	f := newFilter(t, "hostile", hostileInfo(), Limits{Timeout: time.Minute}, filter.Params{"mode": "loop"})
	out, err := f.(filter.Transformer).Transform(context.Background(), &filter.Request{Size: -1}, bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := out.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	// The instance ends on cancellation; a context-canceled request ends
	// the same way, and the test would hang (and time out) if it did not.
	ctx, cancel := context.WithCancel(context.Background())
	out2, _ := f.(filter.Transformer).Transform(ctx, &filter.Request{Size: -1}, bytes.NewReader(nil))
	cancel()
	if _, err := io.ReadAll(out2); !errors.Is(err, ErrCanceled) {
		t.Fatalf("canceled request: %v", err)
	}
}

func TestRejectsBadModules(t *testing.T) {
	ctx := context.Background()
	if _, err := New(ctx, testRuntime(t), basicInfo("junk"), []byte("not wasm"), Limits{}); err == nil || !strings.Contains(err.Error(), `"junk"`) {
		t.Fatalf("junk module: %v", err)
	}
	// A module without _start is not a command.
	noStart := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	if _, err := New(ctx, testRuntime(t), basicInfo("empty"), noStart, Limits{}); err == nil || !strings.Contains(err.Error(), "_start") {
		t.Fatalf("module without _start: %v", err)
	}
	in := basicInfo("reserved")
	in.Params = []filter.ParamSpec{{Name: "_size", Type: filter.TypeString}}
	if _, err := New(ctx, testRuntime(t), in, trapModule, Limits{}); err == nil {
		t.Fatal("reserved parameter name accepted")
	}
	info, err := New(ctx, testRuntime(t), basicInfo("p"), trapModule, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := info.New(filter.Params{"nope": "1"}, filter.Env{}); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}

// TestCloseStopsRunningInstances: closing a runtime under a looping
// instance stops the instance and waits for it (freeing the runtime under
// it raced with its memory and file table), and a Transform after Close
// fails instead of starting.
func TestCloseStopsRunningInstances(t *testing.T) {
	ctx := context.Background()
	rt, err := NewRuntime(ctx, Config{CacheDir: filepath.Join(cacheRoot, "cache"), MemoryPages: 1024, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	in, err := New(ctx, rt, hostileInfo(), moduleBytes(t, "hostile"), Limits{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f, err := in.New(filter.Params{"mode": "loop"}, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.(filter.Transformer).Transform(ctx, &filter.Request{Size: -1}, bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := io.ReadAll(out); read <- err }()
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Under -race, a Close that did not wait is reported as the race
	// this test was written for; here the instance must have ended.
	select {
	case err := <-read:
		if !errors.Is(err, ErrCanceled) {
			t.Fatalf("read after Close: %v, want ErrCanceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the instance's output never ended after Close")
	}
	// The instance is refused before it starts: Transform answers it.
	if _, err := f.(filter.Transformer).Transform(ctx, &filter.Request{Size: -1}, bytes.NewReader(nil)); !errors.Is(err, ErrCanceled) {
		t.Fatalf("Transform after Close: %v, want ErrCanceled", err)
	}
}
