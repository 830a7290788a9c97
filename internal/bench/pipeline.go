package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
)

// PipelineScenarios are the sizes issue 3 measures the per-filter
// overhead at.
var PipelineScenarios = []SpineScenario{
	{Size: 1 << 20, Ops: 300, Concurrency: 1},
	{Size: 64 << 20, Ops: 8, Concurrency: 1},
}

// RunPipeline measures what one filter adds to a request: the same PUT and
// GET through `facet serve` into a bucket with no policy and into one whose
// policy runs the noop filter (and, for reference, compression and
// encryption on compressible data).
func RunPipeline(ctx context.Context, dir string, scenarios []SpineScenario, logw io.Writer) ([]Comparison, error) {
	gw, err := startGateway(ctx, filepath.Join(dir, "facet"))
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	buckets := []struct{ name, policy string }{
		{"plain", ""},
		{"noop", "FOR BUCKET bench/noop DO SET noop"},
		{"zstd", "FOR BUCKET bench/zstd DO SET compression WITH engine=zstd"},
		{"aesgcm", "FOR BUCKET bench/aesgcm DO SET encryption"},
	}
	for _, b := range buckets {
		if err := gw.do(ctx, http.MethodPut, "/"+b.name, nil, 0, nil); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", b.name, err)
		}
		if b.policy != "" {
			if err := gw.applyPolicy(ctx, b.policy); err != nil {
				return nil, err
			}
		}
	}
	var rows []Comparison
	for _, sc := range scenarios {
		payload := textLike(int(sc.Size))
		label := fmt.Sprintf("%s c=%d", sizeLabel(sc.Size), sc.Concurrency)
		fmt.Fprintf(logw, "running pipeline %s ...\n", label)
		put := map[string]measured{}
		get := map[string]measured{}
		for _, b := range buckets {
			put[b.name] = measure(b.name, sc, func(i int) error {
				return gw.do(ctx, http.MethodPut, fmt.Sprintf("/%s/%s", b.name, objKey(sc, i)), payload, sc.Size, nil)
			})
			get[b.name] = measure(b.name, sc, func(i int) error {
				return gw.do(ctx, http.MethodGet, fmt.Sprintf("/%s/%s", b.name, objKey(sc, i)), nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
			})
			for _, m := range []measured{put[b.name], get[b.name]} {
				if m.err != nil {
					return nil, fmt.Errorf("%s %s: %w", label, b.name, m.err)
				}
			}
		}
		rows = append(rows,
			Comparison{Op: "PUT " + label, Direct: put["plain"].Result, Facet: put["noop"].Result, Baselines: []Result{put["zstd"].Result, put["aesgcm"].Result}},
			Comparison{Op: "GET " + label, Direct: get["plain"].Result, Facet: get["noop"].Result, Baselines: []Result{get["zstd"].Result, get["aesgcm"].Result}})
	}
	return rows, nil
}

// textLike returns log-like bytes that compress the way real text does
// (random bytes or zeros would make compression figures meaningless).
func textLike(n int) []byte {
	words := []string{"GET", "PUT", "/api/v1/items", "status=200", "status=404", "user=alice", "user=bob",
		"latency_ms=", "INFO", "WARN", "request", "tenant=t1", "bucket=logs", "bytes=", "region=eu"}
	var rnd [8]byte
	out := make([]byte, 0, n+64)
	for len(out) < n {
		_, _ = rand.Read(rnd[:])
		for _, r := range rnd[:6] {
			out = append(out, words[int(r)%len(words)]...)
			out = append(out, ' ')
		}
		out = fmt.Appendf(out, "%d\n", uint16(rnd[6])<<8|uint16(rnd[7]))
	}
	return out[:n]
}
