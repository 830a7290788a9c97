package dataplane

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

// countingBackend answers GetObject from data and counts the calls.
type countingBackend struct {
	storage.Backend
	data  []byte
	calls int
}

func (b *countingBackend) GetObject(_ context.Context, _, _ string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	b.calls++
	d := b.data
	if rng != nil {
		d = d[rng.Start : rng.Start+rng.Length]
	}
	return io.NopCloser(bytes.NewReader(d)), storage.ObjectInfo{StoredSize: int64(len(b.data))}, nil
}

type bodyCloses struct {
	io.Reader
	closed int
}

func (c *bodyCloses) Close() error { c.closed++; return nil }

func readSection(t *testing.T, h *heldStream, off, n int64) []byte {
	t.Helper()
	rc, _, err := h.GetObject(context.Background(), "b", "k", &storage.Range{Start: off, Length: n})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	return got
}

// TestHeldStreamSequentialSections: opens that continue where the held
// stream stands (a multipart object's parts in order) read it; any other
// open goes to the backend; the stream is closed once, by release or by a
// section closed early.
func TestHeldStreamSequentialSections(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	be := &countingBackend{data: data}
	body := &bodyCloses{Reader: bytes.NewReader(data)}
	h := &heldStream{Backend: be, bucket: "b", key: "k", info: storage.ObjectInfo{StoredSize: int64(len(data))}, rc: body}
	if got := readSection(t, h, 0, 8); string(got) != "01234567" {
		t.Fatalf("first part = %q", got)
	}
	if got := readSection(t, h, 8, 4); string(got) != "89ab" {
		t.Fatalf("second part = %q", got)
	}
	if be.calls != 0 {
		t.Fatalf("%d backend calls for sections of the held stream", be.calls)
	}
	// Not where the stream stands: the backend answers.
	if got := readSection(t, h, 2, 3); string(got) != "234" || be.calls != 1 {
		t.Fatalf("out-of-order open = %q after %d backend calls", got, be.calls)
	}
	if got := readSection(t, h, 12, 8); string(got) != "cdefghij" || be.calls != 1 {
		t.Fatalf("last part = %q after %d backend calls", got, be.calls)
	}
	h.release()
	h.release()
	if body.closed != 1 {
		t.Fatalf("held stream closed %d times", body.closed)
	}

	// A section closed early closes the stream; later opens go to the
	// backend, release does not close it again.
	body = &bodyCloses{Reader: bytes.NewReader(data)}
	be.calls = 0
	h = &heldStream{Backend: be, bucket: "b", key: "k", info: storage.ObjectInfo{StoredSize: int64(len(data))}, rc: body}
	rc, _, _ := h.GetObject(context.Background(), "b", "k", &storage.Range{Start: 0, Length: 10})
	buf := make([]byte, 3)
	if _, err := io.ReadFull(rc, buf); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got := readSection(t, h, 3, 7); string(got) != "3456789" || be.calls != 1 {
		t.Fatalf("after an early close: %q, %d backend calls", got, be.calls)
	}
	h.release()
	if body.closed != 1 {
		t.Fatalf("held stream closed %d times", body.closed)
	}
}
