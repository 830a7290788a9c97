package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/facet-sds/facet/internal/server"
)

// The caching benchmark (issue 12): the sources' Fig. 5 in small (an
// oscillating 1 MiB GET workload on a bucket whose caching policy switches
// on above 5 GETs/s), the Arctur-like read trace with and without caching
// (Fig. 6(b)), and what admission to the cache adds to a PUT. Facet runs
// in this process in front of versitygw, as Crystal's proxies ran in front
// of Swift's storage nodes: a GET that misses crosses to the object store,
// a hit is read from the gateway's local disk.

// CacheOptions configure RunCache.
type CacheOptions struct {
	Dir string
	// Trace is the Arctur-like trace (bench/traces/arctur.csv).
	Trace string
	// Cycles of the oscillating workload, each Phase long at the low
	// rate and Phase long at the high one.
	Cycles     int
	Phase      time.Duration
	LowRate    float64
	HighRate   float64
	TraceLimit int // GETs of the trace replayed
	PutOps     int // PUTs per bucket for the admission overhead
	// HitPathSize and HitPathN: the objects and requests of the hit
	// path's breakdown.
	HitPathSize int64
	HitPathN    int
	Log         io.Writer
}

// DefaultCacheOptions are `make bench`'s.
func DefaultCacheOptions() CacheOptions {
	return CacheOptions{Trace: "bench/traces/arctur.csv", Cycles: 3, Phase: 10 * time.Second, LowRate: 2, HighRate: 15,
		TraceLimit: 3000, PutOps: 200, HitPathSize: 128 << 10, HitPathN: 500}
}

// CacheReport is what RunCache measured.
type CacheReport struct {
	Backend string
	// Load is the machine's load averages (1, 5, 15 min) before and after: the
	// paced GETs of Fig. 5 wait for a CPU after every sleep, and on a busy
	// machine that wait dominates their latency.
	LoadBefore, LoadAfter string
	// Fig. 5: GETs while the dynamic policy had caching on vs off.
	OscOn, OscOff   Result
	OscHitOnly      Result
	OscHits, OscOns int
	// The same high-rate phase with caching forced off (a bucket without
	// policy), to separate the cache's effect from the load's.
	OscHighNoCache Result
	// Fig. 6(b): the trace's GETs without and with a caching policy.
	TracePlain, TraceCached Result
	TraceHitRatio           float64
	// The same GETs again, the cache warm from the first pass.
	WarmPlain, WarmCached Result
	WarmHitRatio          float64
	// PUT 1 MiB without and with admission to the cache.
	PutPlain, PutAdmit Result
	// HitPath breaks a hit's cost down, one request at a time.
	HitPath HitPathReport
}

// startCacheGateway runs `facet serve` in this process over backendURL.
func startCacheGateway(ctx context.Context, dir, backendURL string) (*gateway, error) {
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	token := "bench-token-0123456789abcdef0123456789"
	go func() {
		done <- server.Run(ctx, server.Options{
			DataDir: dir, S3Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: token, BackendURL: backendURL,
			Region: "us-east-1", ShutdownTimeout: 5 * time.Second,
			Ready: func(s3, admin string) { ready <- [2]string{s3, admin} },
		}, slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}()
	select {
	case addrs := <-ready:
		return newGateway(ctx, addrs[0], addrs[1], token, func() { cancel(); <-done })
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("gateway did not start: %w", err)
	}
}

// startVersity starts versitygw and returns the backend URL for Facet
// and a client of versitygw itself (its root user).
func startVersity(ctx context.Context, dir string) (string, *gateway, func(), error) {
	bin, err := peerBinary("versitygw")
	if err != nil {
		return "", nil, nil, err
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	access, secret := "benchroot", hex.EncodeToString(b)
	addr, err := freeAddr()
	if err != nil {
		return "", nil, nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "vgw"), 0o700); err != nil {
		return "", nil, nil, err
	}
	vgw, err := startChild(bin, []string{"ROOT_ACCESS_KEY_ID=" + access, "ROOT_SECRET_ACCESS_KEY=" + secret},
		"--port", addr, "--health", "/health", "posix", filepath.Join(dir, "vgw"))
	if err != nil {
		return "", nil, nil, err
	}
	if err := waitTCP(addr); err != nil {
		vgw.stop()
		return "", nil, nil, err
	}
	direct := &gateway{s3URL: "http://" + addr, accessKey: access, secret: secret, client: &http.Client{}, signer: v4.NewSigner()}
	if err := direct.do(ctx, http.MethodPut, "/facet", nil, 0, nil); err != nil {
		vgw.stop()
		return "", nil, nil, fmt.Errorf("versitygw create bucket: %w", err)
	}
	return "s3://" + access + ":" + secret + "@" + addr + "/facet/bench?tls=false", direct, vgw.stop, nil
}

// getCache GETs path, checks its length and returns the X-Facet-Cache
// header.
func (g *gateway) getCache(ctx context.Context, path string, size int64) (time.Duration, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.s3URL+path, nil)
	if err != nil {
		return 0, "", err
	}
	if err := g.sign(ctx, req); err != nil {
		return 0, "", err
	}
	start := time.Now()
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, "", fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, msg)
	}
	if err := drain(resp.Body, size); err != nil {
		return 0, "", err
	}
	return time.Since(start), resp.Header.Get("X-Facet-Cache"), nil
}

