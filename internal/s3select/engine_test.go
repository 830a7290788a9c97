package s3select

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// memInput is an Input over bytes.
type memInput []byte

func (m memInput) Size() int64 { return int64(len(m)) }
func (m memInput) Open(_ context.Context, off, n int64) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(m[off : off+n])), nil
}

type bufSink struct {
	bytes.Buffer
	progress, conts int
}

func (b *bufSink) Records(p []byte) error { _, err := b.Write(p); return err }
func (b *bufSink) Progress(Stats) error   { b.progress++; return nil }
func (b *bufSink) Cont() error            { b.conts++; return nil }

func csvReq(expr, header string) *Request {
	return &Request{Expression: expr, Input: InputSerialization{CSV: &CSVInput{FileHeaderInfo: header}},
		Output: OutputSerialization{CSV: &CSVOutput{}}}
}

func runSelect(t *testing.T, req *Request, data []byte) (string, error) {
	t.Helper()
	p, err := Native{}.Prepare(req)
	if err != nil {
		return "", err
	}
	var out bufSink
	_, err = p.Run(context.Background(), memInput(data), &out)
	return out.String(), err
}

const people = "name,age,city\nalice,30,paris\nbob,25,\"new york, ny\"\ncarol,41,berlin\n# not a comment by default\n"

func TestCSVQueries(t *testing.T) {
	cases := []struct{ q, header, want string }{
		{"SELECT * FROM S3Object", "USE", "alice,30,paris\nbob,25,\"new york, ny\"\ncarol,41,berlin\n# not a comment by default\n"},
		{"SELECT s.name FROM S3Object s WHERE CAST(s.age AS INT) > 26", "USE", "alice\ncarol\n"},
		{"SELECT name, age FROM S3Object WHERE city LIKE 'new%'", "USE", "bob,25\n"},
		{"SELECT s._1 FROM S3Object s WHERE s._2 = '41'", "IGNORE", "carol\n"},
		{"SELECT COUNT(*), SUM(CAST(age AS INT)), MAX(name) FROM S3Object WHERE age IS NOT NULL", "USE", "3,96,carol\n"},
		{"SELECT UPPER(name) AS n FROM S3Object LIMIT 2", "USE", "ALICE\nBOB\n"},
		{"SELECT name FROM S3Object WHERE age BETWEEN 25 AND 30 AND city IN ('paris', 'x')", "USE", "alice\n"},
		{"SELECT SUBSTRING(name FROM 2 FOR 3), CHAR_LENGTH(city) FROM S3Object WHERE name = 'carol'", "USE", "aro,6\n"},
		{"SELECT TRIM(LEADING 'a' FROM name) FROM S3Object WHERE name = 'alice'", "USE", "lice\n"},
		{"SELECT EXTRACT(YEAR FROM TO_TIMESTAMP('2021-03-04T05:06:07Z')), DATE_DIFF(DAY, TO_TIMESTAMP('2021-01-01'), TO_TIMESTAMP('2021-03-01')) FROM S3Object LIMIT 1", "USE", "2021,59\n"},
		{"SELECT TO_STRING(DATE_ADD(MONTH, 2, TO_TIMESTAMP('2021-01-31T00:00:00Z')), 'yyyy-MM-dd') FROM S3Object LIMIT 1", "USE", "2021-03-31\n"},
		{"SELECT COALESCE(NULLIF(name, 'bob'), 'none') FROM S3Object WHERE age < 30", "USE", "none\n"},
	}
	for _, c := range cases {
		got, err := runSelect(t, csvReq(c.q, c.header), []byte(people))
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.q, got, c.want)
		}
	}
}

