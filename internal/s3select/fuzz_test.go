package s3select

import (
	"context"
	"strings"
	"testing"
)

// FuzzCSV runs the CSV reader over arbitrary bytes and options: it never
// panics, fails only with S3 Select error codes, and two ScanRange splits
// of an input add up to exactly the whole result.
func FuzzCSV(f *testing.F) {
	f.Add([]byte("a,b,c\n1,\"x,y\",3\n\"q\"\"q\",,\n"), uint8(0), uint16(7))
	f.Add([]byte("#c\r\n1;'a\r\nb';2\r\n"), uint8(7), uint16(3))
	f.Add([]byte("x\n\"open\n"), uint8(1), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, opts uint8, cut uint16) {
		in := &CSVInput{FileHeaderInfo: "NONE"}
		if opts&1 != 0 {
			in.FieldDelimiter = ";"
		}
		if opts&2 != 0 {
			in.QuoteCharacter = "'"
		}
		if opts&4 != 0 {
			in.Comments = "#"
		}
		if opts&8 != 0 {
			in.RecordDelimiter = "\r\n"
		}
		if opts&16 != 0 {
			in.QuoteEscapeCharacter = "\\"
		}
		quoted := opts&32 != 0
		in.AllowQuotedRecordDelimiter = quoted
		mk := func(sr *ScanRange) *Request {
			c := *in
			return &Request{Expression: "SELECT * FROM S3Object", Input: InputSerialization{CSV: &c},
				Output: OutputSerialization{CSV: &CSVOutput{}}, ScanRange: sr}
		}
		whole, err := runSelect(t, mk(nil), data)
		if err != nil {
			if AsError(err).Code == CodeInternalError {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		if quoted || len(data) < 2 {
			return
		}
		c := int64(cut) % int64(len(data)-1)
		end1, start2, end2 := c, c+1, int64(len(data)-1)
		zero := int64(0)
		a, err1 := runSelect(t, mk(&ScanRange{Start: &zero, End: &end1}), data)
		b, err2 := runSelect(t, mk(&ScanRange{Start: &start2, End: &end2}), data)
		if err1 != nil || err2 != nil {
			t.Fatalf("splits failed where the whole did not: %v, %v", err1, err2)
		}
		if a+b != whole {
			t.Fatalf("split at %d: %q + %q != %q", c, a, b, whole)
		}
	})
}

// FuzzJSON: the JSON reader never panics and fails with coded errors.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"\u00e9"}],"c":-1.5e3} {"a":null}`), true)
	f.Add([]byte("{\"a\":1}\n[1,2]\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, doc bool) {
		typ := "LINES"
		if doc {
			typ = "DOCUMENT"
		}
		req := &Request{Expression: "SELECT s.a[0], s.c FROM S3Object s", Input: InputSerialization{JSON: &JSONInput{Type: typ}},
			Output: OutputSerialization{JSON: &JSONOutput{}}}
		p, err := Native{}.Prepare(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background(), memInput(data), &discardSink{}); err != nil && AsError(err).Code == CodeInternalError {
			t.Fatalf("uncoded error: %v", err)
		}
	})
}

// FuzzSplit checks the word-at-a-time field splitter against
// strings.Split on unquoted records, with and without a field limit.
func FuzzSplit(f *testing.F) {
	f.Add("a,b,,c,dddddddddddd,e", uint8(3))
	f.Add(",,,,,,,,,,,,,,,,,", uint8(0))
	f.Add("\x01,\x00,\xff,,\x2c\x2d", uint8(2))
	f.Fuzz(func(t *testing.T, line string, need uint8) {
		if strings.ContainsAny(line, "\"\n") {
			return
		}
		c := &csvReader{fd: ',', q: '"', esc: '"'}
		want := strings.Split(line, ",")
		c.need = int(need%12) - 1
		if err := c.split([]byte(line), 0); err != nil {
			t.Fatal(err)
		}
		if c.need >= 0 && len(want) > c.need {
			want = want[:c.need]
		}
		if strings.Join(c.row.fields, "\x00") != strings.Join(want, "\x00") || len(c.row.fields) != len(want) {
			t.Fatalf("%q need %d: %q, want %q", line, c.need, c.row.fields, want)
		}
	})
}

// FuzzSplitQuoted checks the one-pass splitter of quoted records against
// the general one, on the records it accepts, with and without a field
// limit.
func FuzzSplitQuoted(f *testing.F) {
	f.Add(`1,"u9710",2024-12-03 16:37:12,"PUT","/data/obj-0.csv",736374,"ap-south",81`, uint8(0))
	f.Add(`"a,b","",,"c"`, uint8(3))
	f.Add(`"",x,"y"`, uint8(12))
	f.Add(`"a""b",c`, uint8(0))
	f.Fuzz(func(t *testing.T, line string, need uint8) {
		if strings.Contains(line, "\n") {
			return
		}
		n := int(need%12) - 1
		fast := &csvReader{fd: ',', q: '"', esc: '"', need: n}
		if !fast.splitQuoted([]byte(line)) {
			return
		}
		gen := &csvReader{fd: ',', q: '"', esc: '"', need: -1}
		if err := gen.splitGeneral([]byte(line), 0); err != nil {
			// Fine only when the bad field is past the fields asked for.
			if n < 0 || len(fast.row.fields) != n {
				t.Fatalf("%q: the fast path accepted it, the general one: %v", line, err)
			}
			return
		}
		want := gen.row.fields
		if n >= 0 && len(want) > n {
			want = want[:n]
		}
		if strings.Join(fast.row.fields, "\x00") != strings.Join(want, "\x00") || len(fast.row.fields) != len(want) {
			t.Fatalf("%q need %d: %q, want %q", line, n, fast.row.fields, want)
		}
	})
}
