// Package s3select owns S3 Select: the SelectObjectContent request, the
// engine that runs its SQL over an object's logical bytes (CSV, JSON and
// Parquet in; CSV and JSON out; GZIP and BZIP2 input compression;
// ScanRange with S3's record-boundary semantics) and the AWS event-stream
// framing of the response. The SQL dialect itself lives in package sql.
//
// The engine streams: memory stays bounded by the largest record and the
// output buffer, whatever the object's size. Parquet, which needs random
// access, reads through Input's ranged Open and only the column chunks
// the query uses.
package s3select

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/facet-sds/facet/internal/xmlguard"
)

// Request is a SelectObjectContentRequest.
type Request struct {
	XMLName         xml.Name `xml:"SelectObjectContentRequest"`
	Expression      string   `xml:"Expression"`
	ExpressionType  string   `xml:"ExpressionType"`
	RequestProgress struct {
		Enabled bool `xml:"Enabled"`
	} `xml:"RequestProgress"`
	Input     InputSerialization  `xml:"InputSerialization"`
	Output    OutputSerialization `xml:"OutputSerialization"`
	ScanRange *ScanRange          `xml:"ScanRange"`
}

// InputSerialization describes the object's format.
type InputSerialization struct {
	CompressionType string     `xml:"CompressionType"`
	CSV             *CSVInput  `xml:"CSV"`
	JSON            *JSONInput `xml:"JSON"`
	Parquet         *struct{}  `xml:"Parquet"`
}

// CSVInput are the CSV input options.
type CSVInput struct {
	FileHeaderInfo             string `xml:"FileHeaderInfo"`
	Comments                   string `xml:"Comments"`
	QuoteEscapeCharacter       string `xml:"QuoteEscapeCharacter"`
	RecordDelimiter            string `xml:"RecordDelimiter"`
	FieldDelimiter             string `xml:"FieldDelimiter"`
	QuoteCharacter             string `xml:"QuoteCharacter"`
	AllowQuotedRecordDelimiter bool   `xml:"AllowQuotedRecordDelimiter"`
}

// JSONInput are the JSON input options.
type JSONInput struct {
	Type string `xml:"Type"` // DOCUMENT or LINES
}

// OutputSerialization describes the result's format.
type OutputSerialization struct {
	CSV  *CSVOutput  `xml:"CSV"`
	JSON *JSONOutput `xml:"JSON"`
}

// CSVOutput are the CSV output options.
type CSVOutput struct {
	QuoteFields          string `xml:"QuoteFields"` // ALWAYS or ASNEEDED
	QuoteEscapeCharacter string `xml:"QuoteEscapeCharacter"`
	RecordDelimiter      string `xml:"RecordDelimiter"`
	FieldDelimiter       string `xml:"FieldDelimiter"`
	QuoteCharacter       string `xml:"QuoteCharacter"`
}

// JSONOutput are the JSON output options.
type JSONOutput struct {
	RecordDelimiter string `xml:"RecordDelimiter"`
}

// ScanRange restricts the scan to records that start in [Start, End].
type ScanRange struct {
	Start *int64 `xml:"Start"`
	End   *int64 `xml:"End"`
}

// maxRequestBody bounds the XML a client may send.
const maxRequestBody = 256 << 10

