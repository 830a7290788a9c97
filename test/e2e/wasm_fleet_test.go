package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// wasmModule is a module built by `make wasm-examples` (bin/wasm, or
// $FACET_WASM_DIR).
func wasmModule(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("FACET_WASM_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "wasm")
	}
	p, err := filepath.Abs(filepath.Join(dir, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: run `make wasm-examples` (make test does) or set FACET_WASM_DIR", err)
	}
	return p
}

// TestWasmFleet: a WebAssembly filter registered through one gateway of a
// fleet (Redis, NATS, versitygw, a controller) runs on the other without a
// restart, and an update through the second gateway leaves objects written
// by version 1 readable everywhere, undone by version 1's module.
func TestWasmFleet(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 1})
	gw1, gw2 := c.gw[0], c.gw[1]
	tenant := "wasm" + randHex(3)
	cr := gw1.createTenant(t, tenant)
	cl1, cl2 := gw1.sdk(cr), gw2.sdk(cr)
	bucket := "wasm-" + randHex(4)
	mkBucket(t, cl1, bucket)

	name := "xor_" + randHex(3)
	out, err := gw1.ctl(t, "filter", "create", name, "--wasm", wasmModule(t, "xor"), "--methods", "PUT,GET",
		"--stages", "gateway,storage", "--reversible", "--param", "key:string:k", "--owner", tenant, "-o", "json")
	if err != nil {
		t.Fatalf("filter create: %v %s", err, out)
	}
	pol := gw1.policyAdd(t, fmt.Sprintf("FOR BUCKET %s/%s DO SET %s WITH key=fleet-key", tenant, bucket, name))

	plain := bytes.Repeat([]byte("written through gateway 2, obfuscated by a module registered on gateway 1. "), 2000)
	key := []byte("fleet-key")
	xored := make([]byte, len(plain))
	for i, b := range plain {
		xored[i] = b ^ key[i%len(key)]
	}
	took := eventually(t, 30*time.Second, "gateway 2 runs the filter registered on gateway 1", func() error {
		putBytes(t, cl2, bucket, "v1", plain)
		if got := c.backendObject(t, "fleet/"+bucket+"/v1"); !bytes.Equal(got, xored) {
			return fmt.Errorf("the backend holds %d bytes, not the XORed object", len(got))
		}
		return nil
	})
	t.Logf("gateway 2 ran the new filter %v after gateway 1's calls returned", took.Round(time.Millisecond))
	if got, _ := getBytes(t, cl1, bucket, "v1"); !bytes.Equal(got, plain) {
		t.Fatal("GET through gateway 1 did not undo the filter")
	}

	// Version 2 (a plain copy) registered through gateway 2.
	out, err = gw2.ctl(t, "filter", "update", name, "--wasm", wasmModule(t, "noop"), "-o", "json")
	if err != nil {
		t.Fatalf("filter update: %v %s", err, out)
	}
	var up struct{ Version int }
	if err := json.Unmarshal(out, &up); err != nil || up.Version != 2 {
		t.Fatalf("update answered %s", out)
	}
	eventually(t, 30*time.Second, "gateway 1 runs version 2", func() error {
		putBytes(t, cl1, bucket, "v2", plain)
		if got := c.backendObject(t, "fleet/"+bucket+"/v2"); !bytes.Equal(got, plain) {
			return fmt.Errorf("version 2 did not store the plain bytes")
		}
		return nil
	})
	for _, k := range []string{"v1", "v2"} {
		if got, _ := getBytes(t, cl1, bucket, k); !bytes.Equal(got, plain) {
			t.Fatalf("%s through gateway 1: not the written bytes", k)
		}
		if got, _ := getBytes(t, cl2, bucket, k); !bytes.Equal(got, plain) {
			t.Fatalf("%s through gateway 2: not the written bytes", k)
		}
	}

	// Deleted through gateway 1 (its policy first, and --force: objects
	// written through a reversible filter cannot be read back without
	// it): gateway 2 drops it too. Its objects no longer read there,
	// and a new object is stored as sent.
	if out, err := gw1.ctl(t, "policy", "delete", pol[0].ID); err != nil {
		t.Fatalf("policy delete: %v %s", err, out)
	}
	if out, err := gw1.ctl(t, "filter", "delete", name, "--force"); err != nil {
		t.Fatalf("filter delete: %v %s", err, out)
	}
	eventually(t, 30*time.Second, "gateway 2 drops the deleted filter", func() error {
		out, err := cl2.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("v1")})
		if err == nil {
			out.Body.Close()
			return fmt.Errorf("v1 still reads through gateway 2")
		}
		// An internal error (clients retry it: a node may not have loaded
		// a new filter yet) whose message names the filter.
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "InternalError" || !strings.Contains(ae.ErrorMessage(), `filter "`+name+`"`) {
			t.Fatalf("v1 through gateway 2 after the deletion: %v", err)
		}
		return nil
	})
	putBytes(t, cl2, bucket, "v3", plain)
	if got := c.backendObject(t, "fleet/"+bucket+"/v3"); !bytes.Equal(got, plain) {
		t.Fatal("a PUT after the deletion did not store the bytes as sent")
	}
	if out, err := gw2.ctl(t, "filter", "show", name); err == nil {
		t.Fatalf("filter show after the deletion: %s", out)
	}
}

