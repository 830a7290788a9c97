package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/facet-sds/facet/internal/obs"
)

// obsDone is a finished 4 KiB PutObject as the S3 front end reports it.
func obsDone() *obs.Observation {
	return &obs.Observation{Op: "PutObject", Method: "PUT", Tenant: "acme", Bucket: "b", Key: "photos/2026/img.jpg",
		Start: time.Now(), RequestID: "0123456789abcdef", Remote: "127.0.0.1:40000", AccessKey: "FKABCDEFGHIJKLMNOPQR",
		Status: 200, BytesIn: 4096, Duration: time.Millisecond}
}

// value reads a counter.
func value(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func readLines(t *testing.T, path string) []Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestWriterOrderAndClose: records come out one JSON line each, in the
// order recorded, all of them by Close; times are UTC.
func TestWriterOrderAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		l.Record(Record{Kind: KindS3, Op: "PutObject", Key: fmt.Sprint(i), Status: 200, Result: ResultOK})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readLines(t, path)
	if len(recs) != 500 {
		t.Fatalf("%d lines, want 500", len(recs))
	}
	for i, r := range recs {
		if r.Key != fmt.Sprint(i) || r.Time.Location() != time.UTC || r.Time.IsZero() {
			t.Fatalf("line %d: %+v", i, r)
		}
	}
	l.Record(Record{Kind: KindS3}) // after Close: dropped, counted, no panic
	if got := value(t, l.metrics.dropped); got != 1 {
		t.Fatalf("dropped after close: %v", got)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestRotationKeepsN: past MaxSize the file rotates to PATH.1 .. PATH.Keep;
// older ones are deleted, and no line is lost from what is kept.
func TestRotationKeepsN(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l, err := Open(Config{Path: path, MaxSize: 1000, Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		l.Record(Record{Kind: KindAdmin, Op: "createTenant", Tenant: fmt.Sprintf("t%03d", i), Status: 201, Result: ResultOK})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "audit.log audit.log.1 audit.log.2 audit.log.3" {
		t.Fatalf("files: %v", names)
	}
	// The kept files hold the newest lines, contiguous, oldest in .3.
	var all []Record
	for _, p := range []string{path + ".3", path + ".2", path + ".1", path} {
		st, _ := os.Stat(p)
		if st.Size() > 1000 {
			t.Fatalf("%s: %d bytes, over MaxSize", p, st.Size())
		}
		all = append(all, readLines(t, p)...)
	}
	last := all[len(all)-1].Tenant
	if last != "t199" {
		t.Fatalf("last line %s", last)
	}
	for i := 1; i < len(all); i++ {
		var a, b int
		fmt.Sscanf(all[i-1].Tenant, "t%d", &a)
		fmt.Sscanf(all[i].Tenant, "t%d", &b)
		if b != a+1 {
			t.Fatalf("gap between %s and %s", all[i-1].Tenant, all[i].Tenant)
		}
	}
	if got := value(t, l.metrics.rotations); got < 3 {
		t.Fatalf("rotations %v", got)
	}
}

// TestFullBufferDrops: with the writer unable to keep up, Record does
// not block; what does not fit is counted as dropped.
func TestFullBufferDrops(t *testing.T) {
	l := &Log{cfg: Config{Path: "x"}, ch: make(chan item, 2), done: make(chan struct{}), metrics: newMetrics()}
	// No writer goroutine: the buffer of 2 fills.
	for range 5 {
		l.Record(Record{Kind: KindS3})
	}
	if d := value(t, l.metrics.dropped); d != 3 {
		t.Fatalf("dropped %v, want 3", d)
	}
	if n := value(t, l.metrics.records.WithLabelValues(KindS3)); n != 2 {
		t.Fatalf("queued %v, want 2", n)
	}
}

// TestTail: the last n lines, and following by offset across a rotation.
func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(Config{Path: path, MaxSize: 4000, Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 10 {
		l.Record(Record{Kind: KindS3, Op: "PutObject", Key: fmt.Sprint(i)})
	}
	lines, next, err := l.Tail(t.Context(), 3, -1)
	if err != nil || len(lines) != 3 || !bytes.Contains(lines[2], []byte(`"key":"9"`)) || !bytes.Contains(lines[0], []byte(`"key":"7"`)) {
		t.Fatalf("tail 3: %q %v", lines, err)
	}
	l.Record(Record{Kind: KindS3, Op: "DeleteObject", Key: "10"})
	lines, next2, err := l.Tail(t.Context(), 0, next)
	if err != nil || len(lines) != 1 || !bytes.Contains(lines[0], []byte(`"key":"10"`)) || next2 <= next {
		t.Fatalf("follow: %q %d %v", lines, next2, err)
	}
	// Past a rotation the offset is beyond the new file: from its start.
	for i := range 40 {
		l.Record(Record{Kind: KindS3, Op: "PutObject", Key: fmt.Sprint(100 + i)})
	}
	lines, _, err = l.Tail(t.Context(), 0, 1<<40)
	if err != nil || len(lines) == 0 {
		t.Fatalf("after rotation: %q %v", lines, err)
	}
	std, err := Open(Config{Path: "-", Stdout: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer std.Close()
	if _, _, err := std.Tail(t.Context(), 1, -1); err != ErrNoFile {
		t.Fatalf("tail of stdout: %v", err)
	}
}

// TestStdout: "-" writes the lines to Stdout.
func TestStdout(t *testing.T) {
	var out bytes.Buffer
	l, err := Open(Config{Path: "-", Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(Record{Kind: KindSignIn, Op: "DashboardSignIn", Status: 401, Result: ResultDenied})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"op":"DashboardSignIn"`) || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("stdout: %q", out.String())
	}
}

// TestRedactQuery: presigned URLs keep the key id, lose the signature,
// the security token and anything named like a secret.
func TestRedactQuery(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=FKABC%2F20261128%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261128T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=deadbeef&X-Amz-Security-Token=tok",
			"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=FKABC&X-Amz-Date=20261128T000000Z&X-Amz-Expires=60&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED&X-Amz-SignedHeaders=host"},
		{"AWSAccessKeyId=FKABC&Signature=abc&Expires=1", "AWSAccessKeyId=FKABC&Expires=1&Signature=REDACTED"},
		{"tenant=acme&bucket=b&key=k", "bucket=b&key=k&tenant=acme"},
		{"secret_key=s&password=p&token=t&session=c&apikey=a", "apikey=REDACTED&password=REDACTED&secret_key=REDACTED&session=REDACTED&token=REDACTED"},
		{"a=%zz", Redacted},
	} {
		if got := RedactQuery(c.in); got != c.want {
			t.Errorf("RedactQuery(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestMutationAndResult(t *testing.T) {
	for _, c := range []struct {
		method, op string
		want       bool
	}{
		{"PUT", "PutObject", true}, {"POST", "DeleteObjects", true}, {"DELETE", "DeleteBucket", true},
		{"POST", "SelectObjectContent", false}, {"GET", "GetObject", false}, {"HEAD", "HeadObject", false},
	} {
		if Mutation(c.method, c.op) != c.want {
			t.Errorf("Mutation(%s, %s) != %v", c.method, c.op, c.want)
		}
	}
	for status, want := range map[int]string{200: ResultOK, 204: ResultOK, 401: ResultDenied, 403: ResultDenied, 429: ResultDenied, 404: ResultError, 500: ResultError} {
		if got := ResultOf(status); got != want {
			t.Errorf("ResultOf(%d) = %s", status, got)
		}
	}
}

// BenchmarkRecord: what a request pays to record one S3 line (building
// it and the channel send), with the writer goroutine draining to a
// file at the same time.
func BenchmarkRecord(b *testing.B) {
	l, err := Open(Config{Path: filepath.Join(b.TempDir(), "audit.log"), MaxSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	obsv := l.S3Observer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		o := obsDone()
		for pb.Next() {
			obsv.Done(o)
		}
	})
	b.StopTimer()
	if err := l.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(value(b, l.metrics.dropped)/float64(b.N), "dropped/op")
}

// BenchmarkWrite: the writer's sustained rate (ns per line written to the
// file, JSON encoding included), flushing every 4096 records so that none
// is dropped.
func BenchmarkWrite(b *testing.B) {
	l, err := Open(Config{Path: filepath.Join(b.TempDir(), "audit.log"), MaxSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	obsv, o := l.S3Observer(), obsDone()
	for i := range b.N {
		obsv.Done(o)
		if i%4096 == 4095 {
			if err := l.Flush(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	if d := value(b, l.metrics.dropped); d != 0 {
		b.Fatalf("%v dropped", d)
	}
}
