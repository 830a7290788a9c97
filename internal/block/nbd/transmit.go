package nbd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// request is a parsed request header.
type request struct {
	flags  uint16
	typ    uint16
	handle uint64
	off    uint64
	length uint32
}

// errBadMagic ends a connection: after a header without the request magic
// the stream cannot be resynchronised.
var errBadMagic = errors.New("nbd: bad request magic")

// parseRequest parses a 28-byte request header.
func parseRequest(h []byte) (request, error) {
	if len(h) != requestHeaderLen {
		return request{}, fmt.Errorf("nbd: request header of %d bytes", len(h))
	}
	if binary.BigEndian.Uint32(h) != requestMagic {
		return request{}, errBadMagic
	}
	return request{
		flags:  binary.BigEndian.Uint16(h[4:]),
		typ:    binary.BigEndian.Uint16(h[6:]),
		handle: binary.BigEndian.Uint64(h[8:]),
		off:    binary.BigEndian.Uint64(h[16:]),
		length: binary.BigEndian.Uint32(h[24:]),
	}, nil
}

// check validates a request against the export; 0 means valid.
func (r request) check(size int64) uint32 {
	// FUA is valid on every command once SEND_FUA is advertised: the
	// protocol says the server MUST accept it even where nothing is
	// written (old qemu sets it on FLUSH). It is honoured where data is
	// written and ignored elsewhere (a FLUSH is durable anyway).
	allowed := uint16(cmdFlagFUA)
	switch r.typ {
	case cmdRead, cmdFlush, cmdDisc, cmdWrite, cmdTrim:
	case cmdWriteZeroes:
		allowed |= cmdFlagNoHole
	default:
		return EINVAL
	}
	if r.flags&^allowed != 0 {
		return EINVAL
	}
	switch r.typ {
	case cmdRead, cmdWrite:
		if r.length > MaxPayload {
			// EINVAL, not EOVERFLOW: the protocol keeps EOVERFLOW for
			// reads with DF under structured replies.
			return EINVAL
		}
	case cmdFlush, cmdDisc:
		if r.off != 0 || r.length != 0 {
			return EINVAL
		}
		return 0
	}
	if r.off > uint64(size) || uint64(r.length) > uint64(size)-r.off {
		if r.typ == cmdWrite || r.typ == cmdWriteZeroes {
			return ENOSPC
		}
		return EINVAL
	}
	return 0
}

