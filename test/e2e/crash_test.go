package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// crashContent is version v of key: its size (0..256 KiB) and bytes follow
// from key and version, so any read-back can be matched to the version it is.
func crashContent(key string, v int) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%d", key, v)
	size := int(h.Sum64() % (256*1024 + 1))
	return pattern(fmt.Sprintf("%s#%d", key, v), size)
}

// keyState tracks one key, written by exactly one goroutine so that its
// versions are ordered: the last acknowledged version, and a version whose
// PUT was sent but not answered (0 when none).
type keyState struct {
	key      string
	last     int // highest version ever sent
	acked    int
	inflight int
}

const (
	crashWriters    = 64
	crashKeysPerW   = 4
	crashMinRunTime = 3 * time.Second
	crashMaxRunTime = 60 * time.Second
)

func TestCrashKill9(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "crash")
	mkBucket(t, srv.sdk(c), "crash")
	token := srv.token

	states := make([][]keyState, crashWriters)
	for w := range states {
		states[w] = make([]keyState, crashKeysPerW)
		for k := range states[w] {
			states[w][k].key = fmt.Sprintf("w%02d/key-%d", w, k)
		}
	}
	for round := 1; round <= 2; round++ {
		acked := crashRound(t, srv, c, states)
		t.Logf("round %d: %d acknowledged PUTs before kill -9", round, acked)
		if !gatewayTarget() {
			checkAfterCrash(t, dataDir)
		}
		srv = startServerWithToken(t, dataDir, token)
		verifyAfterCrash(t, srv, c, dataDir, states)
		if t.Failed() {
			return
		}
	}
}

// crashRound runs the writers until kill -9 and returns the number of
// acknowledged PUTs.
func crashRound(t *testing.T, srv *server, c creds, states [][]keyState) int64 {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: crashWriters, MaxConnsPerHost: 0}
	cl := srv.sdk(c, func(o *s3.Options) {
		o.HTTPClient = &http.Client{Timeout: 60 * time.Second, Transport: tr}
	})
	defer tr.CloseIdleConnections()
	var (
		killed      atomic.Bool
		acks        atomic.Int64
		mu          sync.Mutex
		errs        []error
		wg          sync.WaitGroup
		ctx, cancel = context.WithCancel(context.Background())
	)
	defer cancel()
	for w := range crashWriters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(len(states[w]))))
			for ctx.Err() == nil {
				st := &states[w][rng.IntN(crashKeysPerW)]
				st.last++
				v := st.last
				st.inflight = v
				body := crashContent(st.key, v)
				out, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("crash"), Key: aws.String(st.key), Body: bytes.NewReader(body)})
				if err != nil {
					if !killed.Load() {
						mu.Lock()
						errs = append(errs, fmt.Errorf("PUT %s v%d before the kill: %w", st.key, v, err))
						mu.Unlock()
					}
					return // st.inflight stays: it may or may not have landed
				}
				if got := aws.ToString(out.ETag); got != quotedETag(body) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("PUT %s v%d: ETag %s; want %s", st.key, v, got, quotedETag(body)))
					mu.Unlock()
				}
				st.acked, st.inflight = v, 0
				acks.Add(1)
			}
		})
	}
	start := time.Now()
	for time.Since(start) < crashMinRunTime || (acks.Load() < 2*crashWriters*crashKeysPerW && time.Since(start) < crashMaxRunTime) {
		time.Sleep(50 * time.Millisecond)
		if srv.exited() {
			break
		}
	}
	killed.Store(true)
	srv.kill9()
	cancel()
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	n := acks.Load()
	if n < int64(crashWriters) {
		t.Fatalf("only %d PUTs were acknowledged before the kill; the crash test proves little", n)
	}
	return n
}

