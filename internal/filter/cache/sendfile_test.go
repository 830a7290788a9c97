package cache

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// A hit copied to a response goes through WriteTo (sendfile on a TCP
// connection): whole objects and ranges arrive exact, also after some
// bytes were Read first, and every byte is counted as served.
func TestHitWriteToSendsTheSection(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	b := body(300_000, 3)
	v := ver("e1", len(b), t0)
	fill(t, s, lru, "b", "k", v, b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		off, _ := strconv.ParseInt(r.URL.Query().Get("off"), 10, 64)
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		first, _ := strconv.Atoi(r.URL.Query().Get("first"))
		rc, ok := s.Open("b", "k", v, off, n)
		if !ok {
			http.Error(w, "miss", http.StatusNotFound)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		head := make([]byte, first)
		if _, err := io.ReadFull(rc, head); err != nil {
			t.Error(err)
			return
		}
		w.Write(head)
		if _, ok := rc.(io.WriterTo); !ok {
			t.Error("a hit is not an io.WriterTo")
		}
		if got, err := io.Copy(w, rc); err != nil || got != n-int64(first) {
			t.Errorf("copied %d of %d: %v", got, n-int64(first), err)
		}
	}))
	defer srv.Close()
	var want uint64
	for _, c := range []struct{ off, n, first int64 }{{0, 300_000, 0}, {0, 300_000, 10}, {4096, 100_000, 0}, {299_000, 1000, 999}, {7, 0, 0}} {
		resp, err := http.Get(srv.URL + "/?off=" + strconv.FormatInt(c.off, 10) + "&n=" + strconv.FormatInt(c.n, 10) + "&first=" + strconv.FormatInt(c.first, 10))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(got, b[c.off:c.off+c.n]) {
			t.Fatalf("range %+v: %d bytes, equal=%v", c, len(got), bytes.Equal(got, b[c.off:c.off+c.n]))
		}
		want += uint64(c.n)
	}
	if st := s.Stats(); st.BytesServed != want {
		t.Fatalf("served %d, want %d", st.BytesServed, want)
	}
	// WriteTo into a plain writer, after a partial read.
	rc, ok := s.Open("b", "k", v, 100, 5000)
	if !ok {
		t.Fatal("miss")
	}
	defer rc.Close()
	head := make([]byte, 100)
	io.ReadFull(rc, head)
	var buf bytes.Buffer
	if n, err := rc.(io.WriterTo).WriteTo(struct{ io.Writer }{&buf}); err != nil || n != 4900 {
		t.Fatalf("WriteTo: %d %v", n, err)
	}
	if !bytes.Equal(append(head, buf.Bytes()...), b[100:5100]) {
		t.Fatal("WriteTo after Read: wrong bytes")
	}
	if n, err := rc.(io.WriterTo).WriteTo(&buf); n != 0 || err != nil {
		t.Fatalf("WriteTo at the end: %d %v", n, err)
	}
}
