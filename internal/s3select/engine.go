package s3select

import (
	"compress/bzip2"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/s3select/sql"
)

// Input is an object's logical bytes (after reverse filters), with random
// access: CSV and JSON read it as one stream, Parquet by ranges.
type Input interface {
	Size() int64
	Open(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// Sink receives a run's output. EventWriter is one (SelectObjectContent);
// the select filter's plain stream is another.
type Sink interface {
	// Records receives serialized output records.
	Records(p []byte) error
	// Progress is called about once a second when progress was asked for.
	Progress(Stats) error
	// Cont is called when nothing was sent for a while: a keep-alive.
	Cont() error
}

// Engine runs S3 Select requests. The native engine is the only one
// today; the interface is where another (a vectorized or external one)
// would plug in.
type Engine interface {
	// Prepare validates req and parses its SQL. Its errors are *Error and
	// come before any response byte.
	Prepare(req *Request) (Prepared, error)
}

// Prepared is a request ready to run over objects.
type Prepared interface {
	// Run streams the query's result over in to out and returns the
	// byte counts. Errors are *Error (AsError converts).
	Run(ctx context.Context, in Input, out Sink) (Stats, error)
}

// Native is the pure-Go engine.
type Native struct {
	// Now is the clock for progress and keep-alive events; nil is
	// time.Now.
	Now func() time.Time
	// Tick is the period of Progress and Cont events (default 1 s).
	Tick time.Duration
	// Workers bounds the goroutines one request scans with (default
	// GOMAXPROCS): a large uncompressed CSV or JSON-lines object is cut
	// into chunks scanned side by side.
	Workers int
	// chunk overrides parallelChunk (tests).
	chunk int64
	// maxExpand overrides the expansion limit of compressed input (tests).
	maxExpand int64
}

// Prepare implements Engine.
func (n Native) Prepare(req *Request) (Prepared, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	q, err := sql.Parse(req.Expression)
	if err != nil {
		return nil, AsError(err)
	}
	if len(q.FromPath) > 0 && req.Input.JSON == nil {
		return nil, newError(sql.CodeParseInvalidPathComponent, "a path after S3Object is only valid for JSON input")
	}
	now, tick := n.Now, n.Tick
	if now == nil {
		now = time.Now
	}
	if tick <= 0 {
		tick = time.Second
	}
	chunk := n.chunk
	if chunk <= 0 {
		chunk = parallelChunk
	}
	return &prepared{req: req, q: q, now: now, period: tick, workers: n.workers(), chunk: chunk, maxExpand: n.maxExpand}, nil
}

type prepared struct {
	req     *Request
	q       *sql.Query
	now     func() time.Time
	period  time.Duration
	workers int
	chunk   int64
	// maxExpand overrides the expansion limit (tests); 0 is the default.
	maxExpand int64
	// lineBufs, set on a parallel scan's chunks, recycles their read
	// buffers: a fresh 1 MiB buffer per 8 MiB chunk was most of what a
	// scan allocated, and the garbage collections it caused.
	lineBufs *bufPool
}

// outFlush is the output buffer size: one Records event.
const outFlush = 256 << 10

// run is one execution's state.
type run struct {
	*prepared
	ctx      context.Context
	out      Sink
	enc      rowEncoder
	prog     *sql.Program
	buf      []byte
	vals     []sql.Value
	names    []string
	stats    Stats
	scanned  *countingReader
	procd    *countingReader
	last     time.Time
	returned int64
	// rawCSV is set when SELECT * records may be copied verbatim.
	rawCSV *csvEncoder
}

func (p *prepared) Run(ctx context.Context, in Input, out Sink) (Stats, error) {
	if p.parallel(in.Size()) {
		return p.runParallel(ctx, in, out)
	}
	r := &run{prepared: p, ctx: ctx, out: out, enc: newEncoder(&p.req.Output), last: p.now()}
	err := r.exec(in)
	if err == nil {
		err = r.flush()
	}
	r.updateStats()
	if err != nil {
		return r.stats, AsError(err)
	}
	return r.stats, nil
}

func (r *run) updateStats() {
	if r.scanned != nil {
		r.stats.BytesScanned = r.scanned.n
	}
	if r.procd != nil {
		r.stats.BytesProcessed = r.procd.n
	}
	r.stats.BytesReturned = r.returned
}

func (r *run) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	r.returned += int64(len(r.buf))
	err := r.out.Records(r.buf)
	r.buf = r.buf[:0]
	r.last = r.now()
	return err
}

// tick sends Progress/Cont events when due and checks for cancellation.
func (r *run) tick() error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	now := r.now()
	if now.Sub(r.last) < r.period {
		return nil
	}
	r.last = now
	if r.req.RequestProgress.Enabled {
		r.updateStats()
		return r.out.Progress(r.stats)
	}
	return r.out.Cont()
}

