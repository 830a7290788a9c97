package s3select

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/facet-sds/facet/internal/s3select/sql"
)

// maxJSONDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxJSONDepth = 512

// maxRecordDecoded bounds what one JSON record costs decoded: a value is
// 56 bytes whatever its size in the input, so 8 MiB of "[0,0,..." would
// cost ~450 MB. A document of typical small objects costs ~7 times its
// size, so documents up to the 8 MiB record bound pass.
const maxRecordDecoded = 64 << 20

// Decoded costs charged against maxRecordDecoded: an sql.Value, and an
// object's sql.Obj with its slice headers; a key is a string header.
const (
	costValue  = 56
	costObject = 48
	costKey    = 16
)

var (
	errJSONSyntax    = errors.New("invalid JSON")
	errRecordDecoded = errors.New("record too large decoded")
)

// jsonParser reads JSON values into sql.Values, keeping object key order.
type jsonParser struct {
	r     io.ByteScanner
	depth int
	sb    []byte
	// cost is what the current record costs decoded so far.
	cost int64
}

// charge adds n bytes to the record's decoded cost.
func (p *jsonParser) charge(n int) error {
	p.cost += int64(n)
	if p.cost > maxRecordDecoded {
		return errRecordDecoded
	}
	return nil
}

func (p *jsonParser) skipSpace() (byte, error) {
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

// value reads one value; io.EOF only when the input ends before it starts.
func (p *jsonParser) value() (sql.Value, error) {
	c, err := p.skipSpace()
	if err != nil {
		return sql.Value{}, err
	}
	v, err := p.valueFrom(c)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return v, err
}

func (p *jsonParser) valueFrom(c byte) (sql.Value, error) {
	if err := p.charge(costValue); err != nil {
		return sql.Value{}, err
	}
	switch {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err == nil {
			err = p.charge(len(s))
		}
		return sql.NewString(s), err
	case c == '-' || c >= '0' && c <= '9':
		return p.number(c)
	case c == 't':
		return sql.NewBool(true), p.lit("rue")
	case c == 'f':
		return sql.NewBool(false), p.lit("alse")
	case c == 'n':
		return sql.Value{K: sql.Null}, p.lit("ull")
	}
	return sql.Value{}, errJSONSyntax
}

func (p *jsonParser) lit(rest string) error {
	for i := 0; i < len(rest); i++ {
		c, err := p.r.ReadByte()
		if err != nil {
			return err
		}
		if c != rest[i] {
			return errJSONSyntax
		}
	}
	return nil
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return errJSONSyntax
	}
	return nil
}

func (p *jsonParser) object() (sql.Value, error) {
	if err := p.enter(); err != nil {
		return sql.Value{}, err
	}
	defer func() { p.depth-- }()
	if err := p.charge(costObject); err != nil {
		return sql.Value{}, err
	}
	o := &sql.Obj{}
	c, err := p.skipSpace()
	if err != nil {
		return sql.Value{}, err
	}
	if c == '}' {
		return sql.NewObject(o), nil
	}
	for {
		if c != '"' {
			return sql.Value{}, errJSONSyntax
		}
		k, err := p.str()
		if err != nil {
			return sql.Value{}, err
		}
		if err := p.charge(costKey + len(k)); err != nil {
			return sql.Value{}, err
		}
		if c, err = p.skipSpace(); err != nil {
			return sql.Value{}, err
		}
		if c != ':' {
			return sql.Value{}, errJSONSyntax
		}
		if c, err = p.skipSpace(); err != nil {
			return sql.Value{}, err
		}
		v, err := p.valueFrom(c)
		if err != nil {
			return sql.Value{}, err
		}
		o.Keys, o.Vals = append(o.Keys, k), append(o.Vals, v)
		if c, err = p.skipSpace(); err != nil {
			return sql.Value{}, err
		}
		if c == '}' {
			return sql.NewObject(o), nil
		}
		if c != ',' {
			return sql.Value{}, errJSONSyntax
		}
		if c, err = p.skipSpace(); err != nil {
			return sql.Value{}, err
		}
	}
}

func (p *jsonParser) array() (sql.Value, error) {
	if err := p.enter(); err != nil {
		return sql.Value{}, err
	}
	defer func() { p.depth-- }()
	l := []sql.Value{}
	c, err := p.skipSpace()
	if err != nil {
		return sql.Value{}, err
	}
	if c == ']' {
		return sql.NewList(l), nil
	}
	for {
		v, err := p.valueFrom(c)
		if err != nil {
			return sql.Value{}, err
		}
		l = append(l, v)
		if c, err = p.skipSpace(); err != nil {
			return sql.Value{}, err
		}
		if c == ']' {
			return sql.NewList(l), nil
		}
		if c != ',' {
			return sql.Value{}, errJSONSyntax
		}
		if c, err = p.skipSpace(); err != nil {
			return sql.Value{}, err
		}
	}
}

func (p *jsonParser) number(first byte) (sql.Value, error) {
	b := append(p.sb[:0], first)
	for {
		c, err := p.r.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return sql.Value{}, err
		}
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			_ = p.r.UnreadByte()
			break
		}
		b = append(b, c)
	}
	p.sb = b
	s := unsafeString(b)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return sql.NewInt(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return sql.NewFloat(f), nil
		}
		return sql.Value{}, errJSONSyntax
	}
	return sql.NewFloat(f), nil
}

