package xmlguard

import (
	"bytes"
	"encoding/xml"
	"errors"
	"runtime"
	"strings"
	"testing"
)

func nested(depth int) []byte {
	return []byte(strings.Repeat("<a>", depth) + strings.Repeat("</a>", depth))
}

func TestCheck(t *testing.T) {
	parts := "<CompleteMultipartUpload>" + strings.Repeat("<Part><PartNumber>1</PartNumber><ETag>\"x\"</ETag></Part>", 10_000) + "</CompleteMultipartUpload>"
	for _, tc := range []struct {
		name  string
		doc   string
		limit string // "" accepted, "depth"/"elements" refused, "syntax" not well-formed
	}{
		{"delete", `<?xml version="1.0"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a</Key><VersionId>v</VersionId></Object><Quiet>true</Quiet></Delete>`, ""},
		{"10k parts", parts, ""},
		{"depth at limit", string(nested(16)), ""},
		{"depth past limit", string(nested(17)), "depth"},
		{"elements past limit", "<a>" + strings.Repeat("<b/>", 100_000) + "</a>", "elements"},
		{"attributes count", "<a>" + strings.Repeat(`<b x="1" y="2"/>`, 40_000) + "</a>", "elements"},
		{"attributes of one element", "<a" + strings.Repeat(` x="1"`, 17) + "/>", "attributes"},
		{"attributes at the limit", `<a x="=" y='>'` + strings.Repeat(` x="1"`, 14) + "/>", ""},
		{"equals in text, comments, CDATA", "<a>" + strings.Repeat("=", 100) + "<!-- <b " + strings.Repeat("x=1 ", 20) + "> --><![CDATA[<c " + strings.Repeat("x=1 ", 20) + ">]]></a>", ""},
		{"unclosed depth", strings.Repeat("<a>", 1000), "depth"},
		{"syntax", "<a><b></a", "syntax"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Default.Check([]byte(tc.doc))
			var le *LimitError
			switch {
			case tc.limit == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.limit == "syntax" && (err == nil || errors.As(err, &le)):
				t.Fatalf("err = %v; want a syntax error", err)
			case tc.limit == "depth" || tc.limit == "elements":
				if !errors.As(err, &le) || le.Limit != tc.limit {
					t.Fatalf("err = %v; want the %s limit", err, tc.limit)
				}
				if !strings.Contains(err.Error(), "maximum") {
					t.Errorf("message %q does not name the limit", err)
				}
			}
		})
	}
}

// TestCheckHostileCostsLittle is the attack of issue 22: 2 MiB of nested
// elements, which cost ~70 MB to decode, are refused for a few kilobytes.
func TestCheckHostileCostsLittle(t *testing.T) {
	body := []byte(strings.Repeat("<a>", 2<<20/3))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := Default.Check(body)
	runtime.ReadMemStats(&after)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "depth" {
		t.Fatalf("err = %v; want the depth limit", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("refusing 2 MiB of nesting allocated %d bytes; want < 64 KiB", got)
	}
}

// TestCheckAttributeFloodCostsLittle: 2 MiB of attributes on one
// element allocated ~100 MB in the tokenizer; the byte scan refuses them
// first.
func TestCheckAttributeFloodCostsLittle(t *testing.T) {
	body := []byte("<a" + strings.Repeat(` b=""`, 2<<20/5) + "/>")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := Default.Check(body)
	runtime.ReadMemStats(&after)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "attributes" {
		t.Fatalf("err = %v; want the attributes limit", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("refusing 2 MiB of attributes allocated %d bytes; want < 64 KiB", got)
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`<Delete><Object><Key>a</Key></Object></Delete>`))
	f.Add(nested(20))
	f.Add([]byte(`<a x="1" y='2'><!-- c --><![CDATA[x]]><?pi?></a>`))
	small := Limits{MaxDepth: 4, MaxElements: 8, MaxAttributes: 2}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := small.Check(data)
		var le *LimitError
		if errors.As(err, &le) && le.Max != 4 && le.Max != 8 && le.Max != 2 {
			t.Fatalf("limit %+v is none of the configured ones", le)
		}
		if err == nil {
			// The byte scan counts what the tokenizer reads.
			d := xml.NewDecoder(bytes.NewReader(data))
			for {
				tok, err := d.RawToken()
				if err != nil {
					break
				}
				if se, ok := tok.(xml.StartElement); ok && len(se.Attr) > small.MaxAttributes {
					t.Fatalf("accepted an element of %d attributes", len(se.Attr))
				}
			}
		}
		if err == nil {
			// Accepted documents are within the limits: count them
			// independently of Check's loop.
			if depth := maxDepth(data); depth > small.MaxDepth {
				t.Fatalf("accepted a document nested %d deep", depth)
			}
		}
	})
}

// maxDepth is the deepest nesting of start tags, by a byte scan that
// only works on accepted (well-formed) documents without '<' in
// comments, CDATA or attribute values; it returns 0 for the others.
func maxDepth(data []byte) int {
	s := string(data)
	if strings.Contains(s, "<!") || strings.Contains(s, "<?") || strings.Contains(s, "'") || strings.Contains(s, `"`) {
		return 0
	}
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			return 0
		}
		tag := s[i : i+end+1]
		switch {
		case strings.HasPrefix(tag, "</"):
			depth--
		case strings.HasSuffix(tag, "/>"):
			deepest = max(deepest, depth+1)
		default:
			depth++
			deepest = max(deepest, depth)
		}
	}
	return deepest
}