// lineBuf returns the read buffer of a stream of n bytes.
func (r *run) lineBuf(n int64) []byte {
	size := bufferFor(n)
	if r.lineBufs != nil {
		if b := r.lineBufs.get(); cap(b) >= size {
			return b[:cap(b)]
		}
	}
	return make([]byte, size)
}

func (r *run) putLineBuf(b []byte) {
	if r.lineBufs != nil {
		r.lineBufs.put(b)
	}
}

// open returns the decompressed stream from off to the object's end.
// A scan range's stream is opened up to the range's end only, and the
// bytes after it in growing windows as the last record needs them.
func (r *run) open(in Input, off, end int64) (io.ReadCloser, error) {
	var rc io.ReadCloser
	var err error
	if r.req.ScanRange != nil && r.req.Input.CompressionType == "NONE" && end+1 < in.Size() {
		rc, err = openBounded(r.ctx, in, off, end)
	} else {
		rc, err = in.Open(r.ctx, off, in.Size()-off)
	}
	if err != nil {
		return nil, err
	}
	r.scanned = &countingReader{r: rc}
	var s io.Reader = r.scanned
	switch r.req.Input.CompressionType {
	case "GZIP":
		zr, err := gzip.NewReader(s)
		if err != nil {
			rc.Close()
			return nil, &Error{Code: CodeInvalidCompressionFormat, Message: "the object is not GZIP-compressed data", Err: err}
		}
		s = newDecompressErr(zr, "GZIP", r.expansion(in.Size()-off))
	case "BZIP2":
		s = newDecompressErr(bzip2.NewReader(s), "BZIP2", r.expansion(in.Size()-off))
	}
	r.procd = &countingReader{r: s}
	return struct {
		io.Reader
		io.Closer
	}{r.procd, rc}, nil
}

// boundedStream reads [off, end] of an object, then what follows end in
// windows that start small and double: usually only the rest of the
// record that straddles end is read past it. An open up to the object's
// end made the storage treat every parallel-scan chunk as a large stream
// (a reading thread, a copy out of its buffers, and up to its read-ahead
// of 4 MiB read for nothing); a chunk's bounded open is read straight into
// the engine's buffer.
type boundedStream struct {
	ctx  context.Context
	in   Input
	cur  io.ReadCloser
	next int64 // offset of the next window
	win  int64 // size of the next window
}

const (
	firstTailWindow = 64 << 10
	maxTailWindow   = 8 << 20
)

func openBounded(ctx context.Context, in Input, off, end int64) (io.ReadCloser, error) {
	rc, err := in.Open(ctx, off, end-off+1)
	if err != nil {
		return nil, err
	}
	return &boundedStream{ctx: ctx, in: in, cur: rc, next: end + 1, win: firstTailWindow}, nil
}

func (b *boundedStream) Read(p []byte) (int, error) {
	for {
		n, err := b.cur.Read(p)
		if n > 0 || err != io.EOF {
			return n, err
		}
		size := b.in.Size()
		if b.next >= size {
			return 0, io.EOF
		}
		if err := b.cur.Close(); err != nil {
			return 0, err
		}
		w := min(b.win, size-b.next)
		rc, err := b.in.Open(b.ctx, b.next, w)
		if err != nil {
			b.cur = io.NopCloser(strings.NewReader(""))
			return 0, err
		}
		b.cur, b.next, b.win = rc, b.next+w, min(2*b.win, maxTailWindow)
	}
}

func (b *boundedStream) Close() error { return b.cur.Close() }

// Decompression bombs: a record's bound keeps memory bounded whatever a
// compressed object expands to, but not the time spent scanning it, and
// BZIP2 expands a few kilobytes into terabytes. A stream may expand to
// maxExpansionRatio times its compressed size (gzip's own ceiling is
// ~1,032) or to minExpansionLimit, whichever is more.
const (
	maxExpansionRatio = 2048
	minExpansionLimit = 1 << 30
)

// expansion is what a compressed stream of n bytes may expand to.
func (p *prepared) expansion(n int64) int64 {
	if p.maxExpand > 0 {
		return p.maxExpand
	}
	return max(minExpansionLimit, maxExpansionRatio*n)
}

func newDecompressErr(r io.Reader, name string, limit int64) *decompressErr {
	return &decompressErr{r: r, name: name, left: limit, limit: limit}
}

// decompressErr reports corrupt compressed input with S3's code, and
// ends a stream that expands past its limit.
type decompressErr struct {
	r     io.Reader
	name  string
	left  int64 // decompressed bytes the stream may still yield
	limit int64
}