// transmit runs the transmission phase: one reader parses requests in
// order and hands each to a worker goroutine (at most MaxInFlight run at
// once), and replies go out in completion order under a write lock.
//
// Workers live as long as the connection: a goroutine per request cost a
// goroutine start, a wakeup of an idle thread and, since serving a
// request is deeper than a new goroutine's stack, a stack growth (copy)
// per request, together ~10% of the CPU of 4 KiB random reads.
func (c *conn) transmit(ctx context.Context, dev Device, info ExportInfo) error {
	var (
		inflight pending // requests handed to workers and not yet served
		workers  sync.WaitGroup
		nworkers int
		work     = make(chan job) // unbuffered: a send succeeds only to an idle worker
		q        = &replyQueue{c: c}
		hdr      [requestHeaderLen]byte
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A client with many requests in flight sends them back to back: one
	// read syscall then picks up several headers and small payloads
	// (64 KiB: 15 requests of 4 KiB). Not more: a read for a header also
	// takes that much of a large payload that follows it, which then
	// costs a copy out of the buffer (readPayload reads the rest
	// straight into the request's buffer).
	in := bufio.NewReaderSize(c.rw, 64<<10)
	replyTo := q.reply
	var raw syscall.RawConn // large payloads bypass bufio on plain TCP
	if tc, ok := c.rw.(*net.TCPConn); ok {
		raw, _ = tc.SyscallConn()
	}
	defer func() {
		close(work)
		workers.Wait()
	}()
	for {
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil // shutting down
			}
			if werr := q.failed(); werr != nil {
				return werr
			}
			if err == io.EOF {
				return errDone // the client hung up without DISC
			}
			return err
		}
		r, err := parseRequest(hdr[:])
		if err != nil {
			return err
		}
		code := r.check(info.Size)
		if r.typ == cmdWrite && (code != 0 || r.length > MaxPayload) {
			// The payload follows whatever we think of it: skip it to
			// stay in step with the stream.
			if _, err := io.CopyN(io.Discard, in, int64(r.length)); err != nil {
				return err
			}
		}
		if code != 0 {
			replyTo(r.handle, code, nil)
			continue
		}
		if r.typ == cmdDisc {
			inflight.wait()
			return errDone
		}
		var payload []byte
		if r.typ == cmdWrite {
			payload = c.s.bufs.get(int(r.length))
			if err := readPayload(in, raw, payload); err != nil {
				c.s.bufs.put(payload)
				return err
			}
		}
		if (r.typ == cmdWrite || r.typ == cmdRead) && r.length >= inlineMin && inflight.idle() {
			// Nothing else is in flight: serving a large read or write
			// here saves the handoff to a worker (a wakeup and, while
			// the worker sits in a long pread, pwrite or send, the
			// runtime moving the reader to another thread), ~2 context
			// switches per 1 MiB request. Requests behind it wait in
			// the socket, as they would for a worker; for reads the
			// socket is the bottleneck anyway (replies go out one at a
			// time), and a stream of them is served one after the
			// other as nbdkit's threads do: 1 MiB reads 3.6 -> 4.4 GB/s
			// (medians, both on setCongestion's cubic; docs/benchmarks/nbd.md).
			c.serve(ctx, dev, r, payload, replyTo)
			continue
		}
		inflight.add()
		j := job{r: r, payload: payload}
		select {
		case work <- j: // an idle worker took it
		default:
			if nworkers < c.s.cfg.MaxInFlight {
				nworkers++
				workers.Add(1)
				go func() {
					defer workers.Done()
					c.work(ctx, dev, j, work, replyTo, &inflight)
				}()
			} else {
				work <- j // every worker is busy: wait for one
			}
		}
	}
}

// inlineMin is the size from which the reader serves a read or write
// itself when no other request of the connection is in flight. Smaller
// requests go to workers: their pread or pwrite is short next to the
// handoff, and replies that complete together share one writev.
const inlineMin = 256 << 10

// lowatMin is the payload still to read from the socket above which
// readPayload waits for it with SO_RCVLOWAT; lowatMax bounds the low
// water mark, and with it the receive buffer the kernel grows to hold it.
const (
	lowatMin = 64 << 10
	lowatMax = 1 << 20
)

// readPayload fills p from the connection: what in has buffered, then the
// rest. A large rest is read from the socket straight into p with the
// socket's low water mark (SO_RCVLOWAT) set to what is still missing, so
// that the poller wakes the reader once the payload has arrived instead of
// at every segment: a 1 MiB write cost ~5 reads, 3 epoll waits and 6
// context switches, most of them for a few tens of KiB each.
func readPayload(in *bufio.Reader, raw syscall.RawConn, p []byte) error {
	n := 0
	if b := in.Buffered(); b > 0 {
		n, _ = in.Read(p[:min(b, len(p))]) // copies buffered bytes, no syscall
	}
	if raw == nil || len(p)-n < lowatMin {
		_, err := io.ReadFull(in, p[n:])
		return err
	}
	return readLowat(raw, p[n:])
}

