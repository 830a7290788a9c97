package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// A fleet (issue 9): redis-server, `facet bus`, versitygw as the object
// store, two `facet controller`s and two stateless `facet gateway`s, every
// one a separate process. One test, in phases, so the fleet starts once.

// backendSize is the size of the object the fleet stored for bucket/key,
// read directly from the backend.
func (c *cluster) backendSize(t *testing.T, bucket, key string) int64 {
	t.Helper()
	k := "fleet/" + bucket + "/" + key
	out, err := c.backend.Client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: &c.backend.Bucket, Key: &k})
	if err != nil {
		t.Fatalf("backend HEAD %s: %v", k, err)
	}
	return aws.ToInt64(out.ContentLength)
}

// eventually retries check until it returns nil, failing after limit. It
// asserts that something happens, not how fast.
func eventually(t *testing.T, limit time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := check()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: still not after %v: %v", what, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCluster(t *testing.T) {
	root := t
	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 2})
	gw1, gw2 := c.gw[0], c.gw[1]
	c.controllers[0].waitLease("held")

	tenant := "fleet" + randHex(3)
	cr := gw1.createTenant(t, tenant)
	cl1, cl2 := gw1.sdk(cr), gw2.sdk(cr)
	bucket := "fleet-" + randHex(4)
	mkBucket(t, cl2, bucket) // created on gateway 2, known to gateway 1 by the shared store

	t.Run("policy set on gateway 1 applies to writes through gateway 2", func(t *testing.T) {
		before := gw2.policyVersion(t)
		gw1.policyAdd(t, "FOR TENANT "+tenant+" DO SET compression")
		took := eventually(t, 30*time.Second, "gateway 2 loads the policy table gateway 1 changed", func() error {
			if v := gw2.policyVersion(t); v <= before {
				return fmt.Errorf("gateway 2 policy table version %v", v)
			}
			return nil
		})
		t.Logf("gateway 2 had the new policy table %v after gateway 1's admin call returned", took.Round(time.Millisecond))
		body := logText("fleet", 256<<10)
		putBytes(t, cl2, bucket, "doc.log", body)
		if stored := c.backendSize(t, bucket, "doc.log"); stored >= int64(len(body)) {
			t.Fatalf("the backend holds %d bytes for a %d-byte compressible object: not compressed", stored, len(body))
		}
		for i, cl := range []*s3.Client{cl1, cl2} {
			if got, _ := getBytes(t, cl, bucket, "doc.log"); !bytes.Equal(got, body) {
				t.Fatalf("GET through gateway %d returned %d bytes, not what was written", i+1, len(got))
			}
		}
	})

	t.Run("a multipart upload spread over both gateways", func(t *testing.T) {
		// Behind a load balancer the calls of one upload reach different
		// gateways: the upload lives in the shared stores, not in one
		// gateway. The parts compress below 5 MiB (the policy above).
		key := "spread.log"
		cu, err := cl1.CreateMultipartUpload(t.Context(), &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		var done []types.CompletedPart
		for i, size := range []int{5 << 20, 6 << 20, 100 << 10} {
			part := logText(fmt.Sprintf("spread%d", i), size)
			want = append(want, part...)
			n := int32(i + 1)
			up, err := []*s3.Client{cl2, cl1, cl2}[i].UploadPart(t.Context(), &s3.UploadPartInput{Bucket: &bucket, Key: &key,
				UploadId: cu.UploadId, PartNumber: &n, Body: bytes.NewReader(part)})
			if err != nil {
				t.Fatalf("part %d: %v", n, err)
			}
			done = append(done, types.CompletedPart{PartNumber: &n, ETag: up.ETag})
		}
		lp, err := cl1.ListParts(t.Context(), &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: cu.UploadId})
		if err != nil || len(lp.Parts) != 3 {
			t.Fatalf("gateway 1 lists the parts uploaded through both: %+v, %v", lp, err)
		}
		if _, err := cl2.CompleteMultipartUpload(t.Context(), &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key,
			UploadId: cu.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
			t.Fatalf("complete through gateway 2: %v", err)
		}
		if stored := c.backendSize(t, bucket, key); stored >= int64(len(want))/2 {
			t.Fatalf("the backend holds %d bytes of %d: not compressed", stored, len(want))
		}
		for i, cl := range []*s3.Client{cl1, cl2} {
			if got, _ := getBytes(t, cl, bucket, key); !bytes.Equal(got, want) {
				t.Fatalf("GET through gateway %d returned %d bytes, not the %d written", i+1, len(got), len(want))
			}
		}
	})

	t.Run("a key revoked on gateway 1 is refused by gateway 2", func(t *testing.T) {
		var extra creds
		out, err := gw1.ctl(t, "key", "create", tenant, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &extra); err != nil {
			t.Fatal(err)
		}
		extra.Tenant = tenant
		cx := gw2.sdk(extra)
		if _, err := cx.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: &bucket}); err != nil {
			t.Fatalf("a new key does not work on gateway 2: %v", err)
		}
		if _, err := gw1.ctl(t, "key", "revoke", tenant, extra.AccessKey); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "gateway 2 refuses the revoked key", func() error {
			_, err := cx.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: &bucket})
			if err == nil {
				return errors.New("HEAD bucket still succeeds")
			}
			return nil
		})
	})

	t.Run("the standby controller takes over from a killed one and a dynamic policy triggers", func(t *testing.T) {
		dyn := "dyn" + randHex(3)
		dcr := gw1.createTenant(t, dyn)
		dcl := gw2.sdk(dcr)
		dbucket := "dyn-" + randHex(4)
		mkBucket(t, dcl, dbucket)
		// The dynamic policy exists before the kill: the holder runs its
		// controller, and the one that takes over must run it on.
		pid := gw1.policyAdd(t, "FOR TENANT "+dyn+" WHEN put_ops > 3 DO SET compression TRANSIENT")[0].ID
		runs := func(cp *controllerProc) bool {
			st, err := cp.status()
			return err == nil && slices.ContainsFunc(st.Controllers, func(c struct {
				ID string `json:"id"`
			}) bool {
				return c.ID == "automation/"+pid
			})
		}
		var active *controllerProc
		eventually(t, 30*time.Second, "the lease holder runs the dynamic policy's controller", func() error {
			if active = c.activeController(); active == nil || !runs(active) {
				return errors.New("not yet")
			}
			return nil
		})
		active.kill9()
		var next *controllerProc
		eventually(t, 30*time.Second, "a standby controller takes the lease", func() error {
			if next = c.activeController(); next == nil || next == active {
				return errors.New("no new holder")
			}
			return nil
		})
		body := func(n int) []byte { return logText(fmt.Sprintf("d%d", n), 64<<10) }
		n := 0
		eventually(t, 60*time.Second, "the dynamic policy compresses new objects through gateway 2", func() error {
			// ~6 PUT/s for a second, then look at what the backend got.
			for end := time.Now().Add(time.Second); time.Now().Before(end); {
				n++
				putBytes(t, dcl, dbucket, fmt.Sprintf("k%05d", n), body(n))
				time.Sleep(150 * time.Millisecond)
			}
			if stored := c.backendSize(t, dbucket, fmt.Sprintf("k%05d", n)); stored >= int64(len(body(n))) {
				return fmt.Errorf("latest object stored in %d bytes (policy %s)", stored, gw1.policyByID(t, pid).State)
			}
			return nil
		})
		if !runs(next) {
			st, _ := next.status()
			t.Errorf("the new lease holder does not run the dynamic policy's controller (automation/%s): %+v", pid, st)
		}
	})

	t.Run("redis down for 10 s under load: no failed request, recovery after", func(t *testing.T) {
		// Existing objects to read, existing bucket to write.
		for i := range 8 {
			putBytes(t, cl1, bucket, fmt.Sprintf("warm-%d", i), logText(fmt.Sprintf("w%d", i), 8<<10))
		}
		load := startLoad(t, []*s3.Client{cl1, cl2}, bucket)
		time.Sleep(time.Second)
		c.redis.stop()
		downAt := time.Now()
		eventually(t, 30*time.Second, "gateway 1 reports the store down in /metrics", func() error {
			if v, ok := gw1.metricValue(t, "facet_meta_up"); !ok || v != 0 {
				return fmt.Errorf("facet_meta_up %v (present %v)", v, ok)
			}
			return nil
		})
		during := load.ok.Load()
		time.Sleep(10*time.Second - time.Since(downAt))
		during = load.ok.Load() - during
		c.redis.restart()
		eventually(t, 30*time.Second, "both gateways report the store up again", func() error {
			for i, g := range c.gw {
				if v, ok := g.metricValue(t, "facet_meta_up"); !ok || v != 1 {
					return fmt.Errorf("gateway %d facet_meta_up %v", i+1, v)
				}
			}
			return nil
		})
		time.Sleep(500 * time.Millisecond)
		total := load.stop(t)
		if during == 0 {
			t.Fatal("no request was served while redis was down")
		}
		t.Logf("%d requests served, %d of them while redis was down, none failed", total, during)
		for i, g := range c.gw {
			if !bytes.Contains(g.logBytes(), []byte("metadata store unreachable")) || bytes.Count(g.logBytes(), []byte("metadata store unreachable")) != 1 {
				t.Errorf("gateway %d logged the outage %d times; want once", i+1, bytes.Count(g.logBytes(), []byte("metadata store unreachable")))
			}
		}
		// Recovery: new metadata works again.
		nb := "after-" + randHex(4)
		mkBucket(t, cl1, nb)
		putBytes(t, cl2, nb, "x", []byte("x"))
	})

	t.Run("bus down: gateways serve on, a key revoked meanwhile is refused once it returns", func(t *testing.T) {
		extra := creds{Tenant: tenant}
		out, err := gw1.ctl(t, "key", "create", tenant, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &extra); err != nil {
			t.Fatal(err)
		}
		cx := gw2.sdk(extra)
		if _, err := cx.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: &bucket}); err != nil {
			t.Fatalf("a new key does not work on gateway 2: %v", err)
		}
		load := startLoad(t, []*s3.Client{cl1, cl2}, bucket)
		busAddr := c.bus.addr
		c.bus.kill9()
		eventually(t, 30*time.Second, "gateway 2 reports the bus down", func() error {
			if v, _ := gw2.metricValue(t, "facet_bus_up"); v != 0 {
				return fmt.Errorf("facet_bus_up %v", v)
			}
			return nil
		})
		// The invalidation of this revocation is lost with the bus.
		if _, err := gw1.ctl(t, "key", "revoke", tenant, extra.AccessKey); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		c.bus = startBus(root, busAddr)
		eventually(t, 30*time.Second, "both gateways report the bus up again", func() error {
			for i, g := range c.gw {
				if v, _ := g.metricValue(t, "facet_bus_up"); v != 1 {
					return fmt.Errorf("gateway %d facet_bus_up %v", i+1, v)
				}
			}
			return nil
		})
		eventually(t, 30*time.Second, "gateway 2 refuses the key revoked while the bus was down", func() error {
			if _, err := cx.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: &bucket}); err == nil {
				return errors.New("HEAD bucket still succeeds")
			}
			return nil
		})
		t.Logf("%d requests served across the bus outage, none failed", load.stop(t))
	})
}

