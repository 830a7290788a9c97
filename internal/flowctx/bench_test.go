package flowctx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/qos"
)

type limiterQoS struct{ l *qos.Limiter }

func (a limiterQoS) Admit(ctx context.Context, tenant, method string) (admit.Shaper, error) {
	return a.l.Admit(ctx, tenant, qos.ClassOf(method))
}

// sink is a connection-like destination: it has ReadFrom, as net/http's
// response does (sendfile).
// Its ReadFrom reads through one buffer, whoever the source is, so both
// modes pay the same copy and the difference is the QoS layer.
type sink struct {
	n   int64
	buf []byte
}

func (s *sink) Write(p []byte) (int, error) { s.n += int64(len(p)); return len(p), nil }
func (s *sink) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		n, err := r.Read(s.buf)
		total += int64(n)
		if err == io.EOF {
			s.n += total
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// The whole shaping front end an unthrottled GET (4 KiB, 1 MiB) goes through, as
// the S3 server composes it (context stage over the limiter), against no
// stage at all (QoS off): per-request CPU and allocations of the QoS
// layer. The body is handed over with ReadFrom, as net/http does.
func BenchmarkFrontEndGet(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		for _, mode := range []string{"off", "on"} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, mode), func(b *testing.B) { benchFrontEnd(b, size, mode) })
		}
	}
}

func benchFrontEnd(b *testing.B, size int, mode string) {
	payload := bytes.Repeat([]byte("x"), size)
	e := newBenchEnforcer()
	ctx := With(context.Background(), &Request{})
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		getThrough(b, e, ctx, mode, buf, payload)
	}
}

// The same with requests of one tenant on every core at once: what the
// flows' shared counters cost when cores take turns with their cache
// lines.
func BenchmarkFrontEndGetParallel(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run("4KiB/"+mode, func(b *testing.B) {
			e := newBenchEnforcer()
			payload := bytes.Repeat([]byte("x"), 4<<10)
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := With(context.Background(), &Request{})
				buf := make([]byte, 64<<10)
				for pb.Next() {
					getThrough(b, e, ctx, mode, buf, payload)
				}
			})
		})
	}
}

// getThrough is one GET's response through the front end (mode "on") or
// straight to the connection ("off").
func getThrough(b *testing.B, e *Enforcer, ctx context.Context, mode string, buf, payload []byte) {
	var dst io.Writer = &sink{buf: buf}
	var sh admit.Shaper
	if mode == "on" {
		var err error
		if sh, err = e.Admit(ctx, "t1", "GET"); err != nil {
			b.Fatal(err)
		}
		dst = sh.Writer(dst)
	}
	if _, err := dst.(io.ReaderFrom).ReadFrom(bytes.NewReader(payload)); err != nil {
		b.Fatal(err)
	}
	if sh != nil {
		sh.Done()
	}
}

// newBenchEnforcer is the front end the S3 server composes: the context
// stage over the limiter, rules compiled once (as the registry holds them).
func newBenchEnforcer() *Enforcer {
	rules := Compile(Rules{Default: "fg"})
	return NewEnforcer(EnforcerConfig{Next: limiterQoS{qos.NewLimiter(qos.LimiterConfig{Node: "n1"})},
		Rules: func(string) *Classifier { return rules }})
}