func (d *decompressErr) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.left -= int64(n)
	if d.left < 0 {
		return 0, &Error{Code: CodeInvalidCompressionFormat, Message: fmt.Sprintf("the %s stream expands past %d bytes, the most a stream may expand to: %d times its compressed size, at least %d (a decompression bomb)", d.name, d.limit, maxExpansionRatio, minExpansionLimit)}
	}
	if err != nil && err != io.EOF {
		return n, &Error{Code: CodeInvalidCompressionFormat, Message: "the object is not valid " + d.name + " data", Err: err}
	}
	return n, err
}

// rowSource is a format reader.
type rowSource interface {
	nextRow() (sql.Row, int64, error)
}

type csvSource struct{ *csvReader }

func (c csvSource) nextRow() (sql.Row, int64, error) {
	r, off, err := c.next()
	return r, off, err
}

type jsonSource struct{ *jsonReader }

func (j jsonSource) nextRow() (sql.Row, int64, error) {
	r, off, err := j.next()
	return r, off, err
}

type parquetSource struct{ *parquetReader }

func (p parquetSource) nextRow() (sql.Row, int64, error) {
	r, off, err := p.next()
	return r, off, err
}

func (r *run) exec(in Input) error {
	size := in.Size()
	start, end := r.req.scanBounds(size)
	if r.req.Input.Parquet != nil {
		return r.execParquet(in, start, end)
	}
	if size == 0 || start > end {
		// No record: an aggregate still yields its one row.
		prog, err := sql.CompileQuery(r.q, sql.Schema{Positional: r.req.Input.CSV != nil})
		if err != nil {
			return err
		}
		r.prog = prog
		return r.finish()
	}
	// A range that starts mid-object is opened one delimiter early, to
	// tell whether it starts on a record boundary.
	back := int64(1)
	if c := r.req.Input.CSV; c != nil {
		back = int64(len(c.RecordDelimiter))
	}
	off, boundary := start-back, true
	if off < 0 {
		off, boundary = 0, false
	}
	rc, err := r.open(in, off, end)
	if err != nil {
		return err
	}
	defer rc.Close()
	var src rowSource
	var csvr *csvReader
	switch {
	case r.req.Input.CSV != nil:
		o := r.req.Input.CSV
		csvr = newCSVReader(rc, o, r.lineBuf(end-off+1))
		defer func() { r.putLineBuf(csvr.lines.buf) }()
		var names []string
		if o.FileHeaderInfo != "NONE" {
			names, err = r.header(in, o, csvr, start)
			if err != nil {
				return err
			}
		}
		schema := sql.Schema{Positional: true}
		if o.FileHeaderInfo == "USE" {
			schema.Index = headerIndex(names)
		}
		if r.prog, err = sql.CompileQuery(r.q, schema); err != nil {
			return err
		}
		csvr.row.names = names
		if ce, ok := r.enc.(*csvEncoder); ok && r.prog.Star && !r.prog.Aggregate && !r.prog.WholeRecord {
			// SELECT * to CSV: records that need no quoting are copied
			// as they are; only the fields WHERE reads are split.
			r.rawCSV = ce
		}
		if !r.prog.AllFields || r.rawCSV != nil && !r.prog.WholeRecord {
			csvr.need = 0
			if f := r.prog.Fields; len(f) > 0 {
				csvr.need = f[len(f)-1] + 1
			}
		}
		r.names = r.outNames(names)
		src = csvSource{csvr}
		if start > 0 {
			if err := csvr.lines.skipPartial(boundary); err != nil {
				return err
			}
		}
	default:
		var buf []byte
		if r.req.Input.JSON.Type == "LINES" {
			buf = r.lineBuf(end - off + 1)
		}
		jr := newJSONReader(rc, r.req.Input.JSON, r.q.FromPath, buf)
		if jr.lines != nil {
			defer func() { r.putLineBuf(jr.lines.buf) }()
		}
		if r.prog, err = sql.CompileQuery(r.q, sql.Schema{}); err != nil {
			return err
		}
		r.names = r.prog.Names
		src = jsonSource{jr}
		if start > 0 && jr.lines != nil {
			if err := jr.lines.skipPartial(boundary); err != nil {
				return err
			}
		}
	}
	last := end - off
	if r.req.ScanRange == nil {
		// Offsets count decompressed bytes: without a range, all records.
		last = 1<<63 - 1
	} else if csvr != nil {
		csvr.lines.soft = last
	} else if jr, ok := src.(jsonSource); ok && jr.lines != nil {
		jr.lines.soft = last
	}
	return r.loop(src, csvr, last)
}

