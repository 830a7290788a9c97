package wasm

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// readAll reads r to its end in a goroutine: a filter's output is a pipe,
// so it must be read while the input is still being written.
func readAll(r io.Reader) <-chan []byte {
	done := make(chan []byte, 1)
	go func() {
		b, err := io.ReadAll(r)
		if err != nil {
			b = append(b, []byte("\nread error: "+err.Error())...)
		}
		done <- b
	}()
	return done
}

// TestUpdateDuringARunningRequest: a request that started with version 1
// of a one-way filter finishes with version 1's code after the filter was
// updated to other code and version 1's module was closed (the catalog
// keeps only a one-way filter's current module); a request resolved after
// the update runs version 2.
func TestUpdateDuringARunningRequest(t *testing.T) {
	ctx := context.Background()
	st := &memStore{blobs: map[string][]byte{}}
	d := Descriptor{Name: "shout", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway}}
	// A grace of 1 ms: version 1 is closed at once. The deadline leaves
	// room for compiling version 2 on a slow machine.
	c, err := NewCatalog(CatalogConfig{Runtime: testRuntime(t), Store: st, Grace: time.Millisecond, Limits: Limits{Timeout: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	// Version 2's code compiled once beforehand: its load is a cache hit.
	if err := c.Check(ctx, d.Name, moduleBytes(t, "noop")); err != nil {
		t.Fatal(err)
	}
	v1, e1 := st.register(t, nil, d, moduleBytes(t, "uppercase"))
	infos, err := c.Load(ctx, []meta.FilterEntry{e1})
	if err != nil {
		t.Fatal(err)
	}
	f1, err := infos[0].New(nil, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	out, err := f1.(filter.Transformer).Transform(ctx, &filter.Request{Method: filter.MethodPut, Size: -1}, pr)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(out)
	first, second := strings.Repeat("written before the update. ", 4000), strings.Repeat("written after it. ", 4000)
	if _, err := io.WriteString(pw, first); err != nil {
		t.Fatal(err)
	}

	_, e2 := st.register(t, v1, d, moduleBytes(t, "noop"))
	infos, err = c.Load(ctx, []meta.FilterEntry{e2})
	if err != nil || infos[0].Version != 2 {
		t.Fatalf("load v2: %v %v", infos, err)
	}
	c.retired.Wait() // version 1's compiled module is closed now
	if _, err := io.WriteString(pw, second); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if b, want := <-got, strings.ToUpper(first+second); string(b) != want {
		t.Fatalf("the running request's output changed with the update: %d bytes, want %d; tail %q", len(b), len(want), b[max(0, len(b)-80):])
	}

	f2, err := infos[0].New(nil, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := transform(t, f2, &filter.Request{Method: filter.MethodPut, Size: -1}, []byte("after the update"))
	if err != nil || string(b) != "after the update" {
		t.Fatalf("a request after the update: %q %v, want version 2's plain copy", b, err)
	}
}

// TestPipelineStreams: three WASM filters chained as a request's pipeline
// does (uppercase, then xor, then noop) pass the first 3 MiB of a stream
// through before the rest of it is written: no stage waits for the whole
// object. Were one to buffer it, the read below would wait until that
// stage's deadline failed it.
func TestPipelineStreams(t *testing.T) {
	ctx := context.Background()
	lim := Limits{Timeout: time.Minute}
	req := &filter.Request{Method: filter.MethodPut, Size: -1}
	stages := []filter.Filter{
		newFilter(t, "uppercase", basicInfo("uppercase"), lim, nil),
		// One-way here: a reversible filter's Encode is the same stream.
		newFilter(t, "xor", oneWayXor, lim, filter.Params{"key": "pipe"}),
		newFilter(t, "noop", basicInfo("noop"), lim, nil),
	}
	pr, pw := io.Pipe()
	var r io.Reader = pr
	for _, f := range stages {
		var err error
		if r, err = f.(filter.Transformer).Transform(ctx, req, r); err != nil {
			t.Fatal(err)
		}
	}
	// Whole buffers of every stage (noop reads 1 MiB at a time, xor
	// 256 KiB), so each passes all of it on without more input.
	head := bytes.Repeat([]byte("a lower-case stream, "), (3<<20)/21+1)[:3<<20]
	tail := []byte("and its last words")
	headOut := make(chan struct{})
	go func() {
		if _, err := pw.Write(head); err != nil {
			return
		}
		// Sent only once the head came out at the other end.
		<-headOut
		_, _ = pw.Write(tail)
		pw.Close()
	}()
	want := nativeXor(bytes.ToUpper(append(append([]byte{}, head...), tail...)), []byte("pipe"))
	got := make([]byte, len(head))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("the pipeline held back the head of the stream: %v", err)
	}
	close(headOut)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got = append(got, rest...); !bytes.Equal(got, want) {
		t.Fatalf("pipeline output differs: %d bytes, want %d", len(got), len(want))
	}
}

var oneWayXor = filter.Info{Name: "xor", Version: 1, Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway},
	Params: []filter.ParamSpec{{Name: "key", Type: filter.TypeString}}}

// recordingHandler keeps the stderr records a runtime logs.
type recordingHandler struct {
	mu   *sync.Mutex
	recs *[]map[string]string
}

func (h recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h recordingHandler) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, m)
	h.mu.Unlock()
	return nil
}