// readLowat reads exactly len(p) bytes from a non-blocking socket. The low
// water mark never exceeds the bytes still due, which the client sends
// before it waits for a reply, so the reader cannot wait for bytes that
// do not come; the kernel also wakes it when its receive buffer or
// window runs short. The mark goes back to 1 for the next header.
func readLowat(raw syscall.RawConn, p []byte) error {
	var err error
	lowat := 1
	rerr := raw.Read(func(fd uintptr) bool {
		for len(p) > 0 {
			if want := min(len(p), lowatMax); want != lowat {
				if err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, want); err != nil {
					return true
				}
				lowat = want
			}
			n, e := syscall.Read(int(fd), p)
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return false // wait until lowat bytes are queued
			case e != nil:
				err = e
				return true
			case n == 0:
				err = io.ErrUnexpectedEOF
				return true
			}
			p = p[n:]
		}
		return true
	})
	if lowat != 1 {
		cerr := raw.Control(func(fd uintptr) {
			if e := syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, 1); e != nil && err == nil {
				err = e
			}
		})
		if err == nil {
			err = cerr
		}
	}
	if rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("nbd: read payload: %w", err)
	}
	return nil
}

// job is a request handed to a worker, with a write's payload.
type job struct {
	r       request
	payload []byte
}

// pending counts a connection's requests handed to workers and not yet
// served: DISC waits for them, and the reader serves a large read or
// write itself only when there are none.
type pending struct {
	n  atomic.Int32
	wg sync.WaitGroup
}

func (p *pending) add()       { p.n.Add(1); p.wg.Add(1) }
func (p *pending) done()      { p.n.Add(-1); p.wg.Done() }
func (p *pending) idle() bool { return p.n.Load() == 0 }
func (p *pending) wait()      { p.wg.Wait() }

// work serves j, then whatever the reader hands over, until the
// connection ends.
func (c *conn) work(ctx context.Context, dev Device, j job, work <-chan job, replyTo func(uint64, uint32, []byte), inflight *pending) {
	for {
		c.serve(ctx, dev, j.r, j.payload, replyTo)
		inflight.done()
		var ok bool
		if j, ok = <-work; !ok {
			return
		}
	}
}

func (c *conn) serve(ctx context.Context, dev Device, r request, payload []byte, replyTo func(uint64, uint32, []byte)) {
	off, n := int64(r.off), int64(r.length)
	fua := r.flags&cmdFlagFUA != 0
	var err error
	switch r.typ {
	case cmdRead:
		buf := c.s.bufs.get(int(n))
		if err = dev.ReadAt(ctx, buf, off); err == nil {
			replyTo(r.handle, 0, buf) // the queue returns buf to the pool
			return
		}
		c.s.bufs.put(buf)
	case cmdWrite:
		err = dev.WriteAt(ctx, payload, off, fua)
		c.s.bufs.put(payload)
	case cmdFlush:
		err = dev.Flush(ctx)
	case cmdTrim:
		err = dev.Trim(ctx, off, n, fua)
	case cmdWriteZeroes:
		err = dev.WriteZeroes(ctx, off, n, fua, r.flags&cmdFlagNoHole != 0)
	}
	if err != nil {
		code := errnoOf(ctx, err)
		c.s.log.Warn("nbd request failed", "type", r.typ, "offset", off, "length", n, "errno", code, "err", err)
		replyTo(r.handle, code, nil)
		return
	}
	replyTo(r.handle, 0, nil)
}

// errnoOf chooses a failed request's error code: the device's own
// (Errno), ENOSPC for a full pool, EPERM for a read-only or forbidden
// one, ESHUTDOWN when the request was cancelled because the server is
// stopping, otherwise EIO.
func errnoOf(ctx context.Context, err error) uint32 {
	var en *Errno
	switch {
	case errors.As(err, &en):
		return en.Code
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG):
		return ENOSPC
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return EPERM
	case errors.Is(err, syscall.ENOMEM):
		return ENOMEM
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return ESHUTDOWN
	}
	return EIO
}

