package s3select

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// A Parquet page declares its sizes and value count in its header, and
// parquet-go allocates what they say before it reads or decompresses a
// byte: a 16 KB object declaring one 512 MiB zstd page cost ~520 MB. The
// bounds below are checked on every header before parquet-go sees it
// (chunkGuard), and on the footer's length before it is allocated.
const (
	// maxParquetPage bounds a data page's uncompressed size (writers
	// default to 1 MiB pages).
	maxParquetPage = 64 << 20
	// maxParquetDictionary bounds a dictionary page's uncompressed size
	// (writers fall back to plain encoding past 1 MiB).
	maxParquetDictionary = 64 << 20
	// maxParquetPageValues bounds a page's value count: levels, offsets
	// and dictionary indexes cost a few bytes per value whatever the
	// page's size (an all-null page encodes millions of values in bytes).
	// A page of int64 at maxParquetPage holds this many.
	maxParquetPageValues = maxParquetPage / 8
	// maxParquetRowGroup bounds the pages held at once while reading a row
	// group: the largest page of every column read plus its dictionary,
	// compressed and uncompressed. S3's OverMaxParquetBlockSize is its
	// error.
	maxParquetRowGroup = 256 << 20
	// maxParquetFooter bounds the footer (the file's metadata), read whole.
	maxParquetFooter = 16 << 20
	// maxPageHeader bounds one page header (its statistics hold min and
	// max values).
	maxPageHeader = 1 << 20
)

// rowGroupBudget is what the column chunks of one row group may hold.
type rowGroupBudget struct{ used, limit int64 }

// chunkGuard is the io.ReaderAt a column chunk's pages are read through:
// it decodes each page header in the bytes it returns, within the chunk's
// bounds, and fails the read of a header past a limit, so no allocation
// that header asks for happens.
type chunkGuard struct {
	r        io.ReaderAt
	column   string
	next     int64 // offset of the first header not yet checked
	end      int64 // end of the chunk
	budget   *rowGroupBudget
	page     int64 // cost of the chunk's largest data page so far
	dict     int64 // cost of its dictionary
	checkErr error
}

// newChunkGuard guards the chunk md describes in an object of size bytes.
func newChunkGuard(r io.ReaderAt, size int64, column string, md *format.ColumnMetaData, budget *rowGroupBudget) (*chunkGuard, error) {
	// The same bounds parquet-go reads the chunk within, and the object's:
	// a page is no longer than the bytes that hold it.
	base := md.DataPageOffset
	if md.DictionaryPageOffset != 0 {
		base = md.DictionaryPageOffset
	}
	if base < 0 || md.TotalCompressedSize < 0 || base > size {
		return nil, newError(CodeParquetParsingError, "column %s: the column chunk at offset %d of %d bytes is not in the object", column, base, md.TotalCompressedSize)
	}
	end := base + min(md.TotalCompressedSize, size-base)
	return &chunkGuard{r: r, column: column, next: base, end: end, budget: budget}, nil
}

func (g *chunkGuard) ReadAt(p []byte, off int64) (int, error) {
	if g.checkErr != nil {
		return 0, g.checkErr
	}
	n, err := g.r.ReadAt(p, off)
	for g.next < off+int64(n) && g.next < g.end {
		if cerr := g.checkHeader(p[:n], off); cerr != nil {
			g.checkErr = cerr
			return 0, cerr
		}
	}
	return n, err
}

// checkHeader decodes the header at g.next, from p (read at off) when it
// holds it whole, else by reading it on its own, and moves g.next past
// its page.
func (g *chunkGuard) checkHeader(p []byte, off int64) error {
	var h format.PageHeader
	hlen := -1
	if g.next >= off {
		hlen = decodePageHeader(p[g.next-off:], &h)
	}
	for win := int64(4 << 10); hlen == -1; win *= 2 {
		w := min(win, g.end-g.next, maxPageHeader)
		buf := make([]byte, w)
		n, err := g.r.ReadAt(buf, g.next)
		if n < len(buf) && err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		h = format.PageHeader{}
		if hlen = decodePageHeader(buf[:n], &h); hlen != -1 {
			break
		}
		if w == g.end-g.next || w == maxPageHeader || n < len(buf) {
			hlen = -2
		}
	}
	if hlen < 0 {
		return newError(CodeParquetParsingError, "column %s: the page header at offset %d is not valid, or longer than its chunk or %d bytes", g.column, g.next, maxPageHeader)
	}
	if err := g.admit(&h, g.end-g.next-int64(hlen)); err != nil {
		return err
	}
	g.next += int64(hlen) + int64(h.CompressedPageSize)
	return nil
}