// TestStderrIsTaggedAndRateLimited: every stderr line logged names the
// filter and the invocation's tenant, lines past the caps are counted in
// one "dropped" record per invocation, and the per-filter token bucket
// (stderrBurst lines, refilled at stderrRate a second) bounds what
// invocations log together, well below their per-invocation cap.
func TestStderrIsTaggedAndRateLimited(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var recs []map[string]string
	// The shared compilation cache: hostile is compiled once per package run.
	rt, err := NewRuntime(ctx, Config{CacheDir: filepath.Join(cacheRoot, "cache"), MemoryPages: 1024, Logger: slog.New(recordingHandler{&mu, &recs})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	const perRun = 1000
	in, err := New(ctx, rt, hostileInfo(), moduleBytes(t, "hostile"), Limits{StderrLines: perRun, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f, err := in.New(filter.Params{"mode": "stderr"}, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	tenants := []string{"acme", "zeta"}
	start := time.Now()
	for _, tenant := range tenants {
		out, err := transform(t, f, &filter.Request{Tenant: tenant, Size: -1}, []byte("ok"))
		if err != nil || string(out) != "ok" {
			t.Fatalf("%s: %q, %v", tenant, out, err)
		}
	}
	elapsed := time.Since(start)

	mu.Lock()
	defer mu.Unlock()
	lines, dropped := map[string]int{}, map[string]int{}
	for _, r := range recs {
		switch r["msg"] {
		case "wasm filter stderr":
			if r["filter"] != "hostile" || !strings.HasPrefix(r["line"], "noise line ") {
				t.Fatalf("stderr record without its filter or line: %v", r)
			}
			lines[r["tenant"]]++
		case "wasm filter stderr lines dropped":
			if r["filter"] != "hostile" || r["dropped"] == "" {
				t.Fatalf("dropped record: %v", r)
			}
			dropped[r["tenant"]]++
		}
	}
	// The first invocation has the whole burst; the second what refilled.
	if lines["acme"] == 0 || len(lines) > 2 || (len(lines) == 2 && lines["zeta"] == 0) {
		t.Fatalf("stderr lines per tenant: %v", lines)
	}
	if dropped["acme"] != 1 || dropped["zeta"] != 1 || len(dropped) != 2 {
		t.Fatalf("dropped records per tenant %v, want one per invocation", dropped)
	}
	total := lines["acme"] + lines["zeta"]
	if limit := int(stderrBurst + stderrRate*elapsed.Seconds() + 1); total > limit || total >= 2*perRun {
		t.Fatalf("%d stderr lines logged in %v, the per-filter bucket allows %d", total, elapsed, limit)
	}
	t.Logf("%d stderr lines logged over %d invocations in %v", total, len(tenants), elapsed.Round(time.Millisecond))
}
