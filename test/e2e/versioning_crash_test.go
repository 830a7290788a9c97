package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// vop is one versioned write of a key: a PUT of content v, or (v == 0) a
// DELETE that wrote a delete marker; id is the version id answered.
type vop struct {
	v  int
	id string
}

// vkey is one key, written by exactly one goroutine so its versions are
// ordered: what was acknowledged, oldest first, and the write that was
// sent when the server died (it may or may not have landed).
type vkey struct {
	key      string
	acked    []vop
	inflight *vop
	last     int
}

// listedVersion is one entry of ListObjectVersions, a version or a
// delete marker.
type listedVersion struct {
	id             string
	marker, latest bool
	size           int64
}

// TestCrashKill9Versioned: kill -9 during concurrent versioned PUTs and
// DELETEs; afterwards every acknowledged version and delete marker is
// listed, in order, newest first, and every version reads back by its id.
func TestCrashKill9Versioned(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "vcrash")
	cl := srv.sdk(c)
	mkBucket(t, cl, "vcrash")
	if _, err := cl.PutBucketVersioning(ctxT(t), &s3.PutBucketVersioningInput{Bucket: aws.String("vcrash"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	const writers, keysPerW = 32, 2
	keys := make([][]vkey, writers)
	for w := range keys {
		keys[w] = make([]vkey, keysPerW)
		for k := range keys[w] {
			keys[w][k].key = fmt.Sprintf("w%02d/k%d", w, k)
		}
	}

	tr := &http.Transport{MaxIdleConnsPerHost: writers}
	wcl := srv.sdk(c, func(o *s3.Options) { o.HTTPClient = &http.Client{Timeout: 60 * time.Second, Transport: tr} })
	var (
		killed      atomic.Bool
		acks        atomic.Int64
		mu          sync.Mutex
		errs        []error
		wg          sync.WaitGroup
		ctx, cancel = context.WithCancel(context.Background())
	)
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for ctx.Err() == nil {
				st := &keys[w][rng.IntN(keysPerW)]
				op := vop{}
				if rng.IntN(4) != 0 || st.last == 0 {
					st.last++
					op.v = st.last
				}
				st.inflight = &op
				var err error
				if op.v > 0 {
					var out *s3.PutObjectOutput
					out, err = wcl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vcrash"), Key: aws.String(st.key),
						Body: bytes.NewReader(crashContent(st.key, op.v))})
					if err == nil {
						op.id = aws.ToString(out.VersionId)
					}
				} else {
					var out *s3.DeleteObjectOutput
					out, err = wcl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vcrash"), Key: aws.String(st.key)})
					if err == nil {
						op.id = aws.ToString(out.VersionId)
						if !aws.ToBool(out.DeleteMarker) {
							err = fmt.Errorf("DELETE wrote no delete marker")
						}
					}
				}
				if err != nil {
					if !killed.Load() {
						mu.Lock()
						errs = append(errs, fmt.Errorf("%s op v%d before the kill: %w", st.key, op.v, err))
						mu.Unlock()
					}
					return // st.inflight stays: it may or may not have landed
				}
				st.acked, st.inflight = append(st.acked, op), nil
				acks.Add(1)
			}
		})
	}
	start := time.Now()
	for time.Since(start) < 3*time.Second || (acks.Load() < 4*writers*keysPerW && time.Since(start) < 60*time.Second) {
		time.Sleep(50 * time.Millisecond)
		if srv.exited() {
			break
		}
	}
	killed.Store(true)
	srv.kill9()
	cancel()
	wg.Wait()
	tr.CloseIdleConnections()
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("%d acknowledged versioned writes before kill -9", acks.Load())
	if acks.Load() < writers {
		t.Fatalf("only %d writes acknowledged; the test proves little", acks.Load())
	}

	srv = startServerWithToken(t, dataDir, srv.token)
	cl = srv.sdk(c)
	listed := map[string][]listedVersion{}
	p := s3.NewListObjectVersionsPaginator(cl, &s3.ListObjectVersionsInput{Bucket: aws.String("vcrash"), MaxKeys: aws.Int32(97)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctxT(t))
		if err != nil {
			t.Fatalf("listing versions after restart: %v", err)
		}
		// A page holds Versions and DeleteMarkers apart; their order is
		// rebuilt from the listing's rule, newest first per key, by
		// merging on the ids (which sort newest first).
		for _, v := range page.Versions {
			k := aws.ToString(v.Key)
			listed[k] = append(listed[k], listedVersion{id: aws.ToString(v.VersionId), latest: aws.ToBool(v.IsLatest), size: aws.ToInt64(v.Size)})
		}
		for _, d := range page.DeleteMarkers {
			k := aws.ToString(d.Key)
			listed[k] = append(listed[k], listedVersion{id: aws.ToString(d.VersionId), marker: true, latest: aws.ToBool(d.IsLatest)})
		}
	}
	for w := range keys {
		for _, st := range keys[w] {
			got := listed[st.key]
			// Facet's version ids sort newest first.
			slices.SortFunc(got, func(a, b listedVersion) int { return strings.Compare(a.id, b.id) })
			want := st.acked
			if len(got) == len(want)+1 && st.inflight != nil {
				// The write in flight landed: it is the newest.
				in := *st.inflight
				in.id = got[0].id
				if got[0].marker != (in.v == 0) {
					t.Errorf("%s: newest listed is marker=%v; the in-flight write was v%d", st.key, got[0].marker, in.v)
				}
				want = append(append([]vop{}, want...), in)
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d versions listed after restart; %d acknowledged (in flight: %v)", st.key, len(got), len(st.acked), st.inflight != nil)
				continue
			}
			for i, e := range got {
				op := want[len(want)-1-i]
				if e.id != op.id || e.marker != (op.v == 0) || e.latest != (i == 0) {
					t.Errorf("%s: listed #%d = %+v; want %+v (latest %v)", st.key, i, e, op, i == 0)
					continue
				}
				if op.v == 0 {
					continue
				}
				body := crashContent(st.key, op.v)
				if e.size != int64(len(body)) {
					t.Errorf("%s version %s: listed size %d, wrote %d", st.key, e.id, e.size, len(body))
				}
				out, err := cl.GetObject(ctxT(t), &s3.GetObjectInput{Bucket: aws.String("vcrash"), Key: aws.String(st.key), VersionId: aws.String(e.id)})
				if err != nil {
					t.Errorf("%s version %s: %v", st.key, e.id, err)
					continue
				}
				b, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil || !bytes.Equal(b, body) {
					t.Errorf("%s version %s: read %d bytes (%v); want v%d's %d", st.key, e.id, len(b), err, op.v, len(body))
				}
			}
			if len(got) > 0 && got[0].marker {
				_, err := cl.GetObject(ctxT(t), &s3.GetObjectInput{Bucket: aws.String("vcrash"), Key: aws.String(st.key)})
				wantErr(t, st.key+" under a delete marker", err, "NoSuchKey", http.StatusNotFound)
			}
		}
	}
	waitNoTempFiles(t, dataDir)
}
