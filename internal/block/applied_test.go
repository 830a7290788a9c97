package block

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/meta"
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

// A volume resized while a connection uses it is opened anew for the next
// connection; both opens write the same files, so they go through the
// same stack (even when the policies changed it meanwhile), partial
// blocks written through xor from both (read-modify-write) must not
// overwrite each other, and a throttle set afterwards reaches both.
func TestResizeUnderConnection(t *testing.T) {
	pols := &tablePolicies{}
	pols.set(t, "FOR VOLUME av DO SET xor WITH key=0x55")
	m, _ := testManager(t, Config{Policies: pols})
	ctx := t.Context()
	local := nbd.Peer{Loopback: true}
	d1, _, err := m.Open(ctx, "av", local)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	if err := d1.WriteAt(ctx, bytes.Repeat([]byte{7}, 8192), 1<<20-8192, false); err != nil {
		t.Fatal(err)
	}
	// The key changes while d1 is connected: the volume keeps its stack
	// until no connection uses it, the resized open included.
	pols.set(t, "FOR VOLUME av DO SET xor WITH key=0x66")
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ResizeVolume(ctx, "av", 2<<20); err != nil {
		t.Fatal(err)
	}
	d2, info, err := m.Open(ctx, "av", local)
	if err != nil || info.Size != 2<<20 {
		t.Fatalf("open after resize: %v %+v", err, info)
	}
	defer d2.Close()
	v1, v2 := d1.(*device).v, d2.(*device).v
	if v1 == v2 {
		t.Fatal("the resized volume was not opened anew")
	}
	old := make([]byte, 8192)
	if err := d2.ReadAt(ctx, old, 1<<20-8192); err != nil || !bytes.Equal(old, bytes.Repeat([]byte{7}, 8192)) {
		t.Fatalf("data written before the resize, read through the new open: %v %x", err, old[:4])
	}
	// Each 4 KiB block gets 64-byte pieces from both connections at once:
	// even pieces through the old open, odd ones through the new.
	const piece, blocks = 64, 16
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w, d := range []nbd.Device{d1, d2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range blocks {
				for i := w; i < 4096/piece; i += 2 {
					off := int64(b*4096 + i*piece)
					if err := d.WriteAt(ctx, bytes.Repeat([]byte{byte(i + 1)}, piece), off, false); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := make([]byte, blocks*4096)
	if err := d2.ReadAt(ctx, got, 0); err != nil {
		t.Fatal(err)
	}
	for b := range blocks {
		for i := range 4096 / piece {
			off := b*4096 + i*piece
			if !bytes.Equal(got[off:off+piece], bytes.Repeat([]byte{byte(i + 1)}, piece)) {
				t.Fatalf("block %d piece %d lost: %x", b, i, got[off:off+4])
			}
		}
	}
	if _, err := m.SetThrottle(ctx, "av", meta.Throttle{WriteIOPS: 1234}); err != nil {
		t.Fatal(err)
	}
	if l1, l2 := v1.writeOps.limit(), v2.writeOps.limit(); l1 != 1234 || l2 != 1234 {
		t.Fatalf("write_iops throttle after resize: old open %v, new open %v", l1, l2)
	}
	// The old open's connection still counts once the new one is gone.
	d2.Close()
	if st, _ := m.Volume(ctx, "av"); !st.Open {
		t.Error("volume with a connection shown closed")
	}
	if err := m.DeleteVolume(ctx, "av"); !errors.Is(err, ErrVolumeBusy) {
		t.Fatalf("delete under the old open's connection: %v", err)
	}
	d1.Close()
	if err := m.DeleteVolume(ctx, "av"); err != nil {
		t.Fatal(err)
	}
}
