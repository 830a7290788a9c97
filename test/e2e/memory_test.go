package e2e

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// genReader produces n deterministic bytes for seed without holding them,
// hashing them as they go. Its first Read calls started; later reads wait for
// barrier so that every upload is in flight at once.
type genReader struct {
	block   []byte
	n, off  int
	md5     hash.Hash
	started func()
	once    sync.Once
	barrier <-chan struct{}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	first := false
	g.once.Do(func() { first = true; g.started() })
	if !first {
		<-g.barrier
	}
	if len(p) > g.n-g.off {
		p = p[:g.n-g.off]
	}
	if first && len(p) > 32*1024 {
		p = p[:32*1024]
	}
	for i := range p {
		p[i] = g.block[(g.off+i)%len(g.block)]
	}
	g.off += len(p)
	g.md5.Write(p)
	return len(p), nil
}

func TestMemoryConcurrentUploads(t *testing.T) {
	const (
		uploads = 1000
		size    = 1 * mib
		limitMB = 300
	)
	// One tenant's 1,000 uploads at once: its cap on requests in flight
	// (--tenant-max-connections, 256 by default) would refuse most; the
	// test is about memory, so the cap is raised above them.
	srv := startServeArgs(t, "--tenant-max-connections", "2000")
	c := srv.createTenant(t, "mem")
	mkBucket(t, srv.sdk(c), "mem")

	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: uploads, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}

	barrier := make(chan struct{})
	var started sync.WaitGroup
	started.Add(uploads)
	go func() {
		// Every upload has sent its first bytes, or the server is not
		// taking them all at once; either way, let the bodies flow.
		done := make(chan struct{})
		go func() { started.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
		}
		close(barrier)
	}()

	sums := make([]string, uploads)
	errs := make(chan error, uploads)
	var wg sync.WaitGroup
	for i := range uploads {
		wg.Go(func() {
			key := fmt.Sprintf("obj-%04d", i)
			g := &genReader{block: pattern(key, 4093), n: size, md5: md5.New(), barrier: barrier}
			var once sync.Once
			g.started = func() { once.Do(started.Done) }
			req, err := http.NewRequest(http.MethodPut, srv.endpoint()+"/mem/"+key, nil)
			if err != nil {
				errs <- err
				once.Do(started.Done)
				return
			}
			req.ContentLength = size
			sign(t, req, c, "UNSIGNED-PAYLOAD", time.Now())
			req.Body = io.NopCloser(g)
			resp, err := client.Do(req)
			once.Do(started.Done)
			if err != nil {
				errs <- fmt.Errorf("PUT %s: %w", key, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("PUT %s: status %d", key, resp.StatusCode)
				return
			}
			if got := resp.Header.Get("ETag"); got != `"`+hex.EncodeToString(g.md5.Sum(nil))+`"` {
				errs <- fmt.Errorf("PUT %s: ETag %s; want MD5 of the body", key, got)
			}
			sums[i] = `"` + hex.EncodeToString(g.md5.Sum(nil)) + `"`
		})
	}
	wg.Wait()
	close(errs)
	nerr := 0
	for err := range errs {
		if nerr < 10 {
			t.Error(err)
		}
		nerr++
	}
	if nerr > 0 {
		t.Errorf("%d of %d uploads failed", nerr, uploads)
	}

	hwm, err := procStatusKB(srv.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server peak RSS (VmHWM) after %d concurrent 1 MiB uploads: %d MB", uploads, hwm/1024)
	if hwm/1024 >= limitMB {
		t.Errorf("server peak RSS %d MB; want < %d MB: uploads are being buffered in memory", hwm/1024, limitMB)
	}

	// Every object landed whole.
	cl := srv.sdk(c)
	got := map[string]string{}
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String("mem")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if aws.ToInt64(o.Size) != size {
				t.Errorf("%s: size %d; want %d", aws.ToString(o.Key), aws.ToInt64(o.Size), size)
			}
			got[aws.ToString(o.Key)] = aws.ToString(o.ETag)
		}
	}
	for i, sum := range sums {
		key := fmt.Sprintf("obj-%04d", i)
		if sum != "" && got[key] != sum {
			t.Errorf("%s: listed ETag %q; want %s", key, got[key], sum)
		}
	}
	if nerr == 0 && len(got) != uploads {
		t.Errorf("listed %d objects; want %d", len(got), uploads)
	}
}
