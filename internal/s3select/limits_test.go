package s3select

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

var update = flag.Bool("update", false, "rewrite testdata/parquet-bomb.parquet")

// parquetBomb returns a Parquet file of one int64 column whose one page
// is replaced by header: its data is zstd of the header's uncompressed
// size of zeros (a 512 MiB page compresses to ~16 KB).
func parquetBomb(t testing.TB, header format.PageHeader) []byte {
	t.Helper()
	type row struct {
		X int64 `parquet:"x,zstd"`
	}
	var small bytes.Buffer
	if err := parquet.Write(&small, []row{{1}}); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(small.Bytes()), int64(small.Len()))
	if err != nil {
		t.Fatal(err)
	}
	meta := *f.Metadata()

	var z bytes.Buffer
	enc, err := zstd.NewWriter(&z, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := int(header.UncompressedPageSize); left > 0; left -= len(zeros) {
		if _, err := enc.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	header.CompressedPageSize = int32(z.Len())
	hdr, err := thrift.Marshal(&thrift.CompactProtocol{}, &header)
	if err != nil {
		t.Fatal(err)
	}

	rg := meta.RowGroups[0]
	cc := rg.Columns[0]
	md := cc.MetaData
	md.DataPageOffset, md.DictionaryPageOffset, md.IndexPageOffset = 4, 0, 0
	md.TotalCompressedSize = int64(len(hdr) + z.Len())
	md.TotalUncompressedSize = int64(len(hdr)) + int64(header.UncompressedPageSize)
	cc.MetaData, cc.FileOffset = md, 4
	cc.ColumnIndexOffset, cc.ColumnIndexLength, cc.OffsetIndexOffset, cc.OffsetIndexLength = 0, 0, 0, 0
	rg.Columns = []format.ColumnChunk{cc}
	rg.TotalByteSize = md.TotalUncompressedSize
	meta.RowGroups = []format.RowGroup{rg}
	footer, err := thrift.Marshal(&thrift.CompactProtocol{}, &meta)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte("PAR1"), hdr...)
	out = append(out, z.Bytes()...)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

func dataPage(uncompressed, values int32) format.PageHeader {
	h := format.PageHeader{Type: format.DataPage, UncompressedPageSize: uncompressed}
	h.DataPageHeader.Valid = true
	h.DataPageHeader.V = format.DataPageHeader{NumValues: values, Encoding: format.Plain,
		DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE}
	return h
}

func parquetReq() *Request {
	return &Request{Expression: "SELECT COUNT(*) FROM S3Object s WHERE s.x > 0", Input: InputSerialization{Parquet: &struct{}{}},
		Output: OutputSerialization{CSV: &CSVOutput{}}}
}

// TestParquetBomb is issue 22's attack: a ~16 KB object declaring one
// 512 MiB zstd page cost ~520 MB per select. The page header is refused
// with OverMaxParquetBlockSize before anything it declares is allocated.
// The file is kept in testdata for the e2e test against `facet serve`.
func TestParquetBomb(t *testing.T) {
	path := filepath.Join("testdata", "parquet-bomb.parquet")
	bomb, err := os.ReadFile(path)
	if *update || err != nil {
		bomb = parquetBomb(t, dataPage(512<<20, 512<<20/8))
		if *update {
			if err := os.WriteFile(path, bomb, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes; want a small file", len(bomb))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = runSelect(t, parquetReq(), bomb)
	runtime.ReadMemStats(&after)
	if e := AsError(err); e.Code != CodeOverMaxParquetBlockSize {
		t.Fatalf("err = %v; want %s", err, CodeOverMaxParquetBlockSize)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("a select over the bomb allocated %d MB; want < 16 MB", got>>20)
	}
}

func TestParquetPageLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		page format.PageHeader
		code string
	}{
		{"page over the limit", dataPage(maxParquetPage+1, 1), CodeOverMaxParquetBlockSize},
		{"values over the limit", dataPage(64, maxParquetPageValues+1), CodeOverMaxParquetBlockSize},
		{"page at the limit", dataPage(maxParquetPage, maxParquetPage/8), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runSelect(t, parquetReq(), parquetBomb(t, tc.page))
			if tc.code == "" {
				if e := AsError(err); err != nil && e.Code == CodeOverMaxParquetBlockSize {
					t.Fatalf("refused a page within the limits: %v", err)
				}
				return
			}
			if e := AsError(err); e.Code != tc.code {
				t.Fatalf("err = %v; want %s", err, tc.code)
			}
		})
	}
	dict := format.PageHeader{Type: format.DictionaryPage, UncompressedPageSize: maxParquetDictionary + 1}
	dict.DictionaryPageHeader.Valid = true
	dict.DictionaryPageHeader.V = format.DictionaryPageHeader{NumValues: 1, Encoding: format.Plain}
	if _, err := runSelect(t, parquetReq(), parquetBomb(t, dict)); AsError(err).Code != CodeOverMaxParquetBlockSize {
		t.Fatalf("dictionary: err = %v; want %s", err, CodeOverMaxParquetBlockSize)
	}
}

// TestParquetFooterLimits: a trailer declaring a footer longer than the
// object, or than the limit, is refused before it is allocated.
func TestParquetFooterLimits(t *testing.T) {
	var small bytes.Buffer
	if err := parquet.Write(&small, []struct{ X int64 }{{1}}); err != nil {
		t.Fatal(err)
	}
	b := small.Bytes()
	for _, n := range []uint32{1 << 31, uint32(len(b))} {
		bad := append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(bad[len(bad)-8:], n)
		_, err := runSelect(t, parquetReq(), bad)
		if AsError(err).Code != CodeParquetParsingError {
			t.Errorf("footer of %d bytes: err = %v; want %s", n, err, CodeParquetParsingError)
		}
	}
	big := make([]byte, maxParquetFooter+64)
	binary.LittleEndian.PutUint32(big[len(big)-8:], maxParquetFooter+1)
	var e *Error
	if _, err := checkFooter(bytes.NewReader(big), int64(len(big))); !errors.As(err, &e) || e.Code != CodeOverMaxParquetBlockSize {
		t.Errorf("footer over the limit: %v", err)
	}
}

// parquetWithFooter is a Parquet file of no data and the given footer.
func parquetWithFooter(footer []byte) []byte {
	f := append([]byte("PAR1"), footer...)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(footer)))
	return append(f, "PAR1"...)
}

