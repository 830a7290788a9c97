package promexp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// The data-path cost of the exporter: 4 KiB PUTs and GETs through the S3
// handler (filesystem backend without fsync, so the observer's share is
// not hidden behind the disk) with no observer vs the Prometheus one.
// `go test -run '^$' -bench . -cpu 1,2 ./internal/promexp/`.

func benchGateway(b *testing.B, prom bool) http.Handler {
	st, err := fs.Open(b.Context(), b.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg := s3api.Config{Backend: st, Buckets: &memBuckets{owner: map[string]string{}}, Auth: headerAuth{}}
	if prom {
		cfg.Observer = New(Config{Policies: version(1)})
	}
	h := s3api.New(cfg)
	req := httptest.NewRequest(http.MethodPut, "/bench", nil)
	req.Header.Set("X-Test-Tenant", "t1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("create bucket: %d", rec.Code)
	}
	return h
}

var payload = bytes.Repeat([]byte("0123456789abcdef"), 256) // 4 KiB

func put(b *testing.B, h http.Handler, key string) {
	req := httptest.NewRequest(http.MethodPut, "/bench/"+key, bytes.NewReader(payload))
	req.Header.Set("X-Test-Tenant", "t1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
}

func get(b *testing.B, h http.Handler, key string) {
	req := httptest.NewRequest(http.MethodGet, "/bench/"+key, nil)
	req.Header.Set("X-Test-Tenant", "t1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.Len() != len(payload) {
		b.Fatalf("GET: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

func BenchmarkPut4KiB(b *testing.B) {
	for _, mode := range []string{"off", "prometheus"} {
		b.Run(mode, func(b *testing.B) {
			h := benchGateway(b, mode == "prometheus")
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				// Each goroutine overwrites its own few keys: the
				// directory stays small, overwrites stay realistic.
				prefix, i := strconv.FormatInt(time.Now().UnixNano(), 36), 0
				for pb.Next() {
					put(b, h, prefix+strconv.Itoa(i%64))
					i++
				}
			})
		})
	}
}

func BenchmarkGet4KiB(b *testing.B) {
	for _, mode := range []string{"off", "prometheus"} {
		b.Run(mode, func(b *testing.B) {
			h := benchGateway(b, mode == "prometheus")
			for i := range 64 {
				put(b, h, "k"+strconv.Itoa(i))
			}
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					get(b, h, "k"+strconv.Itoa(i%64))
					i++
				}
			})
		})
	}
}

// BenchmarkObserve is the exporter's own cost per request (Started and
// Done), the figure the whole-request benchmarks' noise hides.
func BenchmarkObserve(b *testing.B) {
	e := New(Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		o := &obs.Observation{Routed: true, Op: "GetObject", Tenant: "t1", Bucket: "bench", Status: 200, BytesOut: 4096, Duration: time.Millisecond}
		for pb.Next() {
			e.Started(o)
			e.Done(o)
		}
	})
}

// BenchmarkFilterTiming is the cost of timing filter steps: a PUT stream
// through the compression filter, drained as the backend would, untimed vs
// timed into the exporter.
func BenchmarkFilterTiming(b *testing.B) {
	reg := builtin.NewRegistry()
	src := zipBucket{reg}
	freq := &filter.Request{Bucket: "zipped", Method: filter.MethodPut}
	for _, size := range []int{4 << 10, 1 << 20} {
		plain := bytes.Repeat([]byte("a fairly compressible line of text\n"), size/35+1)[:size]
		for _, mode := range []string{"untimed", "timed"} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, mode), func(b *testing.B) {
				var pipes dataplane.PipelineSource = src
				if mode == "timed" {
					pipes = dataplane.Timed(src, New(Config{}))
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					out, _, err := pipes.ForPut(freq).Put(b.Context(), freq, bytes.NewReader(plain))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
