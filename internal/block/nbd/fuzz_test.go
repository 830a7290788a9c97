package nbd

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// FuzzHandshake feeds arbitrary client bytes to a server: it must neither
// panic nor hang, whatever the options, lengths and commands say.
func FuzzHandshake(f *testing.F) {
	opt := func(code uint32, data []byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, ihaveOpt)
		b = binary.BigEndian.AppendUint32(b, code)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		return append(b, data...)
	}
	flags := binary.BigEndian.AppendUint32(nil, flagFixedNewstyle|flagNoZeroes)
	f.Add(append(append([]byte{}, flags...), opt(optList, nil)...))
	f.Add(append(append([]byte{}, flags...), opt(optGo, infoData("disk", infoBlockSize))...))
	f.Add(append(append([]byte{}, flags...), opt(optInfo, []byte{0, 0, 0, 200, 1})...))
	f.Add(append(append([]byte{}, flags...), opt(optExportName, []byte("disk"))...))
	f.Add(append(append([]byte{}, flags...), opt(optStartTLS, []byte("x"))...))
	f.Add(append(append([]byte{}, flags...), opt(optAbort, nil)...))
	go1 := append(append([]byte{}, flags...), opt(optGo, infoData("disk"))...)
	req := func(typ uint16, off uint64, n uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, requestMagic)
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, typ)
		b = binary.BigEndian.AppendUint64(b, 1)
		b = binary.BigEndian.AppendUint64(b, off)
		return binary.BigEndian.AppendUint32(b, n)
	}
	f.Add(append(append(append([]byte{}, go1...), req(cmdWrite, 0, 4)...), 1, 2, 3, 4))
	f.Add(append(append([]byte{}, go1...), req(cmdRead, 100, 4096)...))
	f.Add(append(append([]byte{}, go1...), req(cmdWrite, 0, 0xffffffff)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		exp := &memExports{dev: &memDevice{data: make([]byte, 64<<10)}, owner: "acme"}
		s := New(Config{Exports: exp, PlainAllowed: PlainLoopback, HandshakeTimeout: time.Second})
		a, b := net.Pipe()
		done := make(chan struct{})
		go func() {
			s.ServeConn(context.Background(), a)
			close(done)
		}()
		go io.Copy(io.Discard, b) // replies
		b.SetWriteDeadline(time.Now().Add(2 * time.Second))
		b.Write(in)
		b.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("server did not end the connection")
		}
	})
}

// FuzzParseRequest checks the request parser and validator on any header.
func FuzzParseRequest(f *testing.F) {
	f.Add(bytes.Repeat([]byte{0}, requestHeaderLen), int64(1<<20))
	h := binary.BigEndian.AppendUint32(nil, requestMagic)
	h = append(h, make([]byte, 24)...)
	f.Add(h, int64(4096))
	f.Fuzz(func(t *testing.T, hdr []byte, size int64) {
		if size < 0 {
			size = -size
		}
		r, err := parseRequest(hdr)
		if err != nil {
			return
		}
		if r.check(size) == 0 {
			switch r.typ {
			case cmdRead, cmdWrite, cmdTrim, cmdWriteZeroes:
				if r.off+uint64(r.length) > uint64(size) || r.off+uint64(r.length) < r.off {
					t.Fatalf("accepted out-of-range request %+v on %d bytes", r, size)
				}
			}
			if (r.typ == cmdRead || r.typ == cmdWrite) && r.length > MaxPayload {
				t.Fatalf("accepted oversized request %+v", r)
			}
		}
	})
}
