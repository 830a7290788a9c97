package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// SIGTERM under traffic: large PUTs in flight and a stream of PUTs that
// goes on through the signal. Every PUT that got an answer got a whole
// one (200, and the object reads back complete after a restart); every
// PUT that got none was refused before the server took a byte of it (no
// object, not even a partial one); and the server's log counts as many
// goroutines exited as it started before it says the stores closed.
func TestShutdownUnderTraffic(t *testing.T) {
	if gatewayTarget() {
		t.Skip("signals the serve process")
	}
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "drain")
	mkBucket(t, srv.sdk(c), "drain")

	type result struct {
		key    string
		body   []byte
		status int
		err    error
	}
	put := func(key string, body io.Reader, size int) (int, error) {
		req, err := http.NewRequest(http.MethodPut, srv.endpoint()+"/drain/"+key, nil)
		if err != nil {
			return 0, err
		}
		req.ContentLength = int64(size)
		sign(t, req, c, "UNSIGNED-PAYLOAD", time.Now())
		req.Body = io.NopCloser(body)
		resp, err := rawClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return resp.StatusCode, err
		}
		return resp.StatusCode, nil
	}

	// Large PUTs held mid-body across the signal.
	const inflight = 6
	gate := make(chan struct{})
	var reached sync.WaitGroup
	reached.Add(inflight)
	results := make(chan result, 1024)
	for i := range inflight {
		key := fmt.Sprintf("big-%d", i)
		body := pattern(key, 4*mib)
		go func() {
			st, err := put(key, &gatedReader{data: body, first: 256 * 1024, reached: reached.Done, gate: gate}, len(body))
			results <- result{key, body, st, err}
		}()
	}
	// A stream of smaller PUTs that keeps going until the server stops
	// answering.
	var stream sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		stream.Add(1)
		go func() {
			defer stream.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("stream-%d-%d", w, i)
				body := pattern(key, 512*1024)
				st, err := put(key, bytes.NewReader(body), len(body))
				results <- result{key, body, st, err}
				if err != nil {
					return
				}
			}
		}()
	}
	reached.Wait()
	time.Sleep(300 * time.Millisecond)
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	close(gate)
	select {
	case <-srv.done:
	case <-time.After(60 * time.Second):
		t.Fatal("facet serve still running 60s after SIGTERM")
	}
	close(stop)
	stream.Wait()
	close(results)
	if srv.waitErr != nil {
		t.Errorf("facet serve exit after SIGTERM: %v; want exit status 0", srv.waitErr)
	}
	assertGoroutinesExitedBeforeStoresClosed(t, srv.logPath)

	var done, refused []result
	for r := range results {
		switch {
		case r.err == nil && r.status == http.StatusOK:
			done = append(done, r)
		case r.err != nil && r.status == 0:
			refused = append(refused, r)
		default:
			t.Errorf("PUT %s during shutdown: status %d, err %v; want 200 or refused", r.key, r.status, r.err)
		}
	}
	bigDone := 0
	for _, r := range done {
		if len(r.body) == 4*mib {
			bigDone++
		}
	}
	if bigDone != inflight {
		t.Errorf("%d of the %d PUTs in flight at SIGTERM completed; want all", bigDone, inflight)
	}
	t.Logf("PUTs: %d completed, %d refused", len(done), len(refused))

	srv2 := startServerWithToken(t, dataDir, srv.token)
	a := srv2.sdk(c)
	for _, r := range done {
		assertContent(t, a, "drain", r.key, r.body)
	}
	for _, r := range refused {
		if _, err := a.HeadObject(ctxT(t), &s3.HeadObjectInput{Bucket: aws.String("drain"), Key: aws.String(r.key)}); errStatus(err) != http.StatusNotFound {
			t.Errorf("PUT %s got no answer, yet HEAD says %v (want 404: nothing taken)", r.key, err)
		}
	}
	waitNoTempFiles(t, dataDir)
}

// assertGoroutinesExitedBeforeStoresClosed reads a server's JSON log: its
// "goroutines" line must count as many exited as started, and come before
// "stores closed".
func assertGoroutinesExitedBeforeStoresClosed(t *testing.T, logPath string) {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var counted, closed bool
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg             string
			Started, Exited int
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch line.Msg {
		case "goroutines":
			if closed {
				t.Errorf("goroutines counted after the stores closed")
			}
			if line.Started == 0 || line.Started != line.Exited {
				t.Errorf("at shutdown: goroutines started=%d exited=%d; want all exited", line.Started, line.Exited)
			}
			t.Logf("goroutines started=%d exited=%d", line.Started, line.Exited)
			counted = true
		case "stores closed":
			if !counted {
				t.Errorf("stores closed before the goroutines were counted")
			}
			closed = true
		}
	}
	if !counted || !closed {
		t.Errorf("the log lacks the shutdown's goroutine count (%v) or \"stores closed\" (%v)", counted, closed)
	}
}
