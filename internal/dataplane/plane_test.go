package dataplane

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

type fixedPipelines Pipeline

func (p fixedPipelines) ForPut(*filter.Request) Pipeline { return Pipeline(p) }

// payloadOf is a body as a front end hands it on: its seal sets the
// size and ETag of what it read.
func payloadOf(b []byte) func() (Payload, error) {
	return func() (Payload, error) {
		h := md5.New()
		r := io.TeeReader(bytes.NewReader(b), h)
		return Payload{Body: r, Seal: func(m *storage.ObjectMeta) error {
			m.Size, m.ETag = int64(len(b)), hex.EncodeToString(h.Sum(nil))
			return nil
		}}, nil
	}
}

func readBody(t *testing.T, res GetResult) []byte {
	t.Helper()
	if res.Body == nil {
		t.Fatal("no body")
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Length >= 0 && int64(len(b)) != res.Length {
		t.Fatalf("body %d bytes, length says %d", len(b), res.Length)
	}
	return b
}

func code(err error) string {
	if err == nil {
		return ""
	}
	return s3err.As(err).Code.Name
}

// TestPlaneEntryPoints drives the entry points a front end calls over a
// filesystem store, with reversible filters on PUT: what a GET answers
// (whole, range, unsatisfiable range, 304, HEAD), conditional PUT, copy
// and delete.
func TestPlaneEntryPoints(t *testing.T) {
	ctx := context.Background()
	reg := testRegistry()
	st := storeWithBucket(t)
	p := New(Config{Backend: st, Pipelines: fixedPipelines(pipelineOf(t, reg, "xa", "xb")), Decoders: Decoders{Registry: reg}})
	plain := make([]byte, 50_000)
	for i := range plain {
		plain[i] = byte(rand.IntN(256))
	}
	tg := Target{Tenant: "t", Bucket: "bkt", Key: "k"}
	info, err := p.Put(ctx, PutRequest{Target: tg, Size: int64(len(plain)), Payload: payloadOf(plain)})
	if err != nil {
		t.Fatal(err)
	}
	if !Transformed(info.Meta) {
		t.Fatalf("stored without its plan: %v", info.Meta.System)
	}
	etag := info.Meta.ETag
	if _, err := p.Put(ctx, PutRequest{Target: tg, Size: 1, IfNoneMatch: "*", Payload: payloadOf([]byte("x"))}); code(err) != "PreconditionFailed" {
		t.Fatalf("If-None-Match: * over an object: %v", err)
	}

	res, err := p.Get(ctx, GetRequest{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != GetObject || !res.Whole || res.Partial != nil || !bytes.Equal(readBody(t, res), plain) {
		t.Fatalf("whole GET: %+v", res)
	}
	res, err = p.Get(ctx, GetRequest{Target: tg, Range: "bytes=10-19"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Whole || res.Partial == nil || *res.Partial != (ContentRange{First: 10, Last: 19, Total: int64(len(plain))}) || !bytes.Equal(readBody(t, res), plain[10:20]) {
		t.Fatalf("range GET: %+v", res)
	}
	res, err = p.Get(ctx, GetRequest{Target: tg, Range: "bytes=60000-"})
	if code(err) != "InvalidRange" || !res.Unsatisfiable || res.Info.Meta.Size != int64(len(plain)) || res.Body != nil {
		t.Fatalf("unsatisfiable range: %+v, %v", res, err)
	}
	res, err = p.Get(ctx, GetRequest{Target: tg, Conditions: Conditions{IfNoneMatch: `"` + etag + `"`}})
	if s3err.As(err).Code.Status != http.StatusNotModified || res.Info.Meta.ETag != etag || res.Body != nil {
		t.Fatalf("revalidation: %+v, %v", res, err)
	}
	res, err = p.Get(ctx, GetRequest{Target: tg, Head: true})
	if err != nil || res.Body != nil || res.Length != int64(len(plain)) {
		t.Fatalf("HEAD: %+v, %v", res, err)
	}

	dst := tg
	dst.Key = "copy"
	if _, err := p.Copy(ctx, CopyRequest{Target: dst, Source: CopySource{Bucket: "bkt", Key: "k", Conditions: Conditions{IfNoneMatch: `"` + etag + `"`}}}); code(err) != "PreconditionFailed" {
		t.Fatalf("copy-source condition: %v", err)
	}
	if _, err := p.Copy(ctx, CopyRequest{Target: dst, Source: CopySource{Bucket: "bkt", Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	if res, err = p.Get(ctx, GetRequest{Target: dst}); err != nil || !bytes.Equal(readBody(t, res), plain) {
		t.Fatalf("copy reads back: %v", err)
	}

	if _, err := p.Delete(ctx, tg); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, GetRequest{Target: tg}); code(err) != "NoSuchKey" {
		t.Fatalf("GET after DELETE: %v", err)
	}
	if _, err := p.Delete(ctx, tg); err != nil {
		t.Fatalf("DELETE of a missing object: %v", err)
	}
}

// TestWaitCoversBackgroundWork: work a request leaves behind (a cache fill
// committing) is over when Wait returns, so the owner may close the cache.
func TestWaitCoversBackgroundWork(t *testing.T) {
	p := New(Config{})
	var done atomic.Bool
	release := make(chan struct{})
	p.goBackground(func() { <-release; done.Store(true) })
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while background work was running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-waited
	if !done.Load() {
		t.Fatal("Wait returned before the work finished")
	}
}