// ParseRequest reads and validates a SelectObjectContentRequest.
func ParseRequest(r io.Reader) (*Request, error) {
	body, err := io.ReadAll(io.LimitReader(r, maxRequestBody+1))
	if err != nil {
		return nil, fmt.Errorf("read select request: %w", err)
	}
	if len(body) > maxRequestBody {
		return nil, newError(CodeMalformedXML, "the request body exceeds %d bytes", maxRequestBody)
	}
	if err := xmlguard.Default.Check(body); err != nil {
		var le *xmlguard.LimitError
		if errors.As(err, &le) {
			return nil, newError(CodeMalformedXML, "the XML you provided was not accepted: %v", le)
		}
		return nil, newError(CodeMalformedXML, "the XML you provided was not well-formed: %v", err)
	}
	req := &Request{}
	if err := xml.Unmarshal(body, req); err != nil {
		return nil, newError(CodeMalformedXML, "the XML you provided was not well-formed: %v", err)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}

// Validate checks a request's options and fills in S3's defaults.
func (req *Request) Validate() error {
	if strings.TrimSpace(req.Expression) == "" {
		return newError(CodeMissingRequiredParameter, "the request has no Expression")
	}
	if t := strings.ToUpper(req.ExpressionType); t != "SQL" && t != "" {
		return newError(CodeInvalidExpressionType, "ExpressionType %q is not valid: only SQL is supported", req.ExpressionType)
	}
	in := &req.Input
	n := 0
	if in.CSV != nil {
		n++
	}
	if in.JSON != nil {
		n++
	}
	if in.Parquet != nil {
		n++
	}
	if n != 1 {
		return newError(CodeInvalidDataSource, "InputSerialization must name exactly one of CSV, JSON or Parquet")
	}
	switch strings.ToUpper(in.CompressionType) {
	case "", "NONE":
		in.CompressionType = "NONE"
	case "GZIP", "BZIP2":
		in.CompressionType = strings.ToUpper(in.CompressionType)
		if in.Parquet != nil {
			return newError(CodeInvalidCompressionFormat, "Parquet input takes no CompressionType (its pages carry their own)")
		}
	default:
		return newError(CodeInvalidCompressionFormat, "CompressionType %q is not valid: NONE, GZIP or BZIP2", in.CompressionType)
	}
	if c := in.CSV; c != nil {
		switch h := strings.ToUpper(c.FileHeaderInfo); h {
		case "":
			c.FileHeaderInfo = "NONE"
		case "USE", "IGNORE", "NONE":
			c.FileHeaderInfo = h
		default:
			return newError(CodeInvalidFileHeaderInfo, "FileHeaderInfo %q is not valid: USE, IGNORE or NONE", c.FileHeaderInfo)
		}
		if err := csvChars(&c.FieldDelimiter, &c.QuoteCharacter, &c.QuoteEscapeCharacter, &c.RecordDelimiter); err != nil {
			return err
		}
		if len(c.RecordDelimiter) > 2 {
			return newError(CodeInvalidRecordDelimiter, "RecordDelimiter must be one or two bytes")
		}
		if len(c.Comments) > 1 {
			return newError(CodeInvalidRequestParameter, "Comments must be one character")
		}
	}
	if j := in.JSON; j != nil {
		switch t := strings.ToUpper(j.Type); t {
		case "DOCUMENT", "LINES":
			j.Type = t
		case "":
			j.Type = "DOCUMENT"
		default:
			return newError(CodeInvalidJSONType, "JSON Type %q is not valid: DOCUMENT or LINES", j.Type)
		}
	}
	out := &req.Output
	switch {
	case out.CSV != nil && out.JSON != nil, out.CSV == nil && out.JSON == nil:
		return newError(CodeInvalidDataSource, "OutputSerialization must name exactly one of CSV or JSON")
	case out.CSV != nil:
		c := out.CSV
		switch q := strings.ToUpper(c.QuoteFields); q {
		case "", "ASNEEDED":
			c.QuoteFields = "ASNEEDED"
		case "ALWAYS":
			c.QuoteFields = q
		default:
			return newError(CodeInvalidQuoteFields, "QuoteFields %q is not valid: ALWAYS or ASNEEDED", c.QuoteFields)
		}
		if err := csvChars(&c.FieldDelimiter, &c.QuoteCharacter, &c.QuoteEscapeCharacter, &c.RecordDelimiter); err != nil {
			return err
		}
	case out.JSON != nil:
		if out.JSON.RecordDelimiter == "" {
			out.JSON.RecordDelimiter = "\n"
		}
	}
	if sr := req.ScanRange; sr != nil {
		if sr.Start == nil && sr.End == nil {
			req.ScanRange = nil
		} else {
			if in.CompressionType != "NONE" {
				return newError(CodeUnsupportedScanRangeInput, "ScanRange is not supported on compressed input")
			}
			if in.JSON != nil && in.JSON.Type != "LINES" {
				return newError(CodeUnsupportedScanRangeInput, "ScanRange on JSON input needs Type LINES")
			}
			if in.CSV != nil && in.CSV.AllowQuotedRecordDelimiter {
				return newError(CodeUnsupportedScanRangeInput, "ScanRange cannot find record boundaries when AllowQuotedRecordDelimiter is TRUE")
			}
			if sr.Start != nil && *sr.Start < 0 || sr.End != nil && *sr.End < 0 || sr.Start != nil && sr.End != nil && *sr.End < *sr.Start {
				return newError(CodeInvalidScanRange, "ScanRange Start and End must be non-negative with Start <= End")
			}
		}
	}
	return nil
}

// csvChars fills in or checks the characters CSV input and output share.
func csvChars(fd, q, esc, rd *string) error {
	if err := defaultChar(fd, ",", "FieldDelimiter", CodeInvalidFieldDelimiter); err != nil {
		return err
	}
	if err := defaultChar(q, `"`, "QuoteCharacter", CodeInvalidQuoteCharacter); err != nil {
		return err
	}
	if err := defaultChar(esc, *q, "QuoteEscapeCharacter", CodeInvalidQuoteCharacter); err != nil {
		return err
	}
	if *rd == "" {
		*rd = "\n"
	}
	return nil
}

// defaultChar fills in a one-character option or checks its length.
func defaultChar(v *string, def, name, code string) error {
	if *v == "" {
		*v = def
		return nil
	}
	if len(*v) != 1 {
		return newError(code, "%s must be a single one-byte character, got %q", name, *v)
	}
	return nil
}

// scanBounds resolves the scan range against the object's size: records
// whose first byte lies in [start, end] are read.
func (req *Request) scanBounds(size int64) (start, end int64) {
	sr := req.ScanRange
	if sr == nil {
		return 0, size - 1
	}
	switch {
	case sr.Start != nil && sr.End != nil:
		return *sr.Start, min(*sr.End, size-1)
	case sr.Start != nil:
		return *sr.Start, size - 1
	default: // End alone: the last End bytes, as S3 reads it
		return max(size-*sr.End, 0), size - 1
	}
}
