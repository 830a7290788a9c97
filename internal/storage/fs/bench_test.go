package fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

func BenchmarkPutGet4KiB(b *testing.B)  { benchPutGet(b, 4<<10) }
func BenchmarkPutGet64MiB(b *testing.B) { benchPutGet(b, 64<<20) }

// benchPutGet measures durable PUTs (every fsync on) and full GETs, serial
// and from 16 goroutines per CPU (which share index commits).
func benchPutGet(b *testing.B, size int) {
	body := bytes.Repeat([]byte{0x5a}, size)
	for _, parallel := range []bool{false, true} {
		name := "serial"
		if parallel {
			name = "parallel"
		}
		b.Run("put/"+name, func(b *testing.B) {
			s, _ := newStore(b)
			b.SetBytes(int64(size))
			b.ResetTimer()
			run(b, parallel, func(i int) {
				if _, err := s.PutObject(context.Background(), "b", fmt.Sprint("k", i%64), storage.PutInput{Body: bytes.NewReader(body)}); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run("get/"+name, func(b *testing.B) {
			s, _ := newStore(b)
			putBytes(b, s, "b", "k", body)
			b.SetBytes(int64(size))
			b.ResetTimer()
			run(b, parallel, func(int) {
				rc, _, err := s.GetObject(context.Background(), "b", "k", nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			})
		})
	}
}

func run(b *testing.B, parallel bool, op func(i int)) {
	if !parallel {
		for i := 0; b.Loop(); i++ {
			op(i)
		}
		return
	}
	// Like many clients of one gateway; enough writers to share commits.
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			op(i)
		}
	})
}
