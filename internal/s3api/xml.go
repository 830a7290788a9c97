package s3api

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/xmlguard"
)

const s3NS = "http://s3.amazonaws.com/doc/2006-03-01/"

// writeXML renders v as an S3 XML response.
func writeXML(w http.ResponseWriter, status int, v any) error {
	body, err := xml.Marshal(v)
	if err != nil {
		return s3err.Wrap(s3err.InternalError, fmt.Errorf("marshal response: %w", err))
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(xml.Header)+len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(body)
	return nil
}

// readBounded reads an XML request body of at most maxXMLBody bytes.
func readBounded(body io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, maxXMLBody+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxXMLBody {
		return nil, s3err.Newf(s3err.MalformedXML, "The XML you provided was larger than the maximum of %d bytes.", maxXMLBody)
	}
	return data, nil
}

// xmlUnmarshalStrict decodes data into v, requiring the document element
// to be named root; anything else is MalformedXML. A document nested
// deeper or holding more elements than xmlguard.Default is refused before
// it is decoded: decoding costs far more than the body's size.
func xmlUnmarshalStrict(data []byte, root string, v any) error {
	if len(data) == 0 {
		return s3err.New(s3err.MalformedXML)
	}
	if err := xmlguard.Default.Check(data); err != nil {
		var le *xmlguard.LimitError
		if errors.As(err, &le) {
			return s3err.Newf(s3err.MalformedXML, "The XML you provided was not accepted: %v.", le)
		}
		return s3err.Wrap(s3err.MalformedXML, err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return s3err.Wrap(s3err.MalformedXML, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != root {
				return s3err.Wrap(s3err.MalformedXML, fmt.Errorf("document element is %q, want %q", se.Name.Local, root))
			}
			if err := dec.DecodeElement(v, &se); err != nil {
				return s3err.Wrap(s3err.MalformedXML, err)
			}
			return nil
		}
	}
}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}
