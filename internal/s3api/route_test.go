package s3api

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseTarget(t *testing.T) {
	domains := []string{"localhost", "s3.example.com"}
	cases := []struct {
		host, path string
		want       target
	}{
		{"127.0.0.1:9000", "/", target{}},
		{"127.0.0.1:9000", "/b1", target{bucket: "b1"}},
		{"127.0.0.1:9000", "/b1/", target{bucket: "b1", slash: true}},
		{"127.0.0.1:9000", "/b1/k", target{bucket: "b1", key: "k", hasKey: true, slash: true}},
		{"127.0.0.1:9000", "/b1/a//b", target{bucket: "b1", key: "a//b", hasKey: true, slash: true}},
		{"127.0.0.1:9000", "/b1/../x", target{bucket: "b1", key: "../x", hasKey: true, slash: true}},
		{"127.0.0.1:9000", "/b1/./a/./", target{bucket: "b1", key: "./a/./", hasKey: true, slash: true}},
		{"127.0.0.1:9000", "/b1/%E2%82%AC%20x+y%25", target{bucket: "b1", key: "€ x+y%", hasKey: true, slash: true}},
		{"127.0.0.1:9000", "/b1/a%2Fb", target{bucket: "b1", key: "a/b", hasKey: true, slash: true}},
		{"b1.localhost:9000", "/", target{bucket: "b1", slash: true}},
		{"b1.localhost:9000", "/k/../j", target{bucket: "b1", key: "k/../j", hasKey: true, slash: true}},
		{"my.bucket.s3.example.com", "/k", target{bucket: "my.bucket", key: "k", hasKey: true, slash: true}},
		{"localhost:9000", "/b1/k", target{bucket: "b1", key: "k", hasKey: true, slash: true}},
	}
	for _, c := range cases {
		got, err := parseTarget(c.host, c.path, domains)
		if err != nil || got != c.want {
			t.Errorf("parseTarget(%q, %q) = %+v, %v; want %+v", c.host, c.path, got, err, c.want)
		}
	}
	if _, err := parseTarget("h", "/b/%zz", domains); err == nil {
		t.Error("bad escape accepted")
	}
	// Context rules see "bucket/key" as the request wrote it.
	for _, c := range []struct{ host, path, want string }{
		{"127.0.0.1:9000", "/", ""},
		{"127.0.0.1:9000", "/b1", "b1"},
		{"127.0.0.1:9000", "/b1/", "b1/"},
		{"127.0.0.1:9000", "/b1/a%2Fb", "b1/a/b"},
		{"b1.localhost:9000", "/", "b1/"},
		{"b1.localhost:9000", "/k/../j", "b1/k/../j"},
	} {
		if got, _ := parseTarget(c.host, c.path, domains); got.classKey() != c.want {
			t.Errorf("classKey(%q, %q) = %q, want %q", c.host, c.path, got.classKey(), c.want)
		}
	}
}

