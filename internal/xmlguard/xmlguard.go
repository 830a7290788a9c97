// Package xmlguard owns the bounds on the XML request bodies Facet decodes
// (DeleteObjects, CompleteMultipartUpload, CreateBucket, SelectObjectContent):
// a token pre-scan that refuses a document nested deeper or holding more
// elements and attributes than a limit before encoding/xml decodes it into
// structs.
//
// The size cap of a body does not bound what decoding it costs: 2 MiB of
// nested "<a>" cost ~70 MB to decode, because the decoder keeps a stack of
// every open element. The pre-scan reads raw tokens (no name-space stack,
// no matching of end tags), keeps one counter per limit and stops at the
// first token past a limit, so a hostile body is refused after reading a
// few bytes more than the limit lets through.
package xmlguard

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// Limits bounds a document. S3's bodies are shallow (DeleteObjects and
// CompleteMultipartUpload nest three deep) and their element counts are
// bounded by their own limits (1,000 keys; 10,000 parts of a few elements
// each), so the defaults refuse nothing a real client sends.
type Limits struct {
	// MaxDepth is the deepest element nesting, the document element being
	// depth 1.
	MaxDepth int
	// MaxElements bounds the start elements and attributes together.
	MaxElements int
	// MaxAttributes bounds the attributes of one element: the tokenizer
	// reads them all before it returns the element, at ~250 bytes
	// allocated each (S3's bodies carry an xmlns at most).
	MaxAttributes int
}

// Default are the limits of every S3 request body.
var Default = Limits{MaxDepth: 16, MaxElements: 100_000, MaxAttributes: 16}

// LimitError is a document past a limit. Its message names the limit.
type LimitError struct {
	Limit string // "depth", "elements" or "attributes"
	Max   int
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "depth":
		return fmt.Sprintf("the XML is nested deeper than the maximum of %d elements", e.Max)
	case "attributes":
		return fmt.Sprintf("an XML element has more than the maximum of %d attributes", e.Max)
	}
	return fmt.Sprintf("the XML has more than the maximum of %d elements and attributes", e.Max)
}

// checkAttributes counts the attributes of each tag with a byte scan
// (each is a '=' outside quotes), skipping comments, CDATA sections and
// processing instructions, before the tokenizer would allocate them.
// What is not well-formed is left to the tokenizer to report.
func (l Limits) checkAttributes(data []byte) error {
	skip := func(rest []byte, open, close string) int {
		k := bytes.Index(rest[len(open):], []byte(close))
		if k < 0 {
			return len(rest)
		}
		return len(open) + k + len(close)
	}
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '<')
		if j < 0 {
			return nil
		}
		i += j
		rest := data[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			i += skip(rest, "<!--", "-->")
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			i += skip(rest, "<![CDATA[", "]]>")
		case bytes.HasPrefix(rest, []byte("<?")):
			i += skip(rest, "<?", "?>")
		case bytes.HasPrefix(rest, []byte("<!")):
			i += skip(rest, "<!", ">")
		default:
			n, k := 0, 1
			var quote byte
			for ; k < len(rest); k++ {
				c := rest[k]
				if quote != 0 {
					if c == quote {
						quote = 0
					}
					continue
				}
				if c == '"' || c == '\'' {
					quote = c
				} else if c == '=' {
					if n++; n > l.MaxAttributes {
						return &LimitError{Limit: "attributes", Max: l.MaxAttributes}
					}
				} else if c == '>' {
					break
				}
			}
			i += k
		}
	}
	return nil
}

// Check scans data and returns a *LimitError when it goes past l, or the
// tokenizer's error when it is not well-formed. A nil error means decoding
// data costs in proportion to its size.
func (l Limits) Check(data []byte) error {
	if err := l.checkAttributes(data); err != nil {
		return err
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	depth, elems := 0, 0
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			elems += 1 + len(t.Attr)
			if depth > l.MaxDepth {
				return &LimitError{Limit: "depth", Max: l.MaxDepth}
			}
			if elems > l.MaxElements {
				return &LimitError{Limit: "elements", Max: l.MaxElements}
			}
		case xml.EndElement:
			depth--
		}
	}
}