// replyQueue sends replies in completion order. Whoever finds no writer
// at work becomes the writer and sends everything queued meanwhile in one
// writev, so that replies completing together cost one syscall.
type replyQueue struct {
	c       *conn
	mu      sync.Mutex
	pending net.Buffers
	owned   [][]byte // read buffers to return to the pool once sent
	hdrs    []byte   // the pending replies' headers, 16 bytes each
	writing bool
	err     error
	// The slices of the last batch sent, reused for the next one so
	// that a busy connection does not allocate per reply.
	sparePending net.Buffers
	spareOwned   [][]byte
	spareHdrs    []byte
}

// reply queues a simple reply; data, when given, belongs to the queue.
func (q *replyQueue) reply(handle uint64, code uint32, data []byte) {
	q.mu.Lock()
	if q.err != nil {
		q.mu.Unlock()
		if data != nil {
			q.c.s.bufs.put(data)
		}
		return
	}
	// A header slices hdrs; when append moves hdrs, the headers queued
	// before stay where they were, referenced by pending.
	n := len(q.hdrs)
	q.hdrs = binary.BigEndian.AppendUint32(q.hdrs, simpleReplyMagic)
	q.hdrs = binary.BigEndian.AppendUint32(q.hdrs, code)
	q.hdrs = binary.BigEndian.AppendUint64(q.hdrs, handle)
	q.pending = append(q.pending, q.hdrs[n:n+16:n+16])
	if data != nil {
		if code == 0 && len(data) > 0 {
			q.pending = append(q.pending, data)
		}
		q.owned = append(q.owned, data)
	}
	if q.writing {
		q.mu.Unlock()
		return
	}
	q.writing = true
	for len(q.pending) > 0 && q.err == nil {
		batch, owned, hdrs := q.pending, q.owned, q.hdrs
		q.pending, q.owned, q.hdrs = q.sparePending[:0], q.spareOwned[:0], q.spareHdrs[:0]
		q.sparePending, q.spareOwned, q.spareHdrs = nil, nil, nil
		q.mu.Unlock()
		var err error
		if bw, ok := q.c.rw.(buffersWriter); ok {
			_, err = bw.WriteBuffers(batch)
		} else {
			v := batch // WriteTo consumes its receiver
			_, err = v.WriteTo(q.c.rw)
		}
		for i, b := range owned {
			q.c.s.bufs.put(b)
			owned[i] = nil
		}
		clear(batch)
		q.mu.Lock()
		// Nothing refers to the batch's slices any more: they become
		// the next batch's.
		q.sparePending, q.spareOwned, q.spareHdrs = batch[:0], owned[:0], hdrs[:0]
		if err != nil {
			q.err = err
			q.c.nc.Close() // the reader stops too
		}
	}
	if q.err != nil { // what was queued will not be sent
		for _, b := range q.owned {
			q.c.s.bufs.put(b)
		}
		q.pending, q.owned = nil, nil
	}
	q.writing = false
	q.mu.Unlock()
}

// buffersWriter is a connection that packs several buffers into its own
// framing (a TLS connection fills records across reply boundaries rather
// than sealing every 16-byte reply header as a record of its own).
type buffersWriter interface {
	WriteBuffers(v [][]byte) (int64, error)
}

func (q *replyQueue) failed() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// Buffers come from size-classed pools (powers of two from 4 KiB to
// MaxPayload) so that a busy connection does not allocate per request.
type bufPools [14]sync.Pool // 4 KiB << i, i = 0..13 (32 MiB)

func poolIndex(n int) int {
	i, s := 0, 4096
	for s < n {
		s <<= 1
		i++
	}
	return i
}

func (bp *bufPools) get(n int) []byte {
	i := poolIndex(n)
	if i >= len(bp) {
		return make([]byte, n)
	}
	if b, ok := bp[i].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 4096<<i)
}

func (bp *bufPools) put(b []byte) {
	i := poolIndex(cap(b))
	if i >= len(bp) || cap(b) != 4096<<i {
		return
	}
	b = b[:cap(b)]
	bp[i].Put(&b)
}
