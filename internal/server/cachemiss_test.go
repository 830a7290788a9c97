package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// TestCachedGetBackendCalls: over a remote store, in a bucket whose only
// filter is caching, a GET of an object the cache holds nothing of is one
// backend GET (admitted on the way), a hit is one HEAD (the coherence
// check) and no GET, a range GET reads the metadata first, and after an
// overwrite the new bytes are read, admitted and served from the cache.
func TestCachedGetBackendCalls(t *testing.T) {
	remote := s3test.Start(t)
	backendURL, log := startCountingBackend(t, remote, "cm")
	client, _, admin := startWith(t, func(o *Options) { o.BackendURL = backendURL })
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket1")}); err != nil {
		t.Fatal(err)
	}
	addPolicy(t, admin, "FOR BUCKET tenant1/bucket1 DO SET caching WITH admit=get")
	put := func(body []byte) {
		t.Helper()
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("obj"), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		log.take()
	}
	// get returns the methods the GET sent the backend for the object.
	get := func(want []byte, rng string) []string {
		t.Helper()
		in := &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("obj")}
		if rng != "" {
			in.Range = aws.String(rng)
		}
		out, err := client.GetObject(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("GET %q: %d bytes, want %d (%v)", rng, len(got), len(want), err)
		}
		var methods []string
		for _, r := range log.take() {
			if strings.HasSuffix(r, "/cm/bucket1/obj") {
				methods = append(methods, strings.Fields(r)[0])
			}
		}
		return methods
	}
	// untilHit GETs until one is served from the cache (fills commit in
	// the background after the response).
	untilHit := func(want []byte) {
		t.Helper()
		for i := 0; ; i++ {
			m := get(want, "")
			if slices.Equal(m, []string{"HEAD"}) {
				return
			}
			if i == 200 {
				t.Fatalf("no hit after %d GETs (last sent %v)", i, m)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	v1 := bytes.Repeat([]byte("first "), 2000)
	put(v1)
	if m := get(v1[100:200], "bytes=100-199"); !slices.Equal(m, []string{"HEAD", "GET"}) {
		t.Errorf("a range GET sent %v, want HEAD GET (ranges read the metadata first)", m)
	}
	if m := get(v1, ""); !slices.Equal(m, []string{"GET"}) {
		t.Errorf("a GET the cache cannot hit sent %v, want one GET", m)
	}
	untilHit(v1)
	v2 := bytes.Repeat([]byte("second "), 1500)
	put(v2)
	// The overwrite through this gateway dropped its entry (other
	// gateways drop theirs on the bus, or find it stale by the HEAD).
	if m := get(v2, ""); !slices.Equal(m, []string{"GET"}) {
		t.Errorf("a GET after an overwrite sent %v, want one GET", m)
	}
	untilHit(v2)
}

// addPolicy adds a policy through the admin API at admin (token testTok);
// it is in force when the call returns.
func addPolicy(t *testing.T, admin, text string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+admin+"/api/v1/policies", strings.NewReader(text))
	req.Header.Set("Authorization", "Bearer "+testTok)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("policy %q: %s", text, resp.Status)
	}
}