// TestParquetFooterListBomb: a 25-byte object whose footer declares a
// list of 2^31 schema elements made parquet-go ask for 206 GB, a fatal
// error that killed the server; a footer nested deeper than the decoder's
// stack allows would too. Both are refused before decoding.
func TestParquetFooterListBomb(t *testing.T) {
	list := []byte{0x15, 0x02, 0x19, 0xFC} // version=1, schema: list<struct> of
	list = binary.AppendUvarint(list, 1<<31-1)
	list = append(list, 0x00, 0x00, 0x00)
	deep := []byte{0x15, 0x02}
	for range 100_000 {
		deep = append(deep, 0x1C) // a struct field, delta 1
	}
	deep = append(deep, bytes.Repeat([]byte{0}, 100_001)...)
	for name, footer := range map[string][]byte{"list": list, "deep": deep} {
		_, err := runSelect(t, parquetReq(), parquetWithFooter(footer))
		if e := AsError(err); e.Code != CodeParquetParsingError {
			t.Errorf("%s: err = %v; want %s", name, err, CodeParquetParsingError)
		}
	}
}

func FuzzScanThrift(f *testing.F) {
	var small bytes.Buffer
	if err := parquet.Write(&small, []struct {
		X int64
		Y string
	}{{1, "a"}}); err != nil {
		f.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(small.Bytes()), int64(small.Len()))
	if err != nil {
		f.Fatal(err)
	}
	meta, err := thrift.Marshal(&thrift.CompactProtocol{}, pf.Metadata())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(meta)
	hdr, _ := thrift.Marshal(&thrift.CompactProtocol{}, &format.PageHeader{Type: format.DataPage, UncompressedPageSize: 8, CompressedPageSize: 8})
	f.Add(hdr)
	f.Add([]byte{0x15, 0x02, 0x19, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := scanThrift(data, 1<<20)
		if err != nil {
			return
		}
		if n <= 0 || n > len(data) {
			t.Fatalf("scanned %d of %d bytes", n, len(data))
		}
		// What the scan accepts parquet-go decodes within the bounds:
		// the allocation of its lists is what the budget charged.
		var md format.FileMetaData
		pr := (&thrift.CompactProtocol{}).NewReaderFromBytes(data[:n])
		_ = thrift.NewDecoder(pr).Decode(&md)
	})
}