// verifyAfterCrash checks every key against what was acknowledged, then
// folds what it found back into states for the next round.
func verifyAfterCrash(t *testing.T, srv *server, c creds, dataDir string, states [][]keyState) {
	t.Helper()
	cl := srv.sdk(c)
	ctx := ctxT(t)
	written := map[string]bool{}
	present := map[string]int{} // key -> size
	for w := range states {
		for k := range states[w] {
			st := &states[w][k]
			if st.last > 0 {
				written[st.key] = true
			}
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("crash"), Key: aws.String(st.key)})
			if err != nil {
				if errCode(err) == "NoSuchKey" && st.acked == 0 {
					st.inflight = 0
					continue // never acknowledged: absence is allowed
				}
				t.Errorf("%s (acked v%d, in flight v%d): GET after restart: %v", st.key, st.acked, st.inflight, err)
				continue
			}
			got, rerr := io.ReadAll(out.Body)
			out.Body.Close()
			if rerr != nil {
				t.Errorf("%s: reading after restart: %v", st.key, rerr)
				continue
			}
			present[st.key] = len(got)
			if etag := aws.ToString(out.ETag); etag != quotedETag(got) {
				t.Errorf("%s: ETag %s does not match the content's MD5 %s", st.key, etag, quotedETag(got))
			}
			switch {
			case st.acked > 0 && bytes.Equal(got, crashContent(st.key, st.acked)):
				st.inflight = 0
			case st.inflight > 0 && bytes.Equal(got, crashContent(st.key, st.inflight)):
				st.acked, st.inflight = st.inflight, 0
			default:
				which := "no version written"
				for v := 1; v <= st.last; v++ {
					if bytes.Equal(got, crashContent(st.key, v)) {
						which = fmt.Sprintf("older version v%d", v)
					}
				}
				t.Errorf("%s: after restart holds %d bytes (%s); want acked v%d or in-flight v%d: an acknowledged write was lost or torn",
					st.key, len(got), which, st.acked, st.inflight)
			}
		}
	}
	listed := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String("crash")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("listing after restart: %v", err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			listed[k] = true
			if !written[k] {
				t.Errorf("listing after restart shows %q, which was never written", k)
			}
			if size, ok := present[k]; !ok {
				t.Errorf("listing shows %q but GET does not find it", k)
			} else if aws.ToInt64(o.Size) != int64(size) {
				t.Errorf("listing shows %q with size %d; GET returns %d bytes", k, aws.ToInt64(o.Size), size)
			}
		}
	}
	for k := range present {
		if !listed[k] {
			t.Errorf("%q reads back but is not listed", k)
		}
	}
	ups, err := cl.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("crash")})
	if err != nil || len(ups.Uploads) != 0 {
		t.Errorf("ListMultipartUploads after restart: %v; want none", err)
	}
	waitNoTempFiles(t, dataDir)
}

// gatedReader hands out its first chunk, reports that, and then waits for
// the gate before giving the rest.
type gatedReader struct {
	data    []byte
	off     int
	first   int
	reached func()
	gate    <-chan struct{}
	once    sync.Once
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.off >= len(g.data) {
		return 0, io.EOF
	}
	if g.off >= g.first {
		g.once.Do(g.reached)
		<-g.gate
	}
	end := len(g.data)
	if g.off < g.first {
		end = g.first
	}
	n := copy(p, g.data[g.off:end])
	g.off += n
	return n, nil
}

func TestGracefulShutdown(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "graceful")
	mkBucket(t, srv.sdk(c), "graceful")

	const uploads = 8
	gate := make(chan struct{})
	var reached sync.WaitGroup
	reached.Add(uploads)
	type result struct {
		key    string
		status int
		err    error
	}
	results := make(chan result, uploads)
	bodies := map[string][]byte{}
	for i := range uploads {
		key := fmt.Sprintf("inflight-%d", i)
		body := pattern(key, 4*mib)
		bodies[key] = body
		req, err := http.NewRequest(http.MethodPut, srv.endpoint()+"/graceful/"+key, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(body))
		sign(t, req, c, "UNSIGNED-PAYLOAD", time.Now())
		req.Body = io.NopCloser(&gatedReader{data: body, first: 256 * 1024, reached: reached.Done, gate: gate})
		go func() {
			resp, err := rawClient.Do(req)
			if err != nil {
				results <- result{key: key, err: err}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{key: key, status: resp.StatusCode}
		}()
	}
	reached.Wait()
	// Let the first bytes reach the server's handlers before the signal.
	time.Sleep(300 * time.Millisecond)
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	close(gate)
	for range uploads {
		r := <-results
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("upload %s in flight during SIGTERM: status %d, err %v; want 200", r.key, r.status, r.err)
		}
	}
	select {
	case <-srv.done:
	case <-time.After(30 * time.Second):
		t.Fatal("facet serve still running 30s after SIGTERM with its uploads finished")
	}
	if srv.waitErr != nil {
		t.Errorf("facet serve exit after SIGTERM: %v; want exit status 0", srv.waitErr)
	}
	srv2 := startServerWithToken(t, dataDir, srv.token)
	a := srv2.sdk(c)
	for key, body := range bodies {
		assertContent(t, a, "graceful", key, body)
	}
	waitNoTempFiles(t, dataDir)
}

// checkAfterCrash runs facet fsck on the killed server's data directory:
// a crash may leave leftovers (temp and unreferenced files, which the
// next start removes), never damage.
func checkAfterCrash(t *testing.T, dataDir string) {
	t.Helper()
	out, err := exec.Command(facetBin, "fsck", "--data", dataDir, "-o", "json").Output()
	var rep struct {
		Objects  int `json:"objects"`
		Verified int `json:"verified"`
		Damage   int `json:"damage"`
		Findings []struct {
			Kind, Key, File, Detail string
			Leftover                bool
		} `json:"findings"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("facet fsck after kill -9: %v, %v\n%s", err, jerr, out)
	}
	for _, f := range rep.Findings {
		if !f.Leftover {
			t.Errorf("facet fsck after kill -9: %s %s %s: %s", f.Kind, f.Key, f.File, f.Detail)
		}
	}
	if err != nil || rep.Damage != 0 {
		t.Fatalf("facet fsck after kill -9: %v, damage %d", err, rep.Damage)
	}
	t.Logf("facet fsck after kill -9: %d objects, %d verified, %d leftovers", rep.Objects, rep.Verified, len(rep.Findings))
}
