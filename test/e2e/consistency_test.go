package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// An overwrite is atomic: concurrent readers see one whole version, with
// the ETag of that version, never a mix of two.
func TestAtomicOverwrite(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "atomic")
	a := srv.sdk(c)
	mkBucket(t, a, "atomic")
	const versions = 150
	version := func(v int) []byte {
		// Sizes differ so that a torn read also shows in the length.
		return pattern(fmt.Sprintf("atomic#%d", v), 20_000+(v%7)*37_000)
	}
	byETag := map[string]int{}
	for v := range versions {
		byETag[quotedETag(version(v))] = v
	}
	putBytes(t, a, "atomic", "hot", version(0))

	var (
		stop  atomic.Bool
		reads atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				out, err := a.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("atomic"), Key: aws.String("hot")})
				if err != nil {
					fail("GET during overwrites: %v", err)
					return
				}
				got, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					fail("reading during overwrites: %v", err)
					return
				}
				v, ok := byETag[aws.ToString(out.ETag)]
				if !ok {
					fail("GET returned ETag %s of no version written", aws.ToString(out.ETag))
					continue
				}
				if !bytes.Equal(got, version(v)) {
					fail("GET with the ETag of v%d returned %d bytes that are not v%d (torn or mixed read)", v, len(got), v)
				}
				reads.Add(1)
			}
		})
	}
	for v := 1; v < versions; v++ {
		putBytes(t, a, "atomic", "hot", version(v))
	}
	stop.Store(true)
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	t.Logf("%d reads during %d overwrites", reads.Load(), versions-1)
	assertContent(t, a, "atomic", "hot", version(versions-1))
}
