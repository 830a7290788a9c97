package s3api

import (
	"net/url"
	"strings"
	"testing"
)

func TestSkipMarker(t *testing.T) {
	if got := skipMarker("a/b/", "a/", "/"); got != "a/b/\xff" {
		t.Errorf("got %q", got)
	}
	if got := skipMarker("a/bc", "a/", "/"); got != "a/bc" {
		t.Errorf("got %q", got)
	}
	if got := skipMarker("x/y/", "a/", "/"); got != "x/y/" {
		t.Errorf("got %q", got)
	}
	if "a/b/\xff" >= "a/c" || "a/b/zzz" >= "a/b/\xff" {
		t.Error("ordering assumption broken")
	}
}

func TestCopySource(t *testing.T) {
	b, k, v, hasV, err := copySource("/src/a%2F%2Fb%20c?versionId=null")
	if err != nil || b != "src" || k != "a//b c" || v != "null" || !hasV {
		t.Fatalf("%q %q %q %v %v", b, k, v, hasV, err)
	}
	if _, _, v, hasV, err := copySource("src/k"); err != nil || hasV || v != "" {
		t.Fatalf("no version: %q %v %v", v, hasV, err)
	}
	if _, _, v, _, err := copySource("src/k?versionId=a%2Bb"); err != nil || v != "a+b" {
		t.Fatalf("encoded version: %q %v", v, err)
	}
	if _, _, _, _, err := copySource("nokey"); err == nil {
		t.Fatal("accepted")
	}
}

// FuzzCopySource: x-amz-copy-source parses without panicking, a version
// is reported only where one is named, and what it parses re-encodes to a
// header that parses the same.
func FuzzCopySource(f *testing.F) {
	for _, s := range []string{"/src/k", "src/a%2F%2Fb%20c?versionId=null", "b/k?versionId=", "b/k?versionId=a%2Bb",
		"nokey", "/b/", "b/k?versionId=x?versionId=y", "%zz/k", "b/%E2%82%AC?versionId=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		b, k, v, hasV, err := copySource(h)
		if err != nil {
			return
		}
		if hasV != strings.Contains(h, "?versionId=") {
			t.Fatalf("%q: hasVersion %v", h, hasV)
		}
		again := "/" + url.PathEscape(b) + "/" + url.PathEscape(k)
		if hasV {
			again += "?versionId=" + url.QueryEscape(v)
		}
		b2, k2, v2, hasV2, err := copySource(again)
		if err != nil || b2 != b || k2 != k || v2 != v || hasV2 != hasV {
			t.Fatalf("%q -> %q -> %q %q %q %v %v; want %q %q %q %v", h, again, b2, k2, v2, hasV2, err, b, k, v, hasV)
		}
	})
}