// TestWasmGatewayCompilationCache: a stateless gateway keeps compiled
// modules in its compilation cache directory (a cache, not state), and a
// gateway started again on it loads the module rather than compiling it:
// counted by facet_wasm_modules_total{source}, not timed.
func TestWasmGatewayCompilationCache(t *testing.T) {
	cacheDir := t.TempDir()
	c := startCluster(t, clusterOptions{Env: []string{"FACET_WASM_CACHE_DIR=" + cacheDir}})
	gw := c.gw[0]
	tenant := "wcache" + randHex(3)
	cr := gw.createTenant(t, tenant)
	bucket := "wcache-" + randHex(4)
	mkBucket(t, gw.sdk(cr), bucket)
	name := "up_" + randHex(3)
	if out, err := gw.ctl(t, "filter", "create", name, "--wasm", wasmModule(t, "uppercase"), "--methods", "GET",
		"--stages", "gateway", "--owner", tenant, "-o", "json"); err != nil {
		t.Fatalf("filter create: %v %s", err, out)
	}
	gw.policyAdd(t, fmt.Sprintf("FOR BUCKET %s/%s DO SET %s", tenant, bucket, name))
	putBytes(t, gw.sdk(cr), bucket, "k", []byte("shout this"))
	if got, _ := getBytes(t, gw.sdk(cr), bucket, "k"); string(got) != "SHOUT THIS" {
		t.Fatalf("GET through the uppercase filter: %q", got)
	}
	compiled := func(s *server, source string) float64 {
		v, ok := s.metricValue(t, fmt.Sprintf(`facet_wasm_modules_total{source=%q}`, source))
		if !ok {
			t.Fatalf("no facet_wasm_modules_total{source=%q} in /metrics", source)
		}
		return v
	}
	if n := compiled(gw, "compiled"); n < 1 {
		t.Fatalf("the first gateway compiled %v modules", n)
	}
	entries := 0
	_ = filepath.WalkDir(cacheDir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			entries++
		}
		return nil
	})
	if entries == 0 {
		t.Fatalf("nothing was written into the compilation cache %s", cacheDir)
	}

	// The gateway goes; another starts on the same host (same cache).
	if _, err := gw.terminate(30 * time.Second); err != nil {
		t.Fatalf("stopping the gateway: %v", err)
	}
	gw2 := c.addGateway(t)
	if got, _ := getBytes(t, gw2.sdk(cr), bucket, "k"); string(got) != "SHOUT THIS" {
		t.Fatalf("GET through the restarted gateway: %q", got)
	}
	if n := compiled(gw2, "compiled"); n != 0 {
		t.Fatalf("the restarted gateway compiled %v modules; want all from its cache", n)
	}
	if n := compiled(gw2, "cache"); n < 1 {
		t.Fatalf("the restarted gateway loaded %v modules from its cache", n)
	}
}
