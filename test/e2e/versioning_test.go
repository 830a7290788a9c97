package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// Versions keep their own reverse plan: one written under a compression
// policy, one under encryption and one with no policy all read back, whole,
// by range and through select, each decoded by what was recorded with it.
func TestVersionsEachDecodeByOwnPlan(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "t1")
	cl := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, cl, "vbkt")
	if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vbkt"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	csv := func(tag string) []byte {
		var b bytes.Buffer
		b.WriteString("id,tag\n")
		for i := range 20000 {
			fmt.Fprintf(&b, "%d,%s\n", i, tag)
		}
		return b.Bytes()
	}
	type version struct {
		id     string
		body   []byte
		stored int64
	}
	var versions []version
	for _, pol := range []string{"compression", "encryption", ""} {
		var id string
		if pol != "" {
			id = srv.policyAdd(t, "FOR CONTAINER t1/vbkt DO SET "+pol)[0].ID
		}
		body := csv("plan-" + pol)
		stored, _ := srv.putStored(t, cl, "t1", "vbkt", "data.csv", body)
		head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vbkt"), Key: aws.String("data.csv")})
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, version{aws.ToString(head.VersionId), body, stored})
		if id != "" {
			if _, err := srv.ctl(t, "policy", "delete", id); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v := versions[0]; v.stored >= int64(len(v.body))/2 {
		t.Errorf("the compressed version stores %d of %d bytes", v.stored, len(v.body))
	}
	if v := versions[1]; v.stored <= int64(len(v.body)) {
		t.Errorf("the encrypted version stores %d of %d bytes; want the overhead", v.stored, len(v.body))
	}
	for i, v := range versions {
		got, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vbkt"), Key: aws.String("data.csv"), VersionId: aws.String(v.id)})
		if err != nil {
			t.Fatalf("version %d: %v", i, err)
		}
		b, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if !bytes.Equal(b, v.body) || aws.ToString(got.VersionId) != v.id {
			t.Errorf("version %d (%s) reads back %d bytes, id %s", i, v.id, len(b), aws.ToString(got.VersionId))
		}
		rng, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vbkt"), Key: aws.String("data.csv"),
			VersionId: aws.String(v.id), Range: aws.String("bytes=100000-100099")})
		if err != nil {
			t.Fatalf("range of version %d: %v", i, err)
		}
		b, _ = io.ReadAll(rng.Body)
		rng.Body.Close()
		if !bytes.Equal(b, v.body[100000:100100]) {
			t.Errorf("range of version %d: %q", i, b)
		}
		// SelectObjectContent by version (versionId in the query).
		out, err := cl.SelectObjectContent(ctx, &s3.SelectObjectContentInput{
			Bucket: aws.String("vbkt"), Key: aws.String("data.csv"),
			Expression: aws.String("SELECT s.tag FROM S3Object s WHERE s.id = '7'"), ExpressionType: types.ExpressionTypeSql,
			InputSerialization:  &types.InputSerialization{CSV: &types.CSVInput{FileHeaderInfo: types.FileHeaderInfoUse}},
			OutputSerialization: &types.OutputSerialization{CSV: &types.CSVOutput{}},
		}, withQuery("versionId", v.id))
		if err != nil {
			t.Fatalf("select version %d: %v", i, err)
		}
		var rec bytes.Buffer
		stream := out.GetStream()
		for ev := range stream.Events() {
			if r, ok := ev.(*types.SelectObjectContentEventStreamMemberRecords); ok {
				rec.Write(r.Value.Payload)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("select version %d: %v", i, err)
		}
		stream.Close()
		if want := "plan-" + []string{"compression", "encryption", ""}[i] + "\n"; rec.String() != want {
			t.Errorf("select version %d = %q, want %q", i, rec.String(), want)
		}
	}
	// A delete marker on top: the versions stay readable by id.
	if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vbkt"), Key: aws.String("data.csv")}); err != nil {
		t.Fatal(err)
	}
	_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vbkt"), Key: aws.String("data.csv")})
	wantErr(t, "GET under a delete marker", err, "NoSuchKey", http.StatusNotFound)
	assertVersion(t, cl, "vbkt", "data.csv", versions[0].id, versions[0].body)
}

func assertVersion(t *testing.T, cl *s3.Client, bucket, key, id string, want []byte) {
	t.Helper()
	got, err := cl.GetObject(ctxT(t), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(id)})
	if err != nil {
		t.Fatalf("GET %s/%s version %s: %v", bucket, key, id, err)
	}
	defer got.Body.Close()
	if b, _ := io.ReadAll(got.Body); !bytes.Equal(b, want) {
		t.Fatalf("GET %s/%s version %s: %d bytes, want %d", bucket, key, id, len(b), len(want))
	}
}

// The remote backend keeps one version per key: it refuses to turn
// versioning on rather than accept it and keep nothing.
func TestVersioningRemoteBackendRefuses(t *testing.T) {
	remote := s3test.Start(t)
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr,
		"--admin-token", s.token, "--backend", remote.URL("gw")}, nil); err != nil {
		t.Fatal(err)
	}
	cl := s.sdk(s.createTenant(t, "rem"))
	ctx := ctxT(t)
	mkBucket(t, cl, "rbkt")
	putBytes(t, cl, "rbkt", "k", []byte("x"))
	for _, st := range []types.BucketVersioningStatus{types.BucketVersioningStatusEnabled, types.BucketVersioningStatusSuspended} {
		_, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("rbkt"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: st}})
		wantErr(t, "PutBucketVersioning "+string(st), err, "NotImplemented", http.StatusNotImplemented)
		if err == nil || !strings.Contains(err.Error(), "remote S3 backend") {
			t.Errorf("PutBucketVersioning: %v; want a message naming the backend", err)
		}
	}
	if v, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("rbkt")}); err != nil || v.Status != "" {
		t.Errorf("GetBucketVersioning: %+v %v; want none", v, err)
	}
	// A version id other than null names nothing there.
	_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("rbkt"), Key: aws.String("k"), VersionId: aws.String(strings.Repeat("f", 32))})
	wantErr(t, "GetObject by a version id", err, "NoSuchVersion", http.StatusNotFound)
	assertContent(t, cl, "rbkt", "k", []byte("x"))
}
