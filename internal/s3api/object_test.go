package s3api

import (
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