func (g *gateway) sign(ctx context.Context, req *http.Request) error {
	req.Header.Set("x-amz-content-sha256", "UNSIGNED-PAYLOAD")
	return g.signer.SignHTTP(ctx, aws.Credentials{AccessKeyID: g.accessKey, SecretAccessKey: g.secret}, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
}

func resultOf(name string, lats []time.Duration, bytes int64, elapsed time.Duration) Result {
	r := Result{Name: name, Ops: len(lats), Bytes: bytes, Elapsed: elapsed}
	if len(lats) == 0 {
		return r
	}
	s := slices.Clone(lats)
	slices.Sort(s)
	r.P50 = s[len(s)/2]
	r.P99 = s[min(len(s)-1, len(s)*99/100)]
	return r
}

// RunCache runs the three caching measurements.
func RunCache(ctx context.Context, o CacheOptions) (CacheReport, error) {
	var rep CacheReport
	rep.LoadBefore = loadAvg()
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	backendURL, store, stopVgw, err := startVersity(ctx, o.Dir)
	if err != nil {
		return rep, err
	}
	defer stopVgw()
	rep.Backend = "versitygw (posix) on 127.0.0.1"
	gw, err := startCacheGateway(ctx, filepath.Join(o.Dir, "facet"), backendURL)
	if err != nil {
		return rep, err
	}
	defer gw.stop()
	for _, b := range []string{"osc", "osc0", "trplain", "trcache", "putplain", "putcache"} {
		if err := gw.do(ctx, http.MethodPut, "/"+b, nil, 0, nil); err != nil {
			return rep, fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	for _, p := range []string{
		"FOR BUCKET bench/osc WHEN get_ops > 5 DO SET caching WITH size=1GB TRANSIENT",
		"FOR BUCKET bench/trcache DO SET caching WITH size=2GB, admit=get",
		"FOR BUCKET bench/putcache DO SET caching WITH size=2GB, admit=put",
	} {
		if err := gw.applyPolicy(ctx, p); err != nil {
			return rep, err
		}
	}

	fmt.Fprintln(logw, "Fig. 5: oscillating 1 MiB GETs ...")
	if err := runOscillating(ctx, gw, o, &rep); err != nil {
		return rep, err
	}
	fmt.Fprintln(logw, "Arctur-like trace with and without caching ...")
	if err := runCacheTrace(ctx, gw, o, &rep); err != nil {
		return rep, err
	}
	fmt.Fprintln(logw, "PUT 1 MiB with and without cache admission ...")
	if err := runPutAdmission(ctx, gw, o, &rep); err != nil {
		return rep, err
	}
	fmt.Fprintln(logw, "The hit path, one request at a time ...")
	if rep.HitPath, err = runHitPath(ctx, gw, store, o.HitPathSize, o.HitPathN); err != nil {
		return rep, err
	}
	rep.LoadAfter = loadAvg()
	return rep, nil
}

// runOscillating alternates low and high GET rates over 1 MiB objects;
// each GET is classed by whether a caching policy was in force for it.
func runOscillating(ctx context.Context, gw *gateway, o CacheOptions, rep *CacheReport) error {
	const size, objects = 1 << 20, 16
	payload := textLike(size)
	for _, b := range []string{"osc", "osc0"} {
		for i := range objects {
			if err := gw.do(ctx, http.MethodPut, fmt.Sprintf("/%s/o%02d", b, i), payload, size, nil); err != nil {
				return err
			}
		}
	}
	var on, off, hitOnly, high0 []time.Duration
	start := time.Now()
	n := 0
	for range o.Cycles {
		for _, ph := range []struct {
			rate float64
			high bool
		}{{o.LowRate, false}, {o.HighRate, true}} {
			end := time.Now().Add(o.Phase)
			for time.Now().Before(end) {
				t := time.Now()
				lat, cache, err := gw.getCache(ctx, fmt.Sprintf("/osc/o%02d", n%objects), size)
				if err != nil {
					return err
				}
				n++
				if cache != "" {
					on = append(on, lat)
					rep.OscOns++
					if cache == "hit" {
						rep.OscHits++
						hitOnly = append(hitOnly, lat)
					}
				} else {
					off = append(off, lat)
				}
				if wait := time.Duration(float64(time.Second)/ph.rate) - time.Since(t); wait > 0 {
					time.Sleep(wait)
				}
			}
		}
		// The control: the high rate on a bucket without caching.
		end := time.Now().Add(o.Phase / 2)
		for time.Now().Before(end) {
			t := time.Now()
			lat, _, err := gw.getCache(ctx, fmt.Sprintf("/osc0/o%02d", n%objects), size)
			if err != nil {
				return err
			}
			n++
			high0 = append(high0, lat)
			if wait := time.Duration(float64(time.Second)/o.HighRate) - time.Since(t); wait > 0 {
				time.Sleep(wait)
			}
		}
	}
	el := time.Since(start)
	rep.OscOn = resultOf("caching on", on, int64(len(on))*size, el)
	rep.OscOff = resultOf("caching off", off, int64(len(off))*size, el)
	rep.OscHitOnly = resultOf("hits", hitOnly, int64(len(hitOnly))*size, el)
	rep.OscHighNoCache = resultOf("high rate, no caching policy", high0, int64(len(high0))*size, el)
	return nil
}

// runCacheTrace replays the trace's GETs (4 in flight, as fast as they
// go) on a bucket without and one with a caching policy (admit=get);
// objects are written first, so the cached bucket starts cold.
func runCacheTrace(ctx context.Context, gw *gateway, o CacheOptions, rep *CacheReport) error {
	recs, err := LoadTrace(o.Trace)
	if err != nil {
		return err
	}
	sizes := map[string]int64{}
	var gets []TraceRecord
	for _, r := range recs {
		if r.Op != OpGet || r.Size <= 0 {
			continue
		}
		if _, ok := sizes[r.Key]; !ok {
			sizes[r.Key] = r.Size
		}
		r.Size = sizes[r.Key]
		gets = append(gets, r)
		if len(gets) == o.TraceLimit {
			break
		}
	}
	var maxSize int64
	for _, s := range sizes {
		maxSize = max(maxSize, s)
	}
	payload := textLike(int(maxSize))
	for _, b := range []string{"trplain", "trcache"} {
		for k, s := range sizes {
			if err := gw.do(ctx, http.MethodPut, "/"+b+"/"+k, payload[:s], s, nil); err != nil {
				return err
			}
		}
	}
	if rep.TracePlain, rep.TraceCached, rep.TraceHitRatio, err = replayCacheTrace(ctx, gw, gets); err != nil {
		return err
	}
	// A second pass over the same GETs finds the cache warm: every object
	// has been read once, as in a trace that has been running a while.
	rep.WarmPlain, rep.WarmCached, rep.WarmHitRatio, err = replayCacheTrace(ctx, gw, gets)
	return err
}

// replayCacheTrace replays gets on both buckets together, record by
// record (4 in flight), so that they see the same machine: on a shared,
// busy one, replaying them one after the other compares two different
// loads.
func replayCacheTrace(ctx context.Context, gw *gateway, gets []TraceRecord) (plain, cached Result, hitRatio float64, err error) {
	var (
		next    atomic.Int64
		mu      sync.Mutex
		lats    = map[string][]time.Duration{}
		hits    int
		bytes   int64
		wg      sync.WaitGroup
		first   error
		errOne  sync.Once
		elapsed = map[string]time.Duration{}
		order   = [2]string{"trplain", "trcache"}
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(gets) {
					return
				}
				r := gets[i]
				for j := range 2 {
					b := order[(i+j)%2]
					lat, cache, err := gw.getCache(ctx, "/"+b+"/"+r.Key, r.Size)
					if err != nil {
						errOne.Do(func() { first = err })
						return
					}
					mu.Lock()
					lats[b] = append(lats[b], lat)
					elapsed[b] += lat
					if cache == "hit" {
						hits++
					}
					if j == 0 {
						bytes += r.Size
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return plain, cached, 0, first
	}
	// Each bucket's elapsed time is the sum of its GETs' latencies over the
	// 4 workers, so ops/s compares the two fairly.
	plain = resultOf("trplain", lats["trplain"], bytes, elapsed["trplain"]/4)
	cached = resultOf("trcache", lats["trcache"], bytes, elapsed["trcache"]/4)
	return plain, cached, float64(hits) / float64(max(1, cached.Ops)), nil
}

// runPutAdmission PUTs 1 MiB objects alternately into a bucket without
// and one with admission to the cache, so both see the same machine.
func runPutAdmission(ctx context.Context, gw *gateway, o CacheOptions, rep *CacheReport) error {
	const size = 1 << 20
	payload := textLike(size)
	var plain, admit []time.Duration
	start := time.Now()
	for i := range o.PutOps {
		for _, b := range []string{"putplain", "putcache"} {
			t := time.Now()
			if err := gw.do(ctx, http.MethodPut, fmt.Sprintf("/%s/p%05d", b, i), payload, size, nil); err != nil {
				return err
			}
			if b == "putplain" {
				plain = append(plain, time.Since(t))
			} else {
				admit = append(admit, time.Since(t))
			}
		}
	}
	el := time.Since(start)
	rep.PutPlain = resultOf("PUT, no caching", plain, int64(len(plain))*size, el/2)
	rep.PutAdmit = resultOf("PUT, admitted to the cache", admit, int64(len(admit))*size, el/2)
	return nil
}

// WriteCacheReport prints the report as Markdown, with the sources'
// figures next to Facet's.
func WriteCacheReport(w io.Writer, r CacheReport) {
	pct := func(a, b time.Duration) float64 { return (float64(a) - float64(b)) / float64(b) * 100 }
	fmt.Fprintf(w, "backend: %s; Facet in this process with its object cache on the local disk; load average %s before, %s after (%d CPUs)\n\n",
		r.Backend, r.LoadBefore, r.LoadAfter, runtime.NumCPU())
	fmt.Fprintln(w, "| measurement | without caching | with caching | change | sources |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	fmt.Fprintf(w, "| Fig. 5: median 1 MiB GET, dynamic policy off vs on periods (%d GETs off, %d on, %d hits) | %.2f ms | %.2f ms | %+.1f%% | -29.7%% |\n",
		r.OscOff.Ops, r.OscOn.Ops, r.OscHits, msf(r.OscOff.P50), msf(r.OscOn.P50), pct(r.OscOn.P50, r.OscOff.P50))
	fmt.Fprintf(w, "| Fig. 5: median 1 MiB GET, off periods vs hits only | %.2f ms | %.2f ms | %+.1f%% | |\n",
		msf(r.OscOff.P50), msf(r.OscHitOnly.P50), pct(r.OscHitOnly.P50, r.OscOff.P50))
	fmt.Fprintf(w, "| Fig. 5 control: median 1 MiB GET at the high rate, bucket without policy vs on periods | %.2f ms | %.2f ms | %+.1f%% | |\n",
		msf(r.OscHighNoCache.P50), msf(r.OscOn.P50), pct(r.OscOn.P50, r.OscHighNoCache.P50))
	fmt.Fprintf(w, "| Fig. 6(b): Arctur-like trace, median GET (%d GETs, hit ratio %.2f) | %.2f ms | %.2f ms | %.2fx faster | 1.9x |\n",
		r.TraceCached.Ops, r.TraceHitRatio, msf(r.TracePlain.P50), msf(r.TraceCached.P50), float64(r.TracePlain.P50)/float64(max(1, r.TraceCached.P50)))
	fmt.Fprintf(w, "| Arctur-like trace, GETs/s | %.0f | %.0f | %.2fx | |\n",
		r.TracePlain.OpsPerSec(), r.TraceCached.OpsPerSec(), r.TraceCached.OpsPerSec()/r.TracePlain.OpsPerSec())
	if r.WarmCached.Ops > 0 {
		fmt.Fprintf(w, "| Arctur-like trace, second pass (cache warm), median GET (hit ratio %.2f) | %.2f ms | %.2f ms | %.2fx faster | 1.9x |\n",
			r.WarmHitRatio, msf(r.WarmPlain.P50), msf(r.WarmCached.P50), float64(r.WarmPlain.P50)/float64(max(1, r.WarmCached.P50)))
		fmt.Fprintf(w, "| Arctur-like trace, second pass, GETs/s | %.0f | %.0f | %.2fx | |\n",
			r.WarmPlain.OpsPerSec(), r.WarmCached.OpsPerSec(), r.WarmCached.OpsPerSec()/r.WarmPlain.OpsPerSec())
	}
	fmt.Fprintf(w, "| PUT 1 MiB, median (%d each, alternating) | %.2f ms | %.2f ms | %+.1f%% | +4.2%% |\n",
		r.PutPlain.Ops, msf(r.PutPlain.P50), msf(r.PutAdmit.P50), pct(r.PutAdmit.P50, r.PutPlain.P50))
	if r.HitPath.N > 0 {
		writeHitPath(w, r.HitPath)
	}
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
