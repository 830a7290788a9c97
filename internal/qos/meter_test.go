package qos

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sendfileShape records what each ReadFrom was given, as net's sendfile
// sees it: one *io.LimitedReader directly over the file, or the file.
type sendfileShape struct {
	bytes.Buffer
	file  *os.File
	flat  int // calls whose source sendfile could use
	other int
}

func (d *sendfileShape) ReadFrom(src io.Reader) (int64, error) {
	r := src
	if lr, ok := r.(*io.LimitedReader); ok {
		r = lr.R
	}
	if r == io.Reader(d.file) {
		d.flat++
	} else {
		d.other++
	}
	return d.Buffer.ReadFrom(src)
}

// A range of a file (a file behind a LimitedReader) passes through two
// unlimited stages, as a GET goes through the context stage and the
// limiter, and still reaches the connection as one LimitedReader over the
// file: sendfile survives. The caller's LimitedReader is charged exactly.
func TestMeterKeepsSendfileShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	if err := os.WriteFile(path, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(100, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	outer, inner := NewMeter(Unlimited, 64<<10, time.Now), NewMeter(Unlimited, 64<<10, time.Now)
	dst := &sendfileShape{file: f}
	w := outer.Writer(context.Background(), inner.Writer(context.Background(), dst, 64<<10), 64<<10)
	src := &io.LimitedReader{R: f, N: 5<<20 + 7}
	n, err := w.(io.ReaderFrom).ReadFrom(src)
	if err != nil || n != 5<<20+7 || src.N != 0 {
		t.Fatalf("ReadFrom: %d, %v, left %d", n, err, src.N)
	}
	if !bytes.Equal(dst.Bytes(), payload[100:100+n]) {
		t.Fatal("bytes differ")
	}
	if dst.other != 0 || dst.flat != 2 {
		t.Fatalf("destination saw %d sendfile-able and %d other sources, want 2 and 0", dst.flat, dst.other)
	}
	if outer.Served() != n || inner.Served() != n {
		t.Fatalf("served %d and %d, want %d", outer.Served(), inner.Served(), n)
	}
	// A limited stage paces chunk by chunk and still moves every byte.
	limited := NewMeter(1e12, 64<<10, time.Now)
	dst2 := &sendfileShape{file: f}
	src2 := &io.LimitedReader{R: bytes.NewReader(payload), N: 1<<20 + 3}
	n, err = limited.Writer(context.Background(), dst2, 64<<10).(io.ReaderFrom).ReadFrom(src2)
	if err != nil || n != 1<<20+3 || src2.N != 0 || !bytes.Equal(dst2.Bytes(), payload[:n]) {
		t.Fatalf("limited ReadFrom: %d, %v, left %d", n, err, src2.N)
	}
}

// The per-chunk cost of the unlimited path: what every unthrottled GET
// and PUT pays per 64 KiB through each stage. It must not allocate or
// read the clock.
func BenchmarkMeterPayUnlimited(b *testing.B) {
	m := NewMeter(Unlimited, 64<<10, time.Now)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Pay(ctx, 64<<10)
	}
}

func BenchmarkMeterPayLimitedHigh(b *testing.B) {
	m := NewMeter(1e15, 64<<10, time.Now)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Pay(ctx, 64<<10)
	}
}
