package s3select

import (
	"bytes"

	"github.com/facet-sds/facet/internal/s3select/sql"
)

// rowEncoder serializes output rows into a byte buffer.
type rowEncoder interface {
	// row appends one record; names are the columns' names.
	row(b []byte, names []string, vals []sql.Value) []byte
	// raw appends a CSV record given as strings (the SELECT * fast path).
	raw(b []byte, names []string, fields []string) []byte
}

func newEncoder(o *OutputSerialization) rowEncoder {
	if o.JSON != nil {
		return &jsonEncoder{delim: o.JSON.RecordDelimiter}
	}
	c := o.CSV
	return (&csvEncoder{
		fd: c.FieldDelimiter[0], q: c.QuoteCharacter[0], esc: c.QuoteEscapeCharacter[0],
		rd: c.RecordDelimiter, always: c.QuoteFields == "ALWAYS",
	}).init()
}

type csvEncoder struct {
	fd, q, esc byte
	rd         string
	always     bool
	scratch    []byte
	// special marks the bytes that make a field need quotes; rawCheck
	// lists them but for the field delimiter and LF (a record never
	// holds those outside quotes).
	special  [256]bool
	rawCheck []byte
}

func (e *csvEncoder) init() *csvEncoder {
	for _, c := range []byte{e.fd, e.q, '\n', '\r', e.esc} {
		e.special[c] = true
	}
	for i := 0; i < len(e.rd); i++ {
		e.special[e.rd[i]] = true
	}
	for c := range e.special {
		if e.special[c] && byte(c) != e.fd && byte(c) != '\n' {
			e.rawCheck = append(e.rawCheck, byte(c))
		}
	}
	return e
}

// rawOK reports whether a record read with input field delimiter fd and
// holding no quote character is written out as its own bytes: the same
// delimiter, and none of the bytes that would make a field need quotes.
func (e *csvEncoder) rawOK(fd byte, line []byte) bool {
	if e.always || e.fd != fd {
		return false
	}
	for _, c := range e.rawCheck {
		if bytes.IndexByte(line, c) >= 0 {
			return false
		}
	}
	return true
}

func (e *csvEncoder) field(b []byte, s string) []byte {
	if !e.always {
		plain := true
		for i := 0; i < len(s); i++ {
			if e.special[s[i]] {
				plain = false
				break
			}
		}
		if plain {
			return append(b, s...)
		}
	}
	b = append(b, e.q)
	for i := 0; i < len(s); i++ {
		if s[i] == e.q {
			b = append(b, e.esc)
		}
		b = append(b, s[i])
	}
	return append(b, e.q)
}

func (e *csvEncoder) row(b []byte, _ []string, vals []sql.Value) []byte {
	for i, v := range vals {
		if i > 0 {
			b = append(b, e.fd)
		}
		if v.K == sql.String {
			b = e.field(b, v.S)
			continue
		}
		e.scratch = v.AppendText(e.scratch[:0])
		b = e.field(b, string(e.scratch))
	}
	return append(b, e.rd...)
}

func (e *csvEncoder) raw(b []byte, _ []string, fields []string) []byte {
	for i, f := range fields {
		if i > 0 {
			b = append(b, e.fd)
		}
		b = e.field(b, f)
	}
	return append(b, e.rd...)
}

type jsonEncoder struct{ delim string }

func (e *jsonEncoder) row(b []byte, names []string, vals []sql.Value) []byte {
	b = append(b, '{')
	first := true
	for i, v := range vals {
		if v.K == sql.Missing {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = sql.AppendJSONString(b, names[i])
		b = append(b, ':')
		b = v.AppendJSON(b)
	}
	b = append(b, '}')
	return append(b, e.delim...)
}

func (e *jsonEncoder) raw(b []byte, names []string, fields []string) []byte {
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = sql.AppendJSONString(b, names[i])
		b = append(b, ':')
		b = sql.AppendJSONString(b, f)
	}
	b = append(b, '}')
	return append(b, e.delim...)
}
