package s3select

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/facet-sds/facet/internal/s3select/sql"
)

// sourceReaderAt reads an Input by ranges: Parquet's footer and the
// column chunks a query needs, nothing else.
type sourceReaderAt struct {
	ctx     context.Context
	in      Input
	scanned *int64
	calls   *int
}

func (s sourceReaderAt) ReadAt(p []byte, off int64) (int, error) {
	*s.calls++
	size := s.in.Size()
	if off >= size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), size-off)
	rc, err := s.in.Open(s.ctx, off, n)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	got, err := io.ReadFull(rc, p[:n])
	*s.scanned += int64(got)
	if err != nil {
		return got, err
	}
	if got < len(p) {
		return got, io.EOF
	}
	return got, nil
}

// parquetReader yields the rows of a flat Parquet file, reading only the
// columns the query uses, a batch of rows at a time.
type parquetReader struct {
	f       *parquet.File
	names   []string
	convs   []func(parquet.Value) sql.Value
	need    []int // leaf column indexes read
	pos     []int // leaf column index -> position in need, or -1
	groups  []int // row groups to read
	gi      int
	cols    []*columnReader
	left    int64 // rows left in the current row group
	batch   int
	bi      int
	row     parquetRow
	offsets []int64 // file offset of each row group
	names2  []string
	reads   int // ReadAt calls, each one ranged read of the object
	src     io.ReaderAt
	size    int64
}

const parquetBatch = 1024

func openParquet(ctx context.Context, in Input, scanned *int64) (*parquetReader, error) {
	p := &parquetReader{}
	p.src = sourceReaderAt{ctx: ctx, in: in, scanned: scanned, calls: &p.reads}
	p.size = in.Size()
	head, err := checkFooter(p.src, in.Size())
	if err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(head, in.Size(),
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<20))
	if err != nil {
		return nil, &Error{Code: CodeParquetParsingError, Message: "the object is not a readable Parquet file", Err: err}
	}
	p.f = f
	for _, path := range f.Schema().Columns() {
		leaf, _ := f.Schema().Lookup(path...)
		if leaf.MaxRepetitionLevel > 0 {
			return nil, newError(CodeUnsupportedParquetType, "column %s is repeated: only flat schemas are supported", strings.Join(path, "."))
		}
		conv, err := parquetConv(leaf.Node)
		if err != nil {
			return nil, newError(CodeUnsupportedParquetType, "column %s: %v", strings.Join(path, "."), err)
		}
		p.names = append(p.names, strings.Join(path, "."))
		p.convs = append(p.convs, conv)
	}
	for i, rg := range f.Metadata().RowGroups {
		off := int64(0)
		if len(rg.Columns) > 0 {
			md := rg.Columns[0].MetaData
			off = md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < off {
				off = md.DictionaryPageOffset
			}
		}
		p.offsets = append(p.offsets, off)
		p.groups = append(p.groups, i)
	}
	return p, nil
}

// restrict keeps the row groups that start in [start, end]: a ScanRange
// split reads whole row groups, each exactly once across splits.
func (p *parquetReader) restrict(start, end int64) {
	var g []int
	for i, off := range p.offsets {
		if off >= start && off <= end {
			g = append(g, i)
		}
	}
	p.groups = g
}

// project sets the columns to read.
func (p *parquetReader) project(all bool, fields []int) {
	p.pos = make([]int, len(p.names))
	for i := range p.pos {
		p.pos[i] = -1
	}
	p.need = p.need[:0]
	for i := range p.names {
		if all || containsInt(fields, i) {
			p.pos[i] = len(p.need)
			p.need = append(p.need, i)
		}
	}
	p.row.p = p
}

func containsInt(a []int, x int) bool {
	for _, v := range a {
		if v == x {
			return true
		}
	}
	return false
}

// starNames are the names of the columns read, for SELECT *.
func (p *parquetReader) starNames() []string {
	if p.names2 == nil {
		for _, ci := range p.need {
			p.names2 = append(p.names2, p.names[ci])
		}
	}
	return p.names2
}

func (p *parquetReader) next() (*parquetRow, int64, error) {
	for p.bi >= p.batch {
		if p.left == 0 {
			if p.gi >= len(p.groups) {
				return nil, 0, io.EOF
			}
			g := p.groups[p.gi]
			p.gi++
			rg := p.f.RowGroups()[g]
			p.left = rg.NumRows()
			for _, c := range p.cols {
				c.close()
			}
			p.cols = p.cols[:0]
			chunks := rg.ColumnChunks()
			budget := &rowGroupBudget{limit: maxParquetRowGroup}
			for _, ci := range p.need {
				fc, ok := chunks[ci].(*parquet.FileColumnChunk)
				if !ok || ci >= len(p.f.Metadata().RowGroups[g].Columns) {
					return nil, 0, newError(CodeParquetParsingError, "column %s: row group %d has no such column chunk", p.names[ci], g)
				}
				// Every page header is checked before parquet-go
				// allocates what it declares.
				guard, err := newChunkGuard(p.src, p.size, p.names[ci], &p.f.Metadata().RowGroups[g].Columns[ci].MetaData, budget)
				if err != nil {
					return nil, 0, err
				}
				p.cols = append(p.cols, &columnReader{pages: fc.PagesFrom(guard), buf: make([]parquet.Value, parquetBatch)})
			}
			continue
		}
		n := int(min(p.left, parquetBatch))
		for i, c := range p.cols {
			if err := c.fill(n); err != nil {
				if e := (*Error)(nil); errors.As(err, &e) {
					return nil, 0, e
				}
				return nil, 0, &Error{Code: CodeParquetParsingError, Message: fmt.Sprintf("column %s: cannot read values", p.names[p.need[i]]), Err: err}
			}
		}
		p.left -= int64(n)
		p.batch, p.bi = n, 0
	}
	p.row.i = p.bi
	p.bi++
	return &p.row, 0, nil
}

