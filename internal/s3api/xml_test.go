package s3api

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/s3err"
)

func asStatus(err error) int {
	var e *s3err.Error
	if errors.As(err, &e) {
		return e.Code.Status
	}
	return -1
}

func asCode(err error) string {
	var e *s3err.Error
	if errors.As(err, &e) {
		return e.Code.Name
	}
	return ""
}

func TestParseDeleteRequest(t *testing.T) {
	d, err := parseDeleteRequest([]byte(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b/../c</Key></Object></Delete>`))
	if err != nil || !d.Quiet || len(d.Objects) != 2 || d.Objects[1].Key != "b/../c" {
		t.Fatalf("%+v %v", d, err)
	}
	for _, bad := range []string{"", "<Delete>", "<Delete></Delete>", "<Other><Object><Key>a</Key></Object></Other>", "not xml",
		"<Delete>" + strings.Repeat("<Object><Key>a</Key></Object>", 1001) + "</Delete>"} {
		if _, err := parseDeleteRequest([]byte(bad)); asCode(err) != "MalformedXML" {
			t.Errorf("%.40q: %v", bad, err)
		}
	}
}

func TestParseCompleteRequest(t *testing.T) {
	parts, err := parseCompleteRequest([]byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"aa"</ETag></Part><Part><PartNumber>3</PartNumber><ETag>bb</ETag></Part></CompleteMultipartUpload>`))
	if err != nil || len(parts) != 2 || parts[0].ETag != "aa" || parts[1].Number != 3 {
		t.Fatalf("%+v %v", parts, err)
	}
	_, err = parseCompleteRequest([]byte(`<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>a</ETag></Part><Part><PartNumber>1</PartNumber><ETag>b</ETag></Part></CompleteMultipartUpload>`))
	if asCode(err) != "InvalidPartOrder" {
		t.Fatalf("order: %v", err)
	}
	for _, bad := range []string{"", "<CompleteMultipartUpload/>", "<x/>", "<CompleteMultipartUpload><Part>"} {
		if _, err := parseCompleteRequest([]byte(bad)); asCode(err) != "MalformedXML" {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestNestedXMLRefusedBeforeDecoding is issue 22's attack: 2 MiB of
// nested elements in DeleteObjects or CompleteMultipartUpload cost ~70 MB
// each to decode; they are refused by the pre-scan for a few kilobytes.
func TestNestedXMLRefusedBeforeDecoding(t *testing.T) {
	for _, root := range []string{"Delete", "CompleteMultipartUpload"} {
		body := []byte("<" + root + ">" + strings.Repeat("<a>", (maxXMLBody-100)/3))
		parse := func() error {
			if root == "Delete" {
				_, err := parseDeleteRequest(body)
				return err
			}
			_, err := parseCompleteRequest(body)
			return err
		}
		var err error
		allocs := testing.AllocsPerRun(5, func() { err = parse() })
		if asCode(err) != "MalformedXML" || !strings.Contains(err.Error(), "nested deeper than the maximum of 16") {
			t.Fatalf("%s: %v; want MalformedXML naming the depth limit", root, err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_ = parse()
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 || allocs > 200 {
			t.Errorf("%s: refusing 2 MiB of nesting allocated %d bytes in %.0f allocations; want < 256 KiB, < 200", root, got, allocs)
		}
	}
}

func FuzzParseDeleteRequest(f *testing.F) {
	f.Add([]byte(`<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>a</Key><VersionId>x</VersionId></Object></Delete>`))
	f.Add([]byte(`<?xml version="1.0"?><!DOCTYPE x><Delete/>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseDeleteRequest(data)
		if err != nil {
			if asCode(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(d.Objects) == 0 || len(d.Objects) > 1000 {
			t.Fatalf("accepted %d objects", len(d.Objects))
		}
	})
}

func FuzzParseCompleteRequest(f *testing.F) {
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"a"</ETag></Part></CompleteMultipartUpload>`))
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber></Part></CompleteMultipartUpload>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		parts, err := parseCompleteRequest(data)
		if err != nil {
			if asCode(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for i, p := range parts {
			if p.Number < 1 || p.Number > 10000 || (i > 0 && p.Number <= parts[i-1].Number) {
				t.Fatalf("accepted bad part list %+v", parts)
			}
		}
	})
}