// The server must see the raw path: "//" and ".." survive net/http's
// request parsing because Facet never goes through ServeMux.
func TestRawPathSurvivesRequestParsing(t *testing.T) {
	r := httptest.NewRequest("GET", "http://127.0.0.1:9000/b/a//b/../c", nil)
	got, err := parseTarget(r.Host, r.URL.EscapedPath(), nil)
	if err != nil || got.key != "a//b/../c" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestResolveOperation(t *testing.T) {
	notServed := map[operation]bool{opUnknown: true, "GetBucketPolicy": true, "PutBucketWebsite": true,
		"DeleteBucketCors": true, "PutBucketAcl": true,
		"PostObject": true, "PutObjectTagging": true, "PutObjectAcl": true, "RestoreObject": true}
	cases := []struct {
		method, url string
		hdr         map[string]string
		want        operation
	}{
		{"GET", "/", nil, opListBuckets},
		{"PUT", "/b", nil, opCreateBucket},
		{"DELETE", "/b", nil, opDeleteBucket},
		{"HEAD", "/b", nil, opHeadBucket},
		{"GET", "/b?location", nil, opGetBucketLocation},
		{"GET", "/b?list-type=2&prefix=a", nil, opListObjectsV2},
		{"GET", "/b?prefix=a", nil, opListObjectsV1},
		{"GET", "/b?uploads", nil, opListMultipartUploads},
		{"POST", "/b?delete", nil, opDeleteObjects},
		{"GET", "/b?policy", nil, "GetBucketPolicy"},
		{"PUT", "/b?website", nil, "PutBucketWebsite"},
		{"DELETE", "/b?cors", nil, "DeleteBucketCors"},
		{"PUT", "/b?versioning", nil, opPutBucketVersioning},
		{"GET", "/b?versioning", nil, opGetBucketVersioning},
		{"GET", "/b?acl", nil, opGetBucketACL},
		{"PUT", "/b?acl", nil, "PutBucketAcl"},
		{"GET", "/b?versions", nil, opListObjectVersions},
		{"PUT", "/b?versions", nil, opUnknown},
		{"GET", "/b/k?versions", nil, opUnknown},
		{"GET", "/b?torrent", nil, opUnknown},
		{"POST", "/b", nil, "PostObject"},
		{"POST", "/b?select", nil, opUnknown},
		{"PUT", "/", nil, opUnknown},
		{"PUT", "/b/k", nil, opPutObject},
		{"PUT", "/b/k", map[string]string{"x-amz-copy-source": "/a/b"}, opCopyObject},
		{"PUT", "/b/k?partNumber=1&uploadId=x", nil, opUploadPart},
		{"PUT", "/b/k?partNumber=1&uploadId=x", map[string]string{"x-amz-copy-source": "/a/b"}, opUploadPartCopy},
		{"GET", "/b/k", nil, opGetObject},
		{"GET", "/b/k?uploadId=x", nil, opListParts},
		{"HEAD", "/b/k", nil, opHeadObject},
		{"DELETE", "/b/k", nil, opDeleteObject},
		{"DELETE", "/b/k?uploadId=x", nil, opAbortMultipartUpload},
		{"POST", "/b/k?uploads", nil, opCreateMultipartUpload},
		{"POST", "/b/k?uploadId=x", nil, opCompleteMultipartUpload},
		{"PUT", "/b/k?tagging", nil, "PutObjectTagging"},
		{"GET", "/b/k?acl", nil, opGetObjectACL},
		{"PUT", "/b/k?acl", nil, "PutObjectAcl"},
		{"POST", "/b/k?restore", nil, "RestoreObject"},
		{"GET", "/b/k?policy", nil, opUnknown},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, "http://127.0.0.1"+c.url, nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		tg, _ := parseTarget(r.Host, r.URL.EscapedPath(), nil)
		q, _ := url.ParseQuery(r.URL.RawQuery)
		got := resolveOperation(r, tg, q)
		if got != c.want {
			t.Errorf("%s %s = %q, want %q", c.method, c.url, got, c.want)
		}
		if got.implemented() == notServed[got] {
			t.Errorf("%s %s: %s implemented = %v", c.method, c.url, got, got.implemented())
		}
	}
}

func TestValidBucketName(t *testing.T) {
	good := []string{"abc", "my-bucket", "my.bucket.1", strings.Repeat("a", 63), "1bucket"}
	bad := []string{"ab", strings.Repeat("a", 64), "My-Bucket", "-abc", "abc-", ".abc", "a..b", "a.-b",
		"192.168.1.1", "xn--abc", "abc-s3alias", "a_b", "a b", "ab/c"}
	for _, b := range good {
		if !validBucketName(b) {
			t.Errorf("%q rejected", b)
		}
	}
	for _, b := range bad {
		if validBucketName(b) {
			t.Errorf("%q accepted", b)
		}
	}
}

func TestValidateKey(t *testing.T) {
	if err := validateKey(strings.Repeat("k", 1024)); err != nil {
		t.Error(err)
	}
	if err := validateKey(strings.Repeat("k", 1025)); err == nil || !strings.Contains(err.Error(), "KeyTooLongError") {
		t.Errorf("1025 bytes: %v", err)
	}
	if err := validateKey("\xff\xfe"); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"/", "/b/k", "/b/a//b", "/b/../x", "/%zz", "/b/%E2%82%AC"} {
		f.Add("127.0.0.1:9000", s)
		f.Add("b.localhost", s)
	}
	f.Fuzz(func(t *testing.T, host, path string) {
		tg, err := parseTarget(host, path, []string{"localhost"})
		if err != nil {
			return
		}
		if tg.hasKey && tg.key == "" {
			t.Fatalf("hasKey with empty key for %q %q", host, path)
		}
		if !tg.hasKey && tg.key != "" {
			t.Fatalf("key without hasKey")
		}
		if utf8.ValidString(path) && strings.Contains(tg.bucket, "/") && !strings.Contains(path, "%2") {
			t.Fatalf("bucket %q holds a slash", tg.bucket)
		}
	})
}