func TestCSVOptions(t *testing.T) {
	req := csvReq("SELECT s._2 FROM S3Object s", "NONE")
	req.Input.CSV.FieldDelimiter = ";"
	req.Input.CSV.Comments = "#"
	req.Input.CSV.RecordDelimiter = "\r\n"
	req.Input.CSV.QuoteCharacter = "'"
	req.Input.CSV.AllowQuotedRecordDelimiter = true
	got, err := runSelect(t, req, []byte("#c\r\na;'x\r\ny';z\r\nb;'it''s'\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"x\r\ny\"\nit's\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestJSONAndGzip(t *testing.T) {
	doc := `{"a":{"b":[10,20]},"n":"x"} {"a":{"b":[30]},"n":"y"}`
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(doc))
	zw.Close()
	req := &Request{Expression: "SELECT s.a.b[0] AS v, s.n FROM S3Object s WHERE s.a.b[0] > 15",
		Input:  InputSerialization{JSON: &JSONInput{Type: "DOCUMENT"}, CompressionType: "GZIP"},
		Output: OutputSerialization{JSON: &JSONOutput{}}}
	got, err := runSelect(t, req, z.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"v":30,"n":"y"}` + "\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	req = &Request{Expression: "SELECT r.id FROM S3Object[*].rules[*] r",
		Input:  InputSerialization{JSON: &JSONInput{}},
		Output: OutputSerialization{CSV: &CSVOutput{}}}
	got, err = runSelect(t, req, []byte(`{"rules":[{"id":1},{"id":2}]}`))
	if err != nil || got != "1\n2\n" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestScanRangeSplitsAddUp(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 0; i < 500; i++ {
		b.WriteString(strings.Repeat("x", i%17))
		b.WriteString(",")
		b.WriteString(strings.Repeat("y", i%5))
		b.WriteString("\n")
	}
	assertSplitsAddUp(t, "SELECT * FROM S3Object", []byte(b.String()), 1, 7, 64, 1000)
}

// assertSplitsAddUp checks that query over data, run on consecutive scan
// ranges of each split size, gives what it gives over the whole object.
func assertSplitsAddUp(t *testing.T, query string, data []byte, splits ...int64) {
	t.Helper()
	whole, err := runSelect(t, csvReq(query, "USE"), data)
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range splits {
		var all strings.Builder
		for s := int64(0); s < int64(len(data)); s += split {
			req := csvReq(query, "USE")
			st, en := s, s+split-1
			req.ScanRange = &ScanRange{Start: &st, End: &en}
			got, err := runSelect(t, req, data)
			if err != nil {
				t.Fatal(err)
			}
			all.WriteString(got)
		}
		if all.String() != whole {
			t.Fatalf("split %d: splits give %d bytes, whole %d", split, all.Len(), len(whole))
		}
	}
}

// A record longer than the first window read past a split's end (its
// tail needs several, growing windows) belongs whole to the split it
// starts in.
func TestScanRangeLongRecordAcrossEnd(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "%d,%s\n", i, strings.Repeat("z", i*i*300))
	}
	assertSplitsAddUp(t, "SELECT s.id, CHAR_LENGTH(s.v) FROM S3Object s", []byte(b.String()), 10<<10, 100<<10, 333<<10)
}

func TestErrors(t *testing.T) {
	cases := []struct {
		q, data, code string
	}{
		{"SELECT FROM S3Object", people, "ParseUnexpectedToken"}, {"SELECT name FROM S3Object WHERE", people, "ParseExpectedExpression"},
		{"SELECT s._0 FROM S3Object s", people, "InvalidColumnIndex"},
		{"SELECT s.nope FROM S3Object s", people, "MissingHeaders"},
		{"SELECT * FROM S3Object WHERE name = 'x", people, "LexerInvalidLiteral"},
		{"SELECT * FROM S3Object s WHERE s.a.[1] = 1", people, "ParseInvalidPathComponent"},
		{"SELECT * FROM S3Object", "a,b\n\"x,y\n", "CSVParsingError"},
		{"SELECT CAST(name AS INT) FROM S3Object", people, "CastFailed"},
		{"SELECT FOO(name) FROM S3Object", people, "UnsupportedFunction"},
	}
	for _, c := range cases {
		_, err := runSelect(t, csvReq(c.q, "USE"), []byte(c.data))
		if err == nil || AsError(err).Code != c.code {
			t.Errorf("%s: got %v, want code %s", c.q, err, c.code)
		}
	}
}

func TestParallelScanMatchesSequential(t *testing.T) {
	data := benchCSV(1 << 20)
	var lines strings.Builder
	for i := 0; i < 20000; i++ {
		lines.WriteString(`{"a":` + strconv.Itoa(i) + `,"b":"x"}` + "\n")
	}
	jl := []byte(lines.String())
	cases := []struct {
		req  *Request
		data []byte
	}{
		{csvReq("SELECT * FROM S3Object s WHERE s.sel < 30", "USE"), data},
		{csvReq("SELECT s.user_id, s.bytes FROM S3Object s WHERE s.status = '500'", "USE"), data},
		{csvReq("SELECT s._2 FROM S3Object s", "NONE"), data},
		{&Request{Expression: "SELECT s.a FROM S3Object s WHERE s.a % 7 = 0", Input: InputSerialization{JSON: &JSONInput{Type: "LINES"}},
			Output: OutputSerialization{JSON: &JSONOutput{}}}, jl},
	}
	type prow struct {
		ID   int64  `parquet:"id"`
		Name string `parquet:"name"`
	}
	var prows []prow
	for i := 0; i < 20000; i++ {
		prows = append(prows, prow{int64(i), "n" + strconv.Itoa(i%97)})
	}
	var pq bytes.Buffer
	if err := parquet.Write(&pq, prows, parquet.MaxRowsPerRowGroup(700)); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct {
		req  *Request
		data []byte
	}{&Request{Expression: "SELECT * FROM S3Object s WHERE s.name LIKE 'n1%'", Input: InputSerialization{Parquet: &struct{}{}},
		Output: OutputSerialization{CSV: &CSVOutput{}}}, pq.Bytes()})
	for _, c := range cases {
		seq, err := Native{Workers: 1}.Prepare(c.req)
		if err != nil {
			t.Fatal(err)
		}
		var want bufSink
		wst, err := seq.Run(context.Background(), memInput(c.data), &want)
		if err != nil {
			t.Fatal(err)
		}
		par, _ := Native{Workers: 3, chunk: 4093}.Prepare(c.req)
		if !par.(*prepared).parallel(int64(len(c.data))) {
			t.Fatal("not run in parallel")
		}
		var got bufSink
		gst, err := par.Run(context.Background(), memInput(c.data), &got)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || gst.BytesReturned != wst.BytesReturned || want.Len() == 0 {
			t.Fatalf("%s: parallel result differs (%d vs %d bytes)", c.req.Expression, got.Len(), want.Len())
		}
	}
}

// A ScanRange split reads its own bytes and little more: past its end,
// only as much as finishes its last record.
func TestScanRangeReadsLittleBeyondItsEnd(t *testing.T) {
	data := benchCSV(4 << 20)
	req := csvReq("SELECT * FROM S3Object s WHERE s.sel >= 0", "USE")
	s, e := int64(1<<20), int64(2<<20-1)
	req.ScanRange = &ScanRange{Start: &s, End: &e}
	p, _ := Native{Workers: 1}.Prepare(req)
	st, err := p.Run(context.Background(), memInput(data), &bufSink{})
	if err != nil {
		t.Fatal(err)
	}
	if st.BytesScanned < 1<<20 || st.BytesScanned > 1<<20+32<<10 {
		t.Fatalf("a 1 MiB split scanned %d bytes", st.BytesScanned)
	}
}

// A JSON document is one record: one larger than the record bound fails
// with OverMaxRecordSize instead of being held whole in memory, while
// many documents adding up to more than the bound are read one by one.
func TestJSONDocumentBounded(t *testing.T) {
	req := func() *Request {
		return &Request{Expression: "SELECT COUNT(*) FROM S3Object[*][*] s",
			Input: InputSerialization{JSON: &JSONInput{Type: "DOCUMENT"}}, Output: OutputSerialization{CSV: &CSVOutput{}}}
	}
	var big bytes.Buffer
	big.WriteString("[")
	for i := 0; big.Len() <= maxRecordSize+(1<<20); i++ {
		if i > 0 {
			big.WriteString(",")
		}
		big.WriteString(`{"id":` + strconv.Itoa(i) + `,"pad":"` + strings.Repeat("x", 100) + `"}`)
	}
	big.WriteString("]")
	if _, err := runSelect(t, req(), big.Bytes()); err == nil || AsError(err).Code != CodeOverMaxRecordSize {
		t.Fatalf("one %d-byte document: got %v, want %s", big.Len(), err, CodeOverMaxRecordSize)
	}
	var many bytes.Buffer
	n := 0
	for ; many.Len() <= 2*maxRecordSize; n++ {
		many.WriteString(`[{"id":` + strconv.Itoa(n) + `,"pad":"` + strings.Repeat("y", 1000) + `"}]` + "\n")
	}
	got, err := runSelect(t, req(), many.Bytes())
	if err != nil || got != strconv.Itoa(n)+"\n" {
		t.Fatalf("%d small documents: got %q, %v", n, got, err)
	}
}

// QuoteEscapeCharacter other than the quote: an escaped quote or escape
// character inside quotes is taken literally.
func TestCSVQuoteEscapeCharacter(t *testing.T) {
	req := csvReq("SELECT s._1, s._2 FROM S3Object s", "NONE")
	req.Input.CSV.QuoteEscapeCharacter = `\`
	req.Output.JSON, req.Output.CSV = &JSONOutput{}, nil
	got, err := runSelect(t, req, []byte(`"a\"b","c\\d"`+"\n"+`"x, y",plain`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"_1":"a\"b","_2":"c\\d"}` + "\n" + `{"_1":"x, y","_2":"plain"}` + "\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}