// header reads the CSV header: from the stream itself when the scan
// starts at the object's beginning, else from the object's first record.
func (r *run) header(in Input, o *CSVInput, c *csvReader, start int64) ([]string, error) {
	hc := c
	if start > 0 {
		rc, err := in.Open(r.ctx, 0, in.Size())
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		// The header is one short record: read it in small steps, so
		// that each chunk of a parallel scan re-reads little of it.
		hc = newCSVReader(rc, o, make([]byte, 4<<10))
	}
	row, _, err := hc.next()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(row.fields))
	for i, f := range row.fields {
		names[i] = string([]byte(f))
	}
	return names, nil
}

// outNames are the output column names of a CSV query.
func (r *run) outNames(header []string) []string {
	if !r.prog.Star {
		return r.prog.Names
	}
	return header
}

// loop evaluates every record whose offset is at most last.
func (r *run) loop(src rowSource, csvr *csvReader, last int64) error {
	limit := r.prog.Limit
	var emitted int64
	star := r.prog.Star && !r.prog.Aggregate
	for n := 0; ; n++ {
		if limit >= 0 && emitted >= limit && !r.prog.Aggregate {
			break
		}
		row, off, err := src.nextRow()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if off > last {
			break
		}
		if n&1023 == 0 {
			if err := r.tick(); err != nil {
				return err
			}
		}
		ok, err := r.prog.Match(row)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if r.prog.Aggregate {
			if err := r.prog.Accumulate(row); err != nil {
				return err
			}
			continue
		}
		emitted++
		if star {
			if r.rawCSV != nil && csvr.plain && r.rawCSV.rawOK(csvr.fd, csvr.line) {
				r.buf = append(r.buf, csvr.line...)
				r.buf = append(r.buf, r.rawCSV.rd...)
			} else if csvr != nil {
				if !csvr.full {
					// Split the whole record for re-encoding.
					need := csvr.need
					csvr.need = -1
					if err := csvr.split(csvr.line, off); err != nil {
						return err
					}
					csvr.need = need
				}
				names := r.names
				if len(names) < len(csvr.row.fields) {
					names = starNames(names, len(csvr.row.fields))
					r.names = names
				}
				r.buf = r.enc.raw(r.buf, names, csvr.row.fields)
			} else {
				r.buf = r.appendDoc(r.buf, row)
			}
		} else {
			if r.vals, err = r.prog.Project(row, r.vals); err != nil {
				return err
			}
			r.buf = r.enc.row(r.buf, r.names, r.vals)
		}
		if len(r.buf) >= outFlush {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	return r.finish()
}

// starNames extends header names with _N for extra fields.
func starNames(names []string, n int) []string {
	out := append([]string(nil), names...)
	for i := len(out); i < n; i++ {
		out = append(out, columnName(nil, i))
	}
	return out
}

// appendDoc writes a whole record (SELECT * over JSON or Parquet).
func (r *run) appendDoc(b []byte, row sql.Row) []byte {
	if pr, ok := row.(*parquetRow); ok {
		// Columns straight to the encoder: no record object per row.
		vals := r.vals[:0]
		for _, ci := range pr.p.need {
			vals = append(vals, pr.Field(ci))
		}
		r.vals = vals
		return r.enc.row(b, pr.p.starNames(), vals)
	}
	doc := row.Doc()
	if je, ok := r.enc.(*jsonEncoder); ok {
		if doc.K == sql.Object {
			b = doc.AppendJSON(b)
		} else {
			b = sql.NewObject(&sql.Obj{Keys: []string{"_1"}, Vals: []sql.Value{doc}}).AppendJSON(b)
		}
		return append(b, je.delim...)
	}
	if doc.K == sql.Object {
		o := doc.ObjOf()
		return r.enc.row(b, o.Keys, o.Vals)
	}
	if doc.K == sql.List {
		return r.enc.row(b, nil, doc.ListOf())
	}
	return r.enc.row(b, []string{"_1"}, []sql.Value{doc})
}

// finish emits an aggregate query's row.
func (r *run) finish() error {
	if r.prog != nil && r.prog.Aggregate && r.prog.Limit != 0 {
		vals, err := r.prog.Result(r.vals)
		if err != nil {
			return err
		}
		r.buf = r.enc.row(r.buf, r.prog.Names, vals)
	}
	return nil
}

func (r *run) execParquet(in Input, start, end int64) error {
	r.scanned = &countingReader{}
	pr, err := openParquet(r.ctx, in, &r.scanned.n)
	if err != nil {
		return err
	}
	defer pr.close()
	r.procd = r.scanned
	if r.req.ScanRange != nil {
		pr.restrict(start, end)
	}
	schema := sql.Schema{Positional: true, Index: headerIndex(pr.names)}
	if r.prog, err = sql.CompileQuery(r.q, schema); err != nil {
		return err
	}
	pr.project(r.prog.AllFields, r.prog.Fields)
	r.names = r.prog.Names
	return r.loop(parquetSource{pr}, nil, 1<<62)
}