func (p *parquetReader) close() {
	for _, c := range p.cols {
		c.close()
	}
}

// columnReader reads one column chunk's values across its pages.
type columnReader struct {
	pages parquet.Pages
	vr    parquet.ValueReader
	buf   []parquet.Value
}

func (c *columnReader) fill(n int) error {
	got := 0
	for got < n {
		if c.vr == nil {
			page, err := c.pages.ReadPage()
			if err != nil {
				if err == io.EOF {
					return fmt.Errorf("column chunk ends after %d of %d values: %w", got, n, io.ErrUnexpectedEOF)
				}
				return err
			}
			c.vr = page.Values()
		}
		k, err := c.vr.ReadValues(c.buf[got:n])
		got += k
		if err == io.EOF {
			c.vr = nil
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *columnReader) close() { _ = c.pages.Close() }

// parquetRow is row i of the current batch.
type parquetRow struct {
	p *parquetReader
	i int
}

func (r *parquetRow) Field(i int) sql.Value {
	if i < 0 || i >= len(r.p.pos) || r.p.pos[i] < 0 {
		return sql.Value{}
	}
	return r.p.convs[i](r.p.cols[r.p.pos[i]].buf[r.i])
}

func (r *parquetRow) Named(string, bool) sql.Value { return sql.Value{} }

func (r *parquetRow) Doc() sql.Value {
	o := &sql.Obj{}
	for _, ci := range r.p.need {
		o.Keys = append(o.Keys, r.p.names[ci])
		o.Vals = append(o.Vals, r.Field(ci))
	}
	return sql.NewObject(o)
}

// parquetConv returns the converter of a leaf column's values.
func parquetConv(n parquet.Node) (func(parquet.Value) sql.Value, error) {
	f, err := parquetValue(n.Type())
	if err != nil {
		return nil, err
	}
	null := sql.Value{K: sql.Null}
	return func(v parquet.Value) sql.Value {
		if v.IsNull() {
			return null
		}
		return f(v)
	}, nil
}

// parquetValue converts a non-null value by physical and logical type.
func parquetValue(t parquet.Type) (func(parquet.Value) sql.Value, error) {
	var lt any
	if l := t.LogicalType(); l != nil {
		lt = l.Value
	}
	switch t.Kind() {
	case parquet.Boolean:
		return func(v parquet.Value) sql.Value { return sql.NewBool(v.Boolean()) }, nil
	case parquet.Int32, parquet.Int64:
		i := func(v parquet.Value) int64 { return v.Int64() }
		if t.Kind() == parquet.Int32 {
			i = func(v parquet.Value) int64 { return int64(v.Int32()) }
		}
		switch l := lt.(type) {
		case *format.DateType:
			return func(v parquet.Value) sql.Value { return sql.NewTime(time.Unix(i(v)*86400, 0).UTC()) }, nil
		case *format.DecimalType:
			scale := pow10(l.Scale)
			return func(v parquet.Value) sql.Value { return sql.NewFloat(float64(i(v)) / scale) }, nil
		case *format.TimestampType:
			unit := time.Microsecond
			if l.Unit.Value != nil {
				unit = l.Unit.Value.Duration()
			}
			per := int64(time.Second / unit)
			return func(v parquet.Value) sql.Value {
				x := i(v)
				return sql.NewTime(time.Unix(x/per, x%per*int64(unit)).UTC())
			}, nil
		}
		return func(v parquet.Value) sql.Value { return sql.NewInt(i(v)) }, nil
	case parquet.Float:
		return func(v parquet.Value) sql.Value { return sql.NewFloat(float64(v.Float())) }, nil
	case parquet.Double:
		return func(v parquet.Value) sql.Value { return sql.NewFloat(v.Double()) }, nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return func(v parquet.Value) sql.Value { return sql.NewString(unsafeString(v.ByteArray())) }, nil
	}
	return nil, fmt.Errorf("physical type %s is not supported", t.Kind())
}

func pow10(n int32) float64 {
	f := 1.0
	for i := int32(0); i < n; i++ {
		f *= 10
	}
	return f
}