// TestParquetRowGroupBudget: the columns of a row group together may not
// hold more than the budget at once, each within its own limits.
func TestParquetRowGroupBudget(t *testing.T) {
	budget := &rowGroupBudget{limit: 101 << 20}
	a := &chunkGuard{column: "a", budget: budget}
	b := &chunkGuard{column: "b", budget: budget}
	page := dataPage(40<<20, 1)
	page.CompressedPageSize = 10 << 20
	if err := a.admit(&page, 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := a.admit(&page, 1<<30); err != nil || budget.used != 50<<20+4 {
		t.Fatalf("a second page as large is held in place of the first: %v, used %d", err, budget.used)
	}
	if err := b.admit(&page, 1<<30); err != nil {
		t.Fatal(err)
	}
	bigger := dataPage(41<<20, 1)
	bigger.CompressedPageSize = 10 << 20
	if err := b.admit(&bigger, 1<<30); AsError(err).Code != CodeOverMaxParquetBlockSize {
		t.Fatalf("err = %v; want %s", err, CodeOverMaxParquetBlockSize)
	}
	short := dataPage(10, 1)
	short.CompressedPageSize = 100
	if err := (&chunkGuard{column: "c", budget: &rowGroupBudget{limit: 1 << 30}}).admit(&short, 99); AsError(err).Code != CodeParquetParsingError {
		t.Fatalf("a page longer than its chunk: %v", err)
	}
}

// allocDuring returns the bytes allocated while f runs.
func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func jsonReq(typ string) *Request {
	return &Request{Expression: "SELECT COUNT(*) FROM S3Object s", Input: InputSerialization{JSON: &JSONInput{Type: typ}},
		Output: OutputSerialization{CSV: &CSVOutput{}}}
}

// TestJSONRecordDecodedLimit: a value costs 56 bytes decoded whatever its
// size in the input, so 8 MiB of "[0,0,..." would cost ~450 MB; a record
// is refused once its values pass maxRecordDecoded.
func TestJSONRecordDecodedLimit(t *testing.T) {
	zeros := []byte("[" + strings.Repeat("0,", 4<<20-8) + "0]")
	objs := []byte("[" + strings.Repeat("{},", 8<<20/3-8) + "{}]")
	for _, tc := range []struct {
		name string
		typ  string
		data []byte
	}{
		{"document of zeros", "DOCUMENT", zeros},
		{"document of empty objects", "DOCUMENT", objs},
		{"line of zeros", "LINES", append(append([]byte("{}\n"), zeros...), '\n')},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			got := allocDuring(func() { _, err = runSelect(t, jsonReq(tc.typ), tc.data) })
			if e := AsError(err); e.Code != CodeOverMaxRecordSize {
				t.Fatalf("err = %v; want %s", err, CodeOverMaxRecordSize)
			}
			// Slices grow by a quarter past 256 elements: what they
			// allocate in all is ~5 times what they end up holding, and
			// a line's buffer grows to hold it. The whole record decoded
			// would allocate over 1 GB.
			if got > 7*maxRecordDecoded {
				t.Errorf("refusing it allocated %d MB; want < %d MB", got>>20, 7*maxRecordDecoded>>20)
			}
		})
	}
	// A document of typical records the size of the record bound passes.
	rec := `{"id":12345,"user":"alice","status":"500","bytes":1024,"path":"/a/b/c"},`
	doc := "[" + strings.Repeat(rec, (maxRecordSize-1024)/len(rec)) + "{}]"
	if out, err := runSelect(t, jsonReq("DOCUMENT"), []byte(doc)); err != nil || out != "1\n" {
		t.Fatalf("a %d-byte document of records: %q, %v", len(doc), out, err)
	}
}

// TestCSVColumnLimit: a field costs a 16-byte string header for one byte
// of record; a record of more than maxColumns fields is refused before it
// is split.
func TestCSVColumnLimit(t *testing.T) {
	data := []byte("a\n" + strings.Repeat(",", 4<<20) + "\n")
	// JSON output splits every field (CSV output copies records whole).
	req := csvReq("SELECT * FROM S3Object", "NONE")
	req.Output = OutputSerialization{JSON: &JSONOutput{}}
	var err error
	got := allocDuring(func() { _, err = runSelect(t, req, data) })
	if e := AsError(err); e.Code != CodeOverMaxColumn {
		t.Fatalf("err = %v; want %s", err, CodeOverMaxColumn)
	}
	if got > 32<<20 {
		t.Errorf("refusing it allocated %d MB", got>>20)
	}
	ok := []byte(strings.Repeat("x,", maxColumns-1) + "x\n")
	if _, err := runSelect(t, req, ok); err != nil {
		t.Fatalf("a record of %d fields: %v", maxColumns, err)
	}
}

