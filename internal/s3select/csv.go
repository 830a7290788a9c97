package s3select

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"

	"github.com/facet-sds/facet/internal/s3select/sql"
)

// maxColumns bounds the fields of a CSV record.
const maxColumns = 1 << 18

// csvReader reads CSV records. Fields are strings that alias the read
// buffer (no allocation per field); they are valid until the next record.
type csvReader struct {
	lines   *lineReader
	fd, q   byte
	esc     byte
	comment byte
	hasCmt  bool
	// need is how many leading fields the query reads; the rest of a
	// record is not split. -1 splits all.
	need    int
	row     csvRow
	scratch []byte
	// line is the current record's bytes and plain whether it holds no
	// quote character (its fields are then slices of it).
	line  []byte
	plain bool
	// full is set when row.fields holds every field of the record.
	full    bool
	offs    []int
	records int64
}

func newCSVReader(src io.Reader, o *CSVInput, buf []byte) *csvReader {
	c := &csvReader{
		lines: newLineReader(src, o.RecordDelimiter, buf),
		fd:    o.FieldDelimiter[0], q: o.QuoteCharacter[0], esc: o.QuoteEscapeCharacter[0],
		need: -1,
	}
	if o.Comments != "" {
		c.comment, c.hasCmt = o.Comments[0], true
	}
	if o.AllowQuotedRecordDelimiter {
		c.lines.quoted, c.lines.quote, c.lines.esc = true, c.q, c.esc
	}
	return c
}

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// unsafeString views b as a string without copying.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// next reads the next record; blank lines and comment lines are skipped.
func (c *csvReader) next() (*csvRow, int64, error) {
	for {
		line, start, err := c.lines.next()
		if err != nil {
			return nil, 0, err
		}
		c.records++
		if len(line) == 0 || c.hasCmt && line[0] == c.comment {
			continue
		}
		if err := c.split(line, start); err != nil {
			return nil, 0, err
		}
		return &c.row, start, nil
	}
}

// split cuts line into fields. Without a quote character in the line,
// fields are views of the line itself.
func (c *csvReader) split(line []byte, start int64) error {
	// A field costs a string header (16 bytes) for one byte of record:
	// a record of delimiters would cost 16 times its size. Only a record
	// longer than the limit can pass it, so short ones are not counted.
	if len(line) >= maxColumns && (c.need < 0 || c.need > maxColumns) {
		if n := bytes.Count(line, []byte{c.fd}) + 1; n > maxColumns {
			return newError(CodeOverMaxColumn, "record %d (offset %d) has %d fields; the maximum is %d", c.records, start, n, maxColumns)
		}
	}
	f := c.row.fields[:0]
	c.line, c.plain, c.full = line, bytes.IndexByte(line, c.q) < 0, true
	if c.plain {
		// Fields are short: one pass over the bytes beats a call per
		// field.
		need, fd, from := c.need, c.fd, 0
		if need == 0 {
			c.row.fields, c.full = f, false
			return nil
		}
		// Eight bytes at a time: a word's bytes equal to the delimiter
		// are found with the has-zero-byte trick (candidates are checked,
		// a borrow can flag a byte above a match).
		pat := uint64(fd) * swarLo
		i := 0
		for ; i+8 <= len(line); i += 8 {
			x := binary.LittleEndian.Uint64(line[i:]) ^ pat
			for m := (x - swarLo) &^ x & swarHi; m != 0; m &= m - 1 {
				k := i + bits.TrailingZeros64(m)>>3
				if line[k] != fd {
					continue
				}
				f = append(f, unsafeString(line[from:k]))
				from = k + 1
				if len(f) == need {
					c.row.fields, c.full = f, k+1 > len(line)
					return nil
				}
			}
		}
		for ; i < len(line); i++ {
			if line[i] == fd {
				f = append(f, unsafeString(line[from:i]))
				from = i + 1
				if len(f) == need {
					c.row.fields, c.full = f, false
					return nil
				}
			}
		}
		c.row.fields = append(f, unsafeString(line[from:]))
		return nil
	}
	if c.esc == c.q && c.splitQuoted(line) {
		return nil
	}
	return c.splitGeneral(line, start)
}