func (p *jsonParser) str() (string, error) {
	b := p.sb[:0]
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			return "", err
		}
		switch {
		case c == '"':
			p.sb = b
			return string(b), nil
		case c == '\\':
			e, err := p.r.ReadByte()
			if err != nil {
				return "", err
			}
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if p.lit(`\u`) == nil {
						r2, err := p.hex4()
						if err != nil {
							return "", err
						}
						r = utf16.DecodeRune(r, r2)
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", errJSONSyntax
			}
		case c < 0x20:
			return "", errJSONSyntax
		default:
			b = append(b, c)
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	var r rune
	for i := 0; i < 4; i++ {
		c, err := p.r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, errJSONSyntax
		}
	}
	return r, nil
}

// jsonReader yields records: each top-level value (DOCUMENT) or line
// (LINES), taken through FROM's path.
type jsonReader struct {
	lines   *lineReader // LINES
	doc     *bufio.Reader
	cr      *countingReader
	p       jsonParser
	path    []sql.PathStep
	pending []sql.Value
	start   int64
	row     jsonRow
	n       int64
}

func newJSONReader(src io.Reader, o *JSONInput, path []sql.PathStep, buf []byte) *jsonReader {
	j := &jsonReader{path: path}
	// S3Object[*] ranges over the documents themselves.
	if len(j.path) > 0 && j.path[0].Star {
		j.path = j.path[1:]
	}
	if o.Type == "LINES" {
		j.lines = newLineReader(src, "\n", buf)
	} else {
		j.cr = &countingReader{r: src}
		j.doc = bufio.NewReaderSize(j.cr, 256<<10)
		j.p.r = j.doc
	}
	return j
}

func (j *jsonReader) next() (*jsonRow, int64, error) {
	for len(j.pending) == 0 {
		var v sql.Value
		if j.lines != nil {
			line, start, err := j.lines.next()
			if err != nil {
				return nil, 0, err
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			j.start = start
			j.p.r = bytes.NewReader(line)
			j.p.cost = 0
			v, err = j.p.value()
			if err == nil {
				if c, e := j.p.skipSpace(); e != io.EOF || c != 0 {
					err = errJSONSyntax
				}
			}
			if errors.Is(err, errRecordDecoded) {
				return nil, 0, newError(CodeOverMaxRecordSize, "the line at offset %d holds more than %d bytes of values decoded", start, maxRecordDecoded)
			}
			if err != nil {
				return nil, 0, newError(CodeJSONParsingError, "line at offset %d is not a JSON value", start)
			}
		} else {
			j.start = j.cr.n - int64(j.doc.Buffered())
			// A document is one record: reading more than a record's
			// bound past its start fails the read, so memory stays
			// bounded whatever one document's size.
			j.cr.limit = j.start + maxRecordSize + int64(j.doc.Size())
			var err error
			j.p.cost = 0
			v, err = j.p.value()
			if err == io.EOF {
				return nil, 0, io.EOF
			}
			if errors.Is(err, errRecordDecoded) {
				return nil, 0, newError(CodeOverMaxRecordSize, "document %d (at offset %d) holds more than %d bytes of values decoded", j.n+1, j.start, maxRecordDecoded)
			}
			if errors.Is(err, errRecordTooLong) {
				return nil, 0, newError(CodeOverMaxRecordSize, "document %d (at offset %d) is longer than %d bytes", j.n+1, j.start, maxRecordSize)
			}
			if err != nil {
				return nil, 0, newError(CodeJSONParsingError, "document %d (near offset %d) is not valid JSON", j.n+1, j.start)
			}
		}
		j.n++
		j.pending = expandPath(v, j.path, j.pending[:0])
	}
	j.row.v = j.pending[0]
	j.pending = j.pending[1:]
	return &j.row, j.start, nil
}

// expandPath follows FROM's path into v; [*] fans out over a list.
func expandPath(v sql.Value, path []sql.PathStep, out []sql.Value) []sql.Value {
	for i, s := range path {
		if s.Star {
			for _, e := range v.ListOf() {
				out = expandPath(e, path[i+1:], out)
			}
			if v.K == sql.Object {
				for _, e := range v.ObjOf().Vals {
					out = expandPath(e, path[i+1:], out)
				}
			}
			return out
		}
		v = sql.Navigate(v, path[i:i+1])
	}
	if v.K == sql.Missing {
		return out
	}
	return append(out, v)
}

// jsonRow is one JSON record.
type jsonRow struct{ v sql.Value }

func (r *jsonRow) Field(i int) sql.Value {
	if r.v.K == sql.List {
		if l := r.v.ListOf(); i < len(l) {
			return l[i]
		}
	}
	return sql.Value{}
}

func (r *jsonRow) Named(name string, exact bool) sql.Value {
	if r.v.K != sql.Object {
		return sql.Value{}
	}
	v, _ := r.v.ObjOf().Get(name, exact)
	return v
}

func (r *jsonRow) Doc() sql.Value { return r.v }

// errRecordTooLong is a countingReader's read past its limit.
var errRecordTooLong = errors.New("record too long")

// countingReader counts the bytes read through it and, when limit is
// set, refuses to read past that stream offset.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.limit > 0 {
		if c.n >= c.limit {
			return 0, errRecordTooLong
		}
		p = p[:min(int64(len(p)), c.limit-c.n)]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
