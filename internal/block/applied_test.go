package block

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/block/nbd"
)

// A dynamic nop that comes and goes while clients write and read through
// xor: the open volume swaps stacks under its I/O, and every read returns
// what was written (nop leaves the stored bytes as they are).
func TestRestackUnderIO(t *testing.T) {
	pols := &tablePolicies{}
	static := "FOR VOLUME av DO SET xor WITH key=0x55\nFOR VOLUME av WHEN volume_write_iops > 1 DO SET nop TRANSIENT"
	pols.set(t, static)
	m, store := testManager(t, Config{Policies: pols})
	ctx := t.Context()
	d, _, err := m.Open(ctx, "av", nbd.Peer{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				// Odd sizes and offsets: whole blocks and read-modify-write.
				off := int64(w)*200_000 + int64(i)*3001
				p := bytes.Repeat([]byte{byte(w*50 + i)}, 1000+i*37)
				if err := d.WriteAt(ctx, bytes.Clone(p), off, false); err != nil {
					errs <- err
					return
				}
				got := make([]byte, len(p))
				if err := d.ReadAt(ctx, got, off); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, p) {
					errs <- fmt.Errorf("writer %d, write %d at %d: read back differs", w, i, off)
					return
				}
			}
		}()
	}
	for i := range 20 {
		if i%2 == 0 {
			pols.set(t, static, "p2")
		} else {
			pols.set(t, static)
		}
		if err := m.Reload(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := d.(*device).v.stack.Load(); len(st.Names) != 1 || st.Names[0] != "xor" {
		t.Fatalf("stack after the last reload %v", st.Names)
	}
	if rec, _ := store.GetVolume(ctx, "av"); len(rec.Stack) != 1 || rec.Stack[0].Filter != "xor" {
		t.Fatalf("recorded %+v", rec.Stack)
	}
}