// splitGeneral splits a record with quotes, whatever its escapes.
func (c *csvReader) splitGeneral(line []byte, start int64) error {
	f := c.row.fields[:0]
	// A quoted field without escapes is a view of the line, like an
	// unquoted one; only fields with escapes are unescaped into scratch.
	// Their strings are made at the end, since scratch may move while it
	// grows: offs holds (field index, from, to) triples.
	s, offs := c.scratch[:0], c.offs[:0]
	need, pos := c.need, 0
	for {
		if len(f) == need {
			// The rest of the record is not read by the query.
			c.full = false
			break
		}
		if pos < len(line) && line[pos] == c.q && c.esc == c.q {
			// The usual quoting ("" inside quotes).
			j := bytes.IndexByte(line[pos+1:], c.q)
			if j < 0 {
				return newError(CodeCSVParsingError, "record %d (offset %d): a quoted field is not closed", c.records, start)
			}
			if end := pos + j + 2; end == len(line) || line[end] == c.fd {
				f = append(f, unsafeString(line[pos+1:pos+1+j]))
				pos = end
			} else {
				// An escaped quote or bytes after the closing quote:
				// copy up to each quote.
				from := len(s)
				pos++
				for {
					j := bytes.IndexByte(line[pos:], c.q)
					if j < 0 {
						return newError(CodeCSVParsingError, "record %d (offset %d): a quoted field is not closed", c.records, start)
					}
					s = append(s, line[pos:pos+j]...)
					pos += j + 1
					if pos < len(line) && line[pos] == c.q {
						s = append(s, c.q)
						pos++
						continue
					}
					break
				}
				if j := bytes.IndexByte(line[pos:], c.fd); j != 0 {
					end := len(line)
					if j > 0 {
						end = pos + j
					}
					s = append(s, line[pos:end]...)
					pos = end
				}
				offs = append(offs, len(f), from, len(s))
				f = append(f, "")
			}
		} else if pos < len(line) && line[pos] == c.q {
			from := len(s)
			pos++
			closed := false
			for pos < len(line) {
				ch := line[pos]
				if ch == c.esc && c.esc != c.q && pos+1 < len(line) && (line[pos+1] == c.q || line[pos+1] == c.esc) {
					s = append(s, line[pos+1])
					pos += 2
					continue
				}
				if ch == c.q {
					if c.esc == c.q && pos+1 < len(line) && line[pos+1] == c.q {
						s = append(s, c.q)
						pos += 2
						continue
					}
					pos++
					closed = true
					break
				}
				s = append(s, ch)
				pos++
			}
			if !closed {
				return newError(CodeCSVParsingError, "record %d (offset %d): a quoted field is not closed", c.records, start)
			}
			for pos < len(line) && line[pos] != c.fd {
				s = append(s, line[pos])
				pos++
			}
			offs = append(offs, len(f), from, len(s))
			f = append(f, "")
		} else {
			i := bytes.IndexByte(line[pos:], c.fd)
			end := len(line)
			if i >= 0 {
				end = pos + i
			}
			f = append(f, unsafeString(line[pos:end]))
			pos = end
		}
		if pos >= len(line) {
			break
		}
		pos++ // the delimiter
		if pos == len(line) {
			if len(f) != need {
				f = append(f, "")
			}
			break
		}
	}
	c.scratch, c.offs = s, offs
	for i := 0; i < len(offs); i += 3 {
		f[offs[i]] = unsafeString(s[offs[i+1]:offs[i+2]])
	}
	c.row.fields = f
	return nil
}

// splitQuoted is split's fast path for a record holding quotes in the
// usual quoting (the escape is the quote): one pass over the bytes, eight
// at a time, for delimiters and quotes, and every field, quoted or not,
// a view of the line. A call per field (bytes.IndexByte on spans of a few
// bytes) cost more than the bytes did. It reports false, having set
// nothing, for a record it does not cover: an escaped quote, a quote
// inside an unquoted field, bytes after a closing quote, or an unclosed
// quote; split's general path reads those.
func (c *csvReader) splitQuoted(line []byte) bool {
	f := c.row.fields[:0]
	need, fd, q := c.need, c.fd, c.q
	if need == 0 {
		c.row.fields, c.full = f, false
		return true
	}
	patD, patQ := uint64(fd)*swarLo, uint64(q)*swarLo
	from, in, n := 0, false, len(line)
	for i := 0; i < n; i += 8 {
		var m uint64
		if i+8 <= n {
			w := binary.LittleEndian.Uint64(line[i:])
			xd, xq := w^patD, w^patQ
			// Candidates (a borrow can flag a byte above a match; each
			// is checked).
			m = ((xd-swarLo)&^xd | (xq-swarLo)&^xq) & swarHi
		} else {
			for j := i; j < n; j++ {
				if line[j] == fd || line[j] == q {
					m |= 0x80 << (8 * (j - i))
				}
			}
		}
		for ; m != 0; m &= m - 1 {
			k := i + bits.TrailingZeros64(m)>>3
			switch line[k] {
			case q:
				if !in {
					if k != from {
						return false
					}
					in = true
					continue
				}
				if k+1 < n && line[k+1] != fd {
					return false // an escaped quote or bytes after the quote
				}
				in = false
			case fd:
				if in {
					continue
				}
				if line[from] == q {
					f = append(f, unsafeString(line[from+1:k-1]))
				} else {
					f = append(f, unsafeString(line[from:k]))
				}
				from = k + 1
				if len(f) == need {
					c.row.fields, c.full = f, false
					return true
				}
			}
		}
	}
	if in {
		return false
	}
	if from < n && line[from] == q {
		f = append(f, unsafeString(line[from+1:n-1]))
	} else {
		f = append(f, unsafeString(line[from:]))
	}
	c.row.fields = f
	return true
}

// csvRow is a CSV record as the query sees it.
type csvRow struct {
	fields []string
	names  []string // header names, or nil
}

func (r *csvRow) Field(i int) sql.Value {
	if i < len(r.fields) {
		return sql.Value{K: sql.String, S: r.fields[i]}
	}
	return sql.Value{}
}

func (r *csvRow) Named(string, bool) sql.Value { return sql.Value{} }

func (r *csvRow) Doc() sql.Value {
	o := &sql.Obj{}
	for i, f := range r.fields {
		o.Keys = append(o.Keys, columnName(r.names, i))
		o.Vals = append(o.Vals, sql.NewString(f))
	}
	return sql.NewObject(o)
}

// columnName is a CSV column's output name: its header name, else _N.
func columnName(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return "_" + strconv.Itoa(i+1)
}

// headerIndex resolves names against a header: exact match first, then
// (unless exact is asked) ignoring case.
func headerIndex(names []string) func(string, bool) (int, bool) {
	return func(name string, exact bool) (int, bool) {
		for i, n := range names {
			if n == name {
				return i, true
			}
		}
		if !exact {
			for i, n := range names {
				if strings.EqualFold(n, name) {
					return i, true
				}
			}
		}
		return 0, false
	}
}