// TestDecompressionBomb: a compressed stream may expand only so far.
func TestDecompressionBomb(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(bytes.Repeat([]byte("a,b\n"), 1<<20))
	zw.Close()
	req := csvReq("SELECT COUNT(*) FROM S3Object", "NONE")
	req.Input.CompressionType = "GZIP"
	p, err := Native{maxExpand: 1 << 20}.Prepare(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), memInput(z.Bytes()), &bufSink{}); AsError(err).Code != CodeInvalidCompressionFormat || !strings.Contains(err.Error(), "decompression bomb") {
		t.Fatalf("err = %v; want %s naming the bomb", err, CodeInvalidCompressionFormat)
	}
	p, _ = Native{maxExpand: 4 << 20}.Prepare(req)
	var out bufSink
	if _, err := p.Run(context.Background(), memInput(z.Bytes()), &out); err != nil || out.String() != "1048576\n" {
		t.Fatalf("within the limit: %q, %v", out.String(), err)
	}
	if got := (&prepared{}).expansion(1 << 20); got != 2<<30 {
		t.Errorf("a 1 MiB stream may expand to %d; want 2 GiB", got)
	}
}

// TestSelectRequestNestedXML: the SelectObjectContent body goes through
// the same XML pre-scan as every S3 body.
func TestSelectRequestNestedXML(t *testing.T) {
	body := "<SelectObjectContentRequest>" + strings.Repeat("<a>", 50_000)
	_, err := ParseRequest(strings.NewReader(body))
	if e := AsError(err); e.Code != CodeMalformedXML || !strings.Contains(e.Message, "maximum of 16") {
		t.Fatalf("err = %v; want MalformedXML naming the depth limit", err)
	}
}

// TestParquetPageHeaderInvalid: a page header that is not valid Thrift is
// refused at once, not read again in growing windows.
func TestParquetPageHeaderInvalid(t *testing.T) {
	calls := 0
	src := countingReaderAt{r: bytes.NewReader(bytes.Repeat([]byte{0x0F}, 1<<20)), calls: &calls}
	g := &chunkGuard{r: src, column: "x", end: 1 << 20, budget: &rowGroupBudget{limit: 1 << 30}}
	if _, err := g.ReadAt(make([]byte, 64), 0); AsError(err).Code != CodeParquetParsingError {
		t.Fatalf("err = %v; want %s", err, CodeParquetParsingError)
	}
	if calls != 1 {
		t.Errorf("%d reads; want 1", calls)
	}
}

type countingReaderAt struct {
	r     io.ReaderAt
	calls *int
}

func (c countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	*c.calls++
	return c.r.ReadAt(p, off)
}

// TestParquetChunkBounds: a column chunk is bounded by the object whatever
// its metadata declares, so a page declaring more compressed bytes than
// the object holds is refused before its buffer is allocated.
func TestParquetChunkBounds(t *testing.T) {
	md := &format.ColumnMetaData{DataPageOffset: 4, TotalCompressedSize: 1 << 40}
	g, err := newChunkGuard(nil, 1000, "x", md, &rowGroupBudget{limit: 1 << 40})
	if err != nil || g.end != 1000 {
		t.Fatalf("guard %+v, %v; want the chunk to end with the object", g, err)
	}
	page := dataPage(16, 1)
	page.CompressedPageSize = 1 << 30
	if err := g.admit(&page, g.end-g.next-20); AsError(err).Code != CodeParquetParsingError {
		t.Fatalf("err = %v; want %s", err, CodeParquetParsingError)
	}
	if _, err := newChunkGuard(nil, 1000, "x", &format.ColumnMetaData{DataPageOffset: -5, TotalCompressedSize: 10}, nil); AsError(err).Code != CodeParquetParsingError {
		t.Fatalf("a negative offset: %v", err)
	}
}
