package s3api

import (
	"net/url"
	"strings"
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
		k, v, err := (&Server{}).versionMarkers(q)
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
	s := &Server{} // a backend that keeps no versions
	if err := s.checkVersion("null", "b", "k", "versionId"); err != nil {
		t.Errorf("null: %v", err)
	}
	well := strings.Repeat("f", 32)
	e := s3err.As(s.checkVersion(well, "b", "k", "versionId"))
	if e.Code != s3err.NoSuchVersion || e.VersionID != well || e.Key != "k" {
		t.Errorf("well-formed: %+v; want NoSuchVersion naming it", e)
	}
	if e := s3err.As(s.checkVersion("v1", "b", "k", "versionId")); e.Code != s3err.InvalidArgument || e.ArgumentValue != "v1" {
		t.Errorf("v1: %+v; want InvalidArgument", e)
	}
	if e := s3err.As(s.checkVersion("", "b", "k", "versionId")); e.Code != s3err.InvalidArgument || e.ArgumentName != "versionId" {
		t.Errorf("empty: %+v; want InvalidArgument", e)
	}
}

func TestParseVersioningConfiguration(t *testing.T) {
	const ns = `xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`
	cases := []struct {
		body, want, code string
	}{
		{`<VersioningConfiguration ` + ns + `><Status>Enabled</Status></VersioningConfiguration>`, "Enabled", ""},
		{`<VersioningConfiguration><Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>`, "Suspended", ""},
		{`<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>`, "", "NotImplemented"},
		{`<VersioningConfiguration><Status>enabled</Status></VersioningConfiguration>`, "", "MalformedXML"},
		{`<VersioningConfiguration></VersioningConfiguration>`, "", "MalformedXML"},
		{`<VersioningConfiguration><Status>Enabled</Status><Extra/></VersioningConfiguration>`, "", "MalformedXML"},
		{`<Other><Status>Enabled</Status></Other>`, "", "MalformedXML"},
		{``, "", "MalformedXML"},
	}
	for _, c := range cases {
		v, err := parseVersioningConfiguration([]byte(c.body))
		if c.code != "" {
			if e := s3err.As(err); err == nil || e.Code.Name != c.code {
				t.Errorf("%s: %v; want %s", c.body, err, c.code)
			}
			continue
		}
		if err != nil || string(v) != c.want {
			t.Errorf("%s = %q, %v; want %q", c.body, v, err, c.want)
		}
	}
}

func FuzzParseVersioningConfiguration(f *testing.F) {
	f.Add([]byte(`<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`))
	f.Add([]byte(`<VersioningConfiguration><Status>Suspended</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := parseVersioningConfiguration(body)
		if err == nil && v != "Enabled" && v != "Suspended" {
			t.Fatalf("accepted state %q", v)
		}
		if err != nil && v != "" {
			t.Fatalf("state %q with error %v", v, err)
		}
	})
}
