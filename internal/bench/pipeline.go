package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	mrand "math/rand/v2"
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
		{"zenc", "FOR BUCKET bench/zenc DO SET compression WITH engine=zstd ON gateway, SET encryption ON storage"},
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
		for _, b := range buckets[:4] {
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

// RunRangeGet measures a Range GET of rangeSize bytes at random offsets of
// one large object stored plain and stored compressed (zstd) and encrypted:
// seekable formats should make its cost follow the range, not the object.
func RunRangeGet(ctx context.Context, dir string, objectSize, rangeSize int64, gets int, logw io.Writer) ([]Comparison, error) {
	gw, err := startGateway(ctx, filepath.Join(dir, "facet"))
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	policy := "FOR BUCKET bench/zenc DO SET compression WITH engine=zstd ON gateway, SET encryption ON storage"
	for _, b := range []string{"plain", "zenc"} {
		if err := gw.do(ctx, http.MethodPut, "/"+b, nil, 0, nil); err != nil {
			return nil, err
		}
	}
	if err := gw.applyPolicy(ctx, policy); err != nil {
		return nil, err
	}
	payload := textLike(int(objectSize))
	fmt.Fprintf(logw, "uploading a %s object plain and compressed+encrypted ...\n", sizeLabel(objectSize))
	for _, b := range []string{"plain", "zenc"} {
		if err := gw.do(ctx, http.MethodPut, "/"+b+"/big", payload, objectSize, nil); err != nil {
			return nil, err
		}
	}
	offsets := make([]int64, gets)
	for i := range offsets {
		offsets[i] = mrand.Int64N(objectSize - rangeSize)
	}
	sc := SpineScenario{Size: rangeSize, Ops: gets, Concurrency: 1}
	res := map[string]measured{}
	for _, b := range []string{"plain", "zenc"} {
		res[b] = measure(b, sc, func(i int) error {
			off := offsets[i]
			want := payload[off : off+rangeSize]
			return gw.doRange(ctx, "/"+b+"/big", off, rangeSize, want)
		})
		if res[b].err != nil {
			return nil, fmt.Errorf("range GET %s: %w", b, res[b].err)
		}
	}
	label := fmt.Sprintf("Range GET %s of %s", sizeLabel(rangeSize), sizeLabel(objectSize))
	return []Comparison{{Op: label, Direct: res["plain"].Result, Facet: res["zenc"].Result}}, nil
}

// doRange fetches bytes [off, off+n) and checks them against want.
func (g *gateway) doRange(ctx context.Context, path string, off, n int64, want []byte) error {
	hdr := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}
	return g.doWith(ctx, http.MethodGet, path, hdr, nil, 0, func(r io.Reader) error {
		got, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("range %d+%d: %d bytes, content differs", off, n, len(got))
		}
		return nil
	})
}

// textLike returns log-like bytes that compress the way real text does
// (random bytes or zeros would make compression figures meaningless).
func textLike(n int) []byte {
	words := []string{"GET", "PUT", "/api/v1/items", "status=200", "status=404", "user=alice", "user=bob",
		"latency_ms=", "INFO", "WARN", "request", "tenant=t1", "bucket=logs", "bytes=", "region=eu"}
	var rnd [8]byte
	out := make([]byte, 0, n+64)
	for len(out) < n {
		binary.LittleEndian.PutUint64(rnd[:], mrand.Uint64())
		for _, r := range rnd[:6] {
			out = append(out, words[int(r)%len(words)]...)
			out = append(out, ' ')
		}
		out = fmt.Appendf(out, "%d\n", uint16(rnd[6])<<8|uint16(rnd[7]))
	}
	return out[:n]
}
