package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/wasm"
)

// WasmOptions configures RunWasm.
type WasmOptions struct {
	// Modules is the directory of the built example modules (make
	// wasm-examples: bin/wasm).
	Modules string
	// Ops is the number of PUTs and GETs per configuration.
	Ops int
	// Out receives the report, Log the progress.
	Out, Log io.Writer
}

// wasmConfig is one bucket of the WASM benchmark and its policy.
type wasmConfig struct {
	name, label, policy string
}

// RunWasm measures what sandboxed filters add to a 1 MiB PUT and GET
// through `facet serve`: no filter, the native noop, the WASM noop (Go),
// pipelines of 1, 2 and 4 WASM noops, and the Rust noop when it was built
// — the sources' Storlets figures (3-11 ms per request, 3-9 ms per extra
// filter, seeds/001 Fig. 8-9) are the reference. Every configuration runs
// its i-th request before any runs its (i+1)-th, so a busy machine slows
// them alike. It then measures in process the start of one instance and
// the xor filter's throughput against the same transform in native Go.
func RunWasm(ctx context.Context, dir string, opts WasmOptions) error {
	noop, err := os.ReadFile(filepath.Join(opts.Modules, "noop.wasm"))
	if err != nil {
		return fmt.Errorf("%w (build the examples: make wasm-examples)", err)
	}
	xorCode, err := os.ReadFile(filepath.Join(opts.Modules, "xor.wasm"))
	if err != nil {
		return fmt.Errorf("%w (build the examples: make wasm-examples)", err)
	}
	rust, _ := os.ReadFile(filepath.Join(opts.Modules, "rust-noop.wasm"))

	gw, err := startGateway(ctx, filepath.Join(dir, "facet"))
	if err != nil {
		return err
	}
	defer gw.stop()
	desc := func(name string) map[string]any {
		return map[string]any{"name": name, "methods": []string{"PUT", "GET"}, "stages": []string{"gateway"}, "reversible": true}
	}
	for i := 1; i <= 4; i++ {
		if err := gw.createFilter(ctx, desc(fmt.Sprintf("wnoop%d", i)), noop); err != nil {
			return err
		}
	}
	configs := []wasmConfig{
		{"plain", "no filter", ""},
		{"native", "native noop", "FOR BUCKET bench/native DO SET noop"},
		{"wasm1", "WASM noop (Go)", "FOR BUCKET bench/wasm1 DO SET wnoop1"},
		{"wasm2", "2 WASM noops (Go)", "FOR BUCKET bench/wasm2 DO SET wnoop1, SET wnoop2"},
		{"wasm4", "4 WASM noops (Go)", "FOR BUCKET bench/wasm4 DO SET wnoop1, SET wnoop2, SET wnoop3, SET wnoop4"},
	}
	if rust != nil {
		if err := gw.createFilter(ctx, desc("rnoop"), rust); err != nil {
			return err
		}
		for i := 2; i <= 4; i++ {
			if err := gw.createFilter(ctx, desc(fmt.Sprintf("rnoop%d", i)), rust); err != nil {
				return err
			}
		}
		configs = append(configs,
			wasmConfig{"rust1", "WASM noop (Rust)", "FOR BUCKET bench/rust1 DO SET rnoop"},
			wasmConfig{"rust2", "2 WASM noops (Rust)", "FOR BUCKET bench/rust2 DO SET rnoop, SET rnoop2"},
			wasmConfig{"rust4", "4 WASM noops (Rust)", "FOR BUCKET bench/rust4 DO SET rnoop, SET rnoop2, SET rnoop3, SET rnoop4"})
	} else {
		fmt.Fprintln(opts.Log, "no rust-noop.wasm: the Rust rows are left out (rustc with the wasm32-wasip1 target builds it)")
	}
	for _, c := range configs {
		if err := gw.do(ctx, http.MethodPut, "/"+c.name, nil, 0, nil); err != nil {
			return fmt.Errorf("create bucket %s: %w", c.name, err)
		}
		if c.policy != "" {
			if err := gw.applyPolicy(ctx, c.policy); err != nil {
				return err
			}
		}
	}
	const size = 1 << 20
	payload := textLike(size)
	sc := SpineScenario{Size: size, Ops: opts.Ops, Concurrency: 1}
	put := make([][]time.Duration, len(configs))
	get := make([][]time.Duration, len(configs))
	fmt.Fprintf(opts.Log, "%d PUTs and GETs of 1 MiB per configuration, interleaved ...\n", opts.Ops)
	for i := range opts.Ops + 3 { // 3 warm-up rounds
		for k, c := range configs {
			t0 := time.Now()
			if err := gw.do(ctx, http.MethodPut, fmt.Sprintf("/%s/%s", c.name, objKey(sc, i)), payload, size, nil); err != nil {
				return fmt.Errorf("PUT %s: %w", c.label, err)
			}
			if i >= 3 {
				put[k] = append(put[k], time.Since(t0))
			}
		}
		for k, c := range configs {
			t0 := time.Now()
			err := gw.do(ctx, http.MethodGet, fmt.Sprintf("/%s/%s", c.name, objKey(sc, i)), nil, 0, func(r io.Reader) error { return drain(r, size) })
			if err != nil {
				return fmt.Errorf("GET %s: %w", c.label, err)
			}
			if i >= 3 {
				get[k] = append(get[k], time.Since(t0))
			}
		}
	}
	w := opts.Out
	fmt.Fprintf(w, "facet bench wasm (%s): 1 MiB PUT and GET through facet serve, %d of each per row, p50 of interleaved runs\n\n",
		time.Now().UTC().Format(time.RFC3339), opts.Ops)
	fmt.Fprintln(w, "| configuration | PUT p50 ms | PUT added ms | GET p50 ms | GET added ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	p50 := func(d []time.Duration) time.Duration { return durPct(d, 0.5) }
	base := [2]time.Duration{p50(put[0]), p50(get[0])}
	for k, c := range configs {
		fmt.Fprintf(w, "| %s | %.2f | %s | %.2f | %s |\n", c.label, msOf(p50(put[k])), added(k, p50(put[k]), base[0]),
			msOf(p50(get[k])), added(k, p50(get[k]), base[1]))
	}
	perExtra := func(d [][]time.Duration, one, four int) float64 { return msOf(p50(d[four])-p50(d[one])) / 3 }
	fmt.Fprintf(w, "\nEach extra pipelined WASM noop (4 vs 1, /3): Go PUT %.3f ms, GET %.3f ms", perExtra(put, 2, 4), perExtra(get, 2, 4))
	if rust != nil {
		fmt.Fprintf(w, "; Rust PUT %.3f ms, GET %.3f ms", perExtra(put, 5, 7), perExtra(get, 5, 7))
	}
	fmt.Fprint(w, " (Storlets: 3-9 ms).\n\n")
	return wasmInProcess(ctx, w, noop, xorCode, rust)
}

func added(k int, d, base time.Duration) string {
	if k == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.2f", msOf(d-base))
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func durPct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// wasmInProcess measures the runtime without HTTP: the start of one
// instance (an empty stream through the noop module) and xor throughput.
func wasmInProcess(ctx context.Context, w io.Writer, noop, xorCode, rust []byte) error {
	rt, err := wasm.NewRuntime(ctx, wasm.Config{})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	build := func(name string, code []byte, p filter.Params) (filter.Transformer, error) {
		return wasmTransformer(ctx, rt, name, code, p)
	}
	run := func(f filter.Transformer, in []byte) (time.Duration, error) {
		t0 := time.Now()
		out, err := f.Transform(ctx, &filter.Request{Size: int64(len(in)), Method: filter.MethodPut}, bytes.NewReader(in))
		if err != nil {
			return 0, err
		}
		if _, err := io.Copy(io.Discard, out); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	mods := []wasmModule{{"Go (GOOS=wasip1)", noop}}
	if rust != nil {
		mods = append(mods, wasmModule{"Rust (wasm32-wasip1)", rust})
	}
	fmt.Fprintln(w, "| instance start (empty stream, in process) | p50 ms | p99 ms | CPU ms per start |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, m := range mods {
		f, err := build("start", m.code, nil)
		if err != nil {
			return err
		}
		var lat []time.Duration
		var cpu time.Duration
		for i := range 203 {
			c0 := cpuNow()
			d, err := run(f, nil)
			if err != nil {
				return err
			}
			if i >= 3 {
				lat = append(lat, d)
				cpu += cpuNow() - c0
			}
		}
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f |\n", m.label, msOf(durPct(lat, 0.5)), msOf(durPct(lat, 0.99)), msOf(cpu/200))
	}

	if err := pipelineInProcess(w, build, run, mods); err != nil {
		return err
	}

	const n = 16 << 20
	in := textLike(n)
	key := []byte("s3cr3t-key")
	xors := []struct {
		label string
		code  []byte
	}{{"WASM xor (Go module)", xorCode}}
	if rust != nil {
		xors = append(xors, struct {
			label string
			code  []byte
		}{"WASM xor (Rust module)", rust})
	}
	fmt.Fprintln(w, "\n| 16 MiB xor, in process, MB/s of CPU time (p50 of 7) | MB/s | vs native Go filter |")
	fmt.Fprintln(w, "|---|---:|---:|")
	var native []time.Duration
	results := make([][]time.Duration, len(xors))
	fs := make([]filter.Transformer, len(xors))
	for i, x := range xors {
		if fs[i], err = build(fmt.Sprintf("xor%d", i), x.code, filter.Params{"key": string(key)}); err != nil {
			return err
		}
	}
	buf := make([]byte, n)
	var streamed []time.Duration
	copyBuf := make([]byte, 1<<20)
	// CPU time per run, which a busy machine disturbs less than wall time.
	timed := func(f func() error) (time.Duration, error) {
		c0 := cpuNow()
		err := f()
		return cpuNow() - c0, err
	}
	for range 7 {
		d, _ := timed(func() error { nativeXor(buf, in, key); return nil })
		native = append(native, d)
		d, err := timed(func() error {
			_, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, &xorStream{r: bytes.NewReader(in), key: key}, copyBuf)
			return err
		})
		if err != nil {
			return err
		}
		streamed = append(streamed, d)
		for i := range xors {
			d, err := timed(func() error { _, err := run(fs[i], in); return err })
			if err != nil {
				return err
			}
			results[i] = append(results[i], d)
		}
	}
	mbs := func(d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }
	loop := mbs(durPct(native, 0.5))
	nat := mbs(durPct(streamed, 0.5))
	fmt.Fprintf(w, "| native Go loop, in memory (no stream) | %.0f | %.2f |\n", loop, loop/nat)
	fmt.Fprintf(w, "| native Go xor as a streamed filter (1 MiB reads) | %.0f | 1.00 |\n", nat)
	for i, x := range xors {
		v := mbs(durPct(results[i], 0.5))
		fmt.Fprintf(w, "| %s | %.0f | %.2f |\n", x.label, v, v/nat)
	}
	return nil
}

// wasmTransformer is a one-way PUT filter running code in rt, with one
// string parameter, key, and a deadline no run reaches.
func wasmTransformer(ctx context.Context, rt *wasm.Runtime, name string, code []byte, p filter.Params) (filter.Transformer, error) {
	in, err := wasm.New(ctx, rt, filter.Info{Name: name, Version: 1, Methods: []filter.Method{filter.MethodPut},
		Stages: []filter.Stage{filter.StageGateway}, Params: []filter.ParamSpec{{Name: "key", Type: filter.TypeString}}},
		code, wasm.Limits{Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	f, err := in.New(p, filter.Env{})
	if err != nil {
		return nil, err
	}
	return f.(filter.Transformer), nil
}

type wasmModule struct {
	label string
	code  []byte
}

// pipelineInProcess measures, without HTTP, the CPU time of 1 MiB through
// pipelines of 1, 2 and 4 noop instances of each module chained as a
// request's filters are (each instance's output is the next one's
// stdin): what one more pipelined filter costs the process, apart from
// the network and the disk.
func pipelineInProcess(w io.Writer, build func(string, []byte, filter.Params) (filter.Transformer, error),
	run func(filter.Transformer, []byte) (time.Duration, error), mods []wasmModule) error {
	const size = 1 << 20
	in := textLike(size)
	fmt.Fprintln(w, "\n| 1 MiB through n chained noops, in process | n=1 CPU ms | n=2 CPU ms | n=4 CPU ms | per extra filter CPU ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, m := range mods {
		var cpu [3]time.Duration
		for k, n := range []int{1, 2, 4} {
			fs := make([]filter.Transformer, n)
			for i := range fs {
				f, err := build(fmt.Sprintf("chain%d", i), m.code, nil)
				if err != nil {
					return err
				}
				fs[i] = f
			}
			chain := chained(fs)
			var per []time.Duration
			for i := range 53 {
				c0 := cpuNow()
				if _, err := run(chain, in); err != nil {
					return err
				}
				if i >= 3 {
					per = append(per, cpuNow()-c0)
				}
			}
			cpu[k] = durPct(per, 0.5)
		}
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.3f |\n", m.label, msOf(cpu[0]), msOf(cpu[1]), msOf(cpu[2]), msOf(cpu[2]-cpu[0])/3)
	}
	return nil
}

// chainT runs transformers one after the other, as a pipeline does.
type chainT []filter.Transformer

func chained(fs []filter.Transformer) filter.Transformer { return chainT(fs) }

func (c chainT) Info() *filter.Info { return c[0].Info() }

func (c chainT) Transform(ctx context.Context, req *filter.Request, r io.Reader) (io.Reader, error) {
	for _, f := range c {
		out, err := f.Transform(ctx, req, r)
		if err != nil {
			return nil, err
		}
		r = out
	}
	return r, nil
}

// nativeXor is examples/filters/xor's loop in native Go: the key repeated
// into a stream, XORed eight bytes at a time.
func nativeXor(dst, src, key []byte) {
	const chunk = 256 << 10
	stream := make([]byte, 0, chunk+len(key))
	for len(stream) < chunk+len(key) {
		stream = append(stream, key...)
	}
	phase := 0
	for off := 0; off < len(src); off += chunk {
		end := min(off+chunk, len(src))
		xor8(dst[off:end], src[off:end], stream[phase:])
		phase = (phase + end - off) % len(key)
	}
}

// xor8 sets d to s XOR ks, eight bytes at a time.
func xor8(d, s, ks []byte) {
	i := 0
	for ; i+8 <= len(d); i += 8 {
		binary.LittleEndian.PutUint64(d[i:], binary.LittleEndian.Uint64(s[i:])^binary.LittleEndian.Uint64(ks[i:]))
	}
	for ; i < len(d); i++ {
		d[i] = s[i] ^ ks[i]
	}
}

// xorStream is the same transform as a native streaming filter: what the
// WASM module is compared with.
type xorStream struct {
	r     io.Reader
	key   []byte
	ks    []byte
	phase int
}

func (x *xorStream) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	if len(x.ks) < n+len(x.key) {
		x.ks = x.ks[:0]
		for len(x.ks) < n+len(x.key) {
			x.ks = append(x.ks, x.key...)
		}
	}
	xor8(p[:n], p[:n], x.ks[x.phase:x.phase+n])
	x.phase = (x.phase + n) % len(x.key)
	return n, err
}

// createFilter registers a WASM filter through the admin API.
func (g *gateway) createFilter(ctx context.Context, descriptor map[string]any, code []byte) error {
	body, ct, err := admin.UploadBody(descriptor, "module", code)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.adminURL+"/v1/filters", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return fmt.Errorf("create filter %v: %d %s", descriptor["name"], resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// cpuNow is the process's CPU time, user plus system.
func cpuNow() time.Duration {
	c := processCPU()
	return c[0] + c[1]
}
