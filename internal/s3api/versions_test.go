package s3api

import (
	"net/url"
	"testing"

	"github.com/facet-sds/facet/internal/s3err"
)

func TestVersionMarkers(t *testing.T) {
	cases := []struct {
		query, key, version, code, arg string
	}{
		{"", "", "", "", ""},
		{"key-marker=k", "k", "", "", ""},
		{"key-marker=k&version-id-marker=null", "k", "null", "", ""},
		{"key-marker=k&version-id-marker=", "k", "", "", ""},
		{"key-marker=k&version-id-marker=3HL4kqtJ", "", "", "InvalidArgument", "version-id-marker"},
		{"version-id-marker=null", "", "", "InvalidArgument", "version-id-marker"},
	}
	for _, c := range cases {
		q, _ := url.ParseQuery(c.query)
		k, v, err := versionMarkers(q)
		if c.code != "" {
			e := s3err.As(err)
			if err == nil || e.Code.Name != c.code || e.ArgumentName != c.arg {
				t.Errorf("%q: err %v; want %s naming %s", c.query, err, c.code, c.arg)
			}
			continue
		}
		if err != nil || k != c.key || v != c.version {
			t.Errorf("%q = %q, %q, %v; want %q, %q", c.query, k, v, err, c.key, c.version)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	if err := checkVersion("null", "b", "k", "versionId"); err != nil {
		t.Errorf("null: %v", err)
	}
	e := s3err.As(checkVersion("v1", "b", "k", "versionId"))
	if e.Code != s3err.NoSuchVersion || e.VersionID != "v1" || e.Key != "k" {
		t.Errorf("v1: %+v; want NoSuchVersion naming it", e)
	}
	if e := s3err.As(checkVersion("", "b", "k", "versionId")); e.Code != s3err.InvalidArgument || e.ArgumentName != "versionId" {
		t.Errorf("empty: %+v; want InvalidArgument", e)
	}
}