// load is a steady read/write load on an existing bucket: GETs of
// warm-0..7 and PUTs of new keys, from one worker per client pair slot.
type load struct {
	stopc    context.CancelFunc
	wg       sync.WaitGroup
	ok       atomic.Int64
	failed   atomic.Int64
	firstErr atomic.Value
}

func startLoad(t *testing.T, clients []*s3.Client, bucket string) *load {
	for i := range 8 {
		putBytes(t, clients[0], bucket, fmt.Sprintf("warm-%d", i), logText(fmt.Sprintf("w%d", i), 8<<10))
	}
	ctx, stop := context.WithCancel(t.Context())
	l := &load{stopc: stop}
	for w := range 4 {
		cl := clients[w%len(clients)]
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				var err error
				if i%2 == 0 {
					key := fmt.Sprintf("warm-%d", i%8)
					var out *s3.GetObjectOutput
					out, err = cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
					if err == nil {
						_, err = bytesRead(out)
					}
				} else {
					key := fmt.Sprintf("load-%d-%d", w, i)
					_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(logText(key, 4<<10))})
				}
				switch {
				case err == nil:
					l.ok.Add(1)
				case ctx.Err() != nil:
				default:
					l.failed.Add(1)
					l.firstErr.CompareAndSwap(nil, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Second)
	return l
}

// stop ends the load, fails the test if any request failed, and returns
// how many succeeded.
func (l *load) stop(t *testing.T) int64 {
	t.Helper()
	l.stopc()
	l.wg.Wait()
	if n := l.failed.Load(); n != 0 {
		t.Fatalf("%d of %d requests failed; first: %v", n, n+l.ok.Load(), l.firstErr.Load())
	}
	return l.ok.Load()
}

func bytesRead(out *s3.GetObjectOutput) (int64, error) {
	defer out.Body.Close()
	var b bytes.Buffer
	return b.ReadFrom(out.Body)
}