// decodePageHeader decodes a page header from the start of b and returns
// its length: -1 when b may end inside it, -2 when it is not valid
// whatever follows. Lengths inside it are bounded by b (a bytes reader
// allocates nothing for them).
func decodePageHeader(b []byte, h *format.PageHeader) int {
	// A page header has no list worth a kilobyte decoded; its scan bounds
	// the nesting parquet-go's decoder would recurse into.
	n, err := scanThrift(b, 64<<10)
	if errors.Is(err, errThriftShort) {
		return -1
	}
	if err != nil {
		return -2
	}
	pr := (&thrift.CompactProtocol{}).NewReaderFromBytes(b[:n])
	if err := thrift.NewDecoder(pr).Decode(h); err != nil {
		return -2
	}
	return pr.BytesRead()
}

// admit checks a page header against the limits; room is what is left of
// the chunk after the header.
func (g *chunkGuard) admit(h *format.PageHeader, room int64) error {
	if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 || int64(h.CompressedPageSize) > room {
		return newError(CodeParquetParsingError, "column %s: a page at offset %d declares %d bytes; %d are left in its column chunk", g.column, g.next, h.CompressedPageSize, room)
	}
	limit, kind := int64(maxParquetPage), "data page"
	var values int32
	switch {
	case h.DictionaryPageHeader.Valid:
		limit, kind, values = maxParquetDictionary, "dictionary page", h.DictionaryPageHeader.V.NumValues
	case h.DataPageHeader.Valid:
		values = h.DataPageHeader.V.NumValues
	case h.DataPageHeaderV2.Valid:
		values = h.DataPageHeaderV2.V.NumValues
	}
	if int64(h.UncompressedPageSize) > limit || int64(h.CompressedPageSize) > limit+limit/8 {
		return newError(CodeOverMaxParquetBlockSize, "column %s: a %s at offset %d declares %d bytes uncompressed, %d compressed; the maximum is %d", g.column, kind, g.next, h.UncompressedPageSize, h.CompressedPageSize, limit)
	}
	if values > maxParquetPageValues {
		return newError(CodeOverMaxParquetBlockSize, "column %s: a %s at offset %d declares %d values; the maximum is %d", g.column, kind, g.next, values, maxParquetPageValues)
	}
	cost := int64(h.UncompressedPageSize) + int64(h.CompressedPageSize) + 4*int64(max(values, 0))
	held := &g.page
	if h.DictionaryPageHeader.Valid {
		held = &g.dict
	}
	if cost > *held {
		g.budget.used += cost - *held
		*held = cost
		if g.budget.used > g.budget.limit {
			return newError(CodeOverMaxParquetBlockSize, "a row group's pages need more than %d bytes at once to read the columns the query uses", g.budget.limit)
		}
	}
	return nil
}

// maxParquetFooterDecoded bounds what the footer's lists cost decoded
// (a ColumnChunk is ~560 bytes: 200,000 of them fit).
const maxParquetFooterDecoded = 256 << 20

// checkFooter reads a Parquet file's footer and refuses one longer than
// the file or maxParquetFooter, or whose metadata scanThrift refuses,
// before parquet-go allocates or decodes it. It returns a reader that
// serves the bytes it read from memory, for parquet-go's open.
func checkFooter(r io.ReaderAt, size int64) (io.ReaderAt, error) {
	if size < 12 {
		return nil, newError(CodeParquetParsingError, "the object is %d bytes: too short for a Parquet file", size)
	}
	// The trailer, then the footer: the bytes parquet-go reads to open
	// the file, which it then reads from memory (a larger first read
	// would count as bytes scanned that a query need not read).
	tail := make([]byte, 8)
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the Parquet footer: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if n > size-12 {
		return nil, newError(CodeParquetParsingError, "the footer declares %d bytes; the object has %d", n, size)
	}
	if n > maxParquetFooter {
		return nil, newError(CodeOverMaxParquetBlockSize, "the footer is %d bytes; the maximum is %d", n, maxParquetFooter)
	}
	if n > 0 {
		tail = append(make([]byte, n), tail...)
		if _, err := r.ReadAt(tail[:n], size-n-8); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read the Parquet footer: %w", err)
		}
	}
	footer := tail[int64(len(tail))-8-n : int64(len(tail))-8]
	if string(tail[len(tail)-4:]) == "PAR1" {
		// (An encrypted footer, "PARE", is refused by parquet-go.)
		if used, err := scanThrift(footer, maxParquetFooterDecoded); err != nil {
			return nil, newError(CodeParquetParsingError, "the file's metadata is not valid or too large: %v", err)
		} else if used < len(footer)-28 {
			// Past the metadata only a 28-byte signature may follow.
			return nil, newError(CodeParquetParsingError, "the footer has %d bytes after its metadata", len(footer)-used)
		}
	}
	return &tailReader{r: r, off: size - int64(len(tail)), b: tail}, nil
}

// tailReader serves the reads of an object's tail from memory.
type tailReader struct {
	r   io.ReaderAt
	off int64
	b   []byte
}

func (t *tailReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= t.off && off+int64(len(p)) <= t.off+int64(len(t.b)) {
		return copy(p, t.b[off-t.off:]), nil
	}
	return t.r.ReadAt(p, off)
}
