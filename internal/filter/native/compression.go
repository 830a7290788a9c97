package native

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"strconv"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/facet-sds/facet/internal/filter"
)

// The compression filter stores a stream as a sequence of independent
// frames, each holding `frame` bytes of plaintext (the last one fewer):
//
//	frame := payload crc (4 bytes, little endian)
//
// payload is the frame compressed by the engine (a gzip member, a zstd
// frame, an LZ4 block), or the plaintext itself when compressing does not
// save at least 1/64 of it — incompressible data then costs 4 bytes per
// frame. crc is the CRC32C of the plaintext followed by the payload when
// it differs: one check covers what the client wrote, end to end, and
// every stored byte, including header bits a decompressor ignores.
//
// The frame index lives in the record, not in the stream: one unsigned
// varint per frame, the payload length or 0 for a raw frame, base64
// encoded. From it Decode finds where any plaintext offset is stored, and
// a range read opens only the frames it overlaps.
const (
	compressionName    = "compression"
	compressionVersion = 1

	minFrame     = 64 << 10
	maxFrame     = 16 << 20
	defaultFrame = 256 << 10
	crcSize      = 4

	// maxPlain bounds a record's plaintext size far above any object,
	// so that arithmetic on untrusted sizes cannot overflow.
	maxPlain = 1 << 52
)

var _ filter.Reversible = (*compression)(nil)

type engine uint8

const (
	engineGzip engine = iota
	engineZstd
	engineLZ4
	numEngines
)

func (e engine) String() string {
	switch e {
	case engineGzip:
		return "gzip"
	case engineZstd:
		return "zstd"
	case engineLZ4:
		return "lz4"
	}
	return "engine(" + strconv.Itoa(int(e)) + ")"
}

func parseEngine(s string) (engine, bool) {
	for e := range numEngines {
		if e.String() == s {
			return e, true
		}
	}
	return 0, false
}

// levels returns an engine's accepted levels and its default. zstd's 1-4
// are klauspost's fastest, default, better and best; lz4's 0 is its fast
// compressor and 1-9 its high-compression depths.
func (e engine) levels() (lo, hi, def int) {
	switch e {
	case engineGzip:
		return 1, 9, 6
	case engineZstd:
		return 1, 4, 2
	default:
		return 0, 9, 0
	}
}

func CompressionInfo() *filter.Info {
	cs := newCodecs()
	in := &filter.Info{
		Name:       compressionName,
		Version:    compressionVersion,
		Kind:       "native",
		Methods:    []filter.Method{filter.MethodPut},
		Stages:     []filter.Stage{filter.StageGateway, filter.StageStorage},
		Reversible: true,
		Doc: "Compresses the stream in independent frames (gzip, zstd or lz4) with an index, " +
			"so a Range GET decompresses only the frames it needs. Frames that do not shrink are stored raw.",
		Params: []filter.ParamSpec{
			{Name: "engine", Type: filter.TypeEnum, Default: "zstd", Enum: []string{"gzip", "zstd", "lz4"},
				Doc: "compression engine"},
			{Name: "level", Type: filter.TypeInt, Min: 0, Max: 9,
				Doc: "engine level: gzip 1-9 (default 6), zstd 1-4 = fastest, default, better, best (default 2), lz4 0-9 (0 = fast, the default)"},
			{Name: "frame", Type: filter.TypeSize, Default: strconv.Itoa(defaultFrame), Min: minFrame, Max: maxFrame,
				Doc: "plaintext bytes per independently compressed frame: the granularity of Range GETs"},
		},
	}
	in.Config = func() filter.Provisioner { return &compressionConfig{info: in, cs: cs} }
	return in
}

// compressionConfig is the compression filter's parameters, decoded.
type compressionConfig struct {
	Engine string `param:"engine"`
	Level  *int   `param:"level"` // nil: the engine's default
	Frame  int    `param:"frame"`

	info *filter.Info
	cs   *codecs
}

var (
	_ filter.Validator   = (*compressionConfig)(nil)
	_ filter.Provisioner = (*compressionConfig)(nil)
)

// Validate checks the level against the engine's own range, which the
// parameter spec (0-9 for every engine) cannot say.
func (c *compressionConfig) Validate() error {
	eng, ok := parseEngine(c.Engine)
	if !ok {
		return filter.Invalid("engine", "engine %q unknown", c.Engine)
	}
	if lo, hi, _ := eng.levels(); c.Level != nil && (*c.Level < lo || *c.Level > hi) {
		return filter.Invalid("level", "level %d: %s takes %d-%d", *c.Level, eng, lo, hi)
	}
	return nil
}

// Provision builds the instance; the registry's codec pools are shared by
// every instance of the filter.
func (c *compressionConfig) Provision(filter.Env) (filter.Filter, error) {
	eng, _ := parseEngine(c.Engine)
	_, _, level := eng.levels()
	if c.Level != nil {
		level = *c.Level
	}
	return &compression{info: c.info, cs: c.cs, engine: eng, level: level, frame: c.Frame}, nil
}

type compression struct {
	info   *filter.Info
	cs     *codecs
	engine engine
	level  int
	frame  int
}

func (c *compression) Info() *filter.Info { return c.info }

// Encode compresses plain frame by frame. It holds one plaintext frame and
// one compressed frame at a time.
func (c *compression) Encode(ctx context.Context, _ *filter.Request, plain io.Reader) (io.Reader, func() (filter.Record, error), error) {
	if c.engine == engineZstd {
		if _, err := c.cs.zstdEnc[c.level](); err != nil {
			return nil, nil, fmt.Errorf("%s: zstd encoder: %w", compressionName, err)
		}
	}
	e := &frameEncoder{
		ctx: ctx, c: c, src: plain,
		in:  c.cs.getBuf(c.frame + crcSize),
		out: c.cs.getBuf(c.frame + crcSize),
	}
	return e, e.record, nil
}

type frameEncoder struct {
	ctx     context.Context
	c       *compression
	src     io.Reader
	in, out *[]byte // pooled: a plaintext frame, a compressed one
	pending []byte  // encoded bytes not yet read
	index   []byte  // one uvarint per frame
	plain   int64
	stored  int64
	srcEOF  bool
	err     error // sticky; io.EOF once everything was read
}

func (e *frameEncoder) Read(p []byte) (int, error) {
	if err := e.fill(); err != nil {
		return 0, err
	}
	n := copy(p, e.pending)
	e.pending = e.pending[n:]
	return n, nil
}

// WriteTo hands encoded frames to w without copying them into a caller's
// buffer first.
func (e *frameEncoder) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if err := e.fill(); err != nil {
			if err == io.EOF {
				err = nil
			}
			return total, err
		}
		n, err := w.Write(e.pending)
		total += int64(n)
		e.pending = e.pending[n:]
		if err != nil {
			return total, err
		}
	}
}

// fill makes pending non-empty, or returns why it cannot.
func (e *frameEncoder) fill() error {
	for len(e.pending) == 0 {
		if e.err != nil {
			return e.err
		}
		if e.err = e.next(); e.err != nil {
			e.release()
		}
	}
	return nil
}

// next encodes the following frame into pending.
func (e *frameEncoder) next() error {
	if e.srcEOF {
		return io.EOF
	}
	if err := e.ctx.Err(); err != nil {
		return err
	}
	in := (*e.in)[:e.c.frame]
	n, err := io.ReadFull(e.src, in)
	switch err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		e.srcEOF = true
		if n == 0 {
			return io.EOF
		}
	default:
		return err
	}
	in = in[:n]
	sum := crc32.Checksum(in, e.c.cs.crc)
	payload, ok, err := e.c.compress(in, (*e.out)[:0])
	if err != nil {
		return fmt.Errorf("%s: %s: %w", compressionName, e.c.engine, err)
	}
	if ok {
		sum = crc32.Update(sum, e.c.cs.crc, payload)
		e.index = binary.AppendUvarint(e.index, uint64(len(payload)))
	} else {
		payload = in // stored raw; in has room for the CRC
		e.index = binary.AppendUvarint(e.index, 0)
	}
	e.pending = binary.LittleEndian.AppendUint32(payload, sum)
	e.plain += int64(n)
	e.stored += int64(len(e.pending))
	return nil
}

func (e *frameEncoder) release() {
	if e.in != nil {
		e.c.cs.putBuf(e.in)
		e.c.cs.putBuf(e.out)
		e.in, e.out = nil, nil
	}
}

func (e *frameEncoder) record() (filter.Record, error) {
	if e.err != io.EOF {
		return filter.Record{}, fmt.Errorf("%s: record requested before the stream reached EOF", compressionName)
	}
	return filter.Record{
		Filter:  compressionName,
		Version: compressionVersion,
		Params: map[string]string{
			"engine": e.c.engine.String(),
			"frame":  strconv.Itoa(e.c.frame),
			"plain":  strconv.FormatInt(e.plain, 10),
			"index":  base64.RawStdEncoding.EncodeToString(e.index),
		},
		Size: e.stored,
	}, nil
}

// compress returns frame compressed into dst, and false when storing it
// raw is better: compressing must save at least 1/64 of the frame to pay
// for decompressing it on every read.
func (c *compression) compress(frame, dst []byte) ([]byte, bool, error) {
	limit := len(frame) - len(frame)>>6 - 1
	if limit <= 0 {
		return nil, false, nil
	}
	var out []byte
	switch c.engine {
	case engineZstd:
		enc, err := c.cs.zstdEnc[c.level]()
		if err != nil {
			return nil, false, err
		}
		out = enc.EncodeAll(frame, dst)
	case engineGzip:
		var err error
		if out, err = c.cs.gzipCompress(c.level, frame, dst); err != nil {
			return nil, false, err
		}
	case engineLZ4:
		out = c.cs.lz4Compress(c.level, frame, dst[:limit])
	}
	if len(out) == 0 || len(out) > limit {
		return nil, false, nil
	}
	return out, true, nil
}

// CompressionSizes reports what a compression record saved: the plaintext
// size and the stored size. ok is false for other filters' records.
func CompressionSizes(rec filter.Record) (plain, stored int64, ok bool) {
	if rec.Filter != compressionName {
		return 0, 0, false
	}
	plain, err := strconv.ParseInt(rec.Params["plain"], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return plain, rec.Size, true
}

// frameIndex is a parsed record: where each frame is stored.
type frameIndex struct {
	engine engine
	frame  int64
	plain  int64
	// off[i] is where frame i starts in the stored stream; off[len-1]
	// is the stream's size. payload[i] is 0 for a raw frame.
	off     []int64
	payload []uint32
}

func parseFrameIndex(rec filter.Record) (*frameIndex, error) {
	if err := checkRecord(rec, compressionName, compressionVersion); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: record: %s: %w", compressionName, fmt.Sprintf(format, args...), filter.ErrIntegrity)
	}
	for k := range rec.Params {
		switch k {
		case "engine", "frame", "plain", "index":
		default:
			return nil, bad("unknown field %q", k)
		}
	}
	ix := &frameIndex{}
	var ok bool
	if ix.engine, ok = parseEngine(rec.Params["engine"]); !ok {
		return nil, bad("engine %q unknown", rec.Params["engine"])
	}
	var err error
	if ix.frame, err = strconv.ParseInt(rec.Params["frame"], 10, 64); err != nil || ix.frame < minFrame || ix.frame > maxFrame {
		return nil, bad("frame %q invalid", rec.Params["frame"])
	}
	if ix.plain, err = strconv.ParseInt(rec.Params["plain"], 10, 64); err != nil || ix.plain < 0 || ix.plain > maxPlain {
		return nil, bad("plain size %q invalid", rec.Params["plain"])
	}
	raw, err := base64.RawStdEncoding.Strict().DecodeString(rec.Params["index"])
	if err != nil {
		return nil, bad("index is not base64")
	}
	frames := (ix.plain + ix.frame - 1) / ix.frame
	// Every frame costs at least one index byte: this bounds the
	// allocation by the record's own size.
	if frames > int64(len(raw)) {
		return nil, bad("index holds fewer than %d frames", frames)
	}
	ix.off = make([]int64, frames+1)
	ix.payload = make([]uint32, frames)
	var pos int64
	for i := range frames {
		v, n := binary.Uvarint(raw)
		if n <= 0 {
			return nil, bad("index entry %d unreadable", i)
		}
		raw = raw[n:]
		plen := min(ix.frame, ix.plain-i*ix.frame)
		if v >= uint64(plen) { // stored compressed only when it shrinks
			return nil, bad("frame %d: payload of %d bytes for %d of plaintext", i, v, plen)
		}
		ix.payload[i] = uint32(v)
		size := int64(v)
		if v == 0 {
			size = plen
		}
		ix.off[i] = pos
		pos += size + crcSize
	}
	ix.off[frames] = pos
	if len(raw) != 0 {
		return nil, bad("index holds more than %d frames", frames)
	}
	if pos != rec.Size {
		return nil, bad("frames add up to %d bytes, record says %d", pos, rec.Size)
	}
	return ix, nil
}

// Decode presents src, a stream Encode produced, as its plaintext.
func (c *compression) Decode(_ context.Context, _ *filter.Request, rec filter.Record, src filter.Source) (filter.Source, error) {
	ix, err := parseFrameIndex(rec)
	if err != nil {
		return nil, err
	}
	if src.Size() != rec.Size {
		return nil, fmt.Errorf("%s: stored stream holds %d bytes, record says %d: %w", compressionName, src.Size(), rec.Size, filter.ErrIntegrity)
	}
	if ix.engine == engineZstd {
		// Set up here, so that decompress fails only on the data.
		if _, err := c.cs.zstdDec(); err != nil {
			return nil, fmt.Errorf("%s: zstd decoder: %w", compressionName, err)
		}
	}
	return &compressedSource{cs: c.cs, ix: ix, src: src}, nil
}

type compressedSource struct {
	cs  *codecs
	ix  *frameIndex
	src filter.Source
}

func (s *compressedSource) Size() int64 { return s.ix.plain }

// Open reads the stored span of the frames [off, off+n) overlaps, in one
// request to src, and decompresses them one at a time.
func (s *compressedSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if err := filter.CheckRange(s.ix.plain, off, n); err != nil {
		return nil, fmt.Errorf("%s: %w", compressionName, err)
	}
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	first, last := off/s.ix.frame, (off+n-1)/s.ix.frame
	rc, err := s.src.Open(ctx, s.ix.off[first], s.ix.off[last+1]-s.ix.off[first])
	if err != nil {
		return nil, err
	}
	frame := int(s.ix.frame)
	return &frameDecoder{
		s: s, rc: rc, next: first, skip: off - first*s.ix.frame, left: n,
		cbuf: s.cs.getBuf(frame + crcSize), pbuf: s.cs.getBuf(frame),
	}, nil
}

type frameDecoder struct {
	s          *compressedSource
	rc         io.ReadCloser
	next       int64 // frame to load next
	skip       int64 // plaintext bytes to drop from the next frame
	left       int64 // plaintext bytes still to return
	cur        []byte
	cbuf, pbuf *[]byte
	err        error
}

func (d *frameDecoder) Read(p []byte) (int, error) {
	if err := d.fill(); err != nil {
		return 0, err
	}
	n := copy(p, d.cur)
	d.cur = d.cur[n:]
	d.left -= int64(n)
	return n, nil
}

// WriteTo hands out decoded frames without copying them into a caller's
// buffer first.
func (d *frameDecoder) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if err := d.fill(); err != nil {
			if err == io.EOF {
				err = nil
			}
			return total, err
		}
		n, err := w.Write(d.cur)
		total += int64(n)
		d.cur = d.cur[n:]
		d.left -= int64(n)
		if err != nil {
			return total, err
		}
	}
}

// fill makes cur non-empty, or returns why it cannot.
func (d *frameDecoder) fill() error {
	for len(d.cur) == 0 {
		if d.err != nil {
			return d.err
		}
		if d.left == 0 {
			d.err = io.EOF
		} else {
			d.err = d.load()
		}
	}
	return nil
}

// load reads and checks frame d.next and points cur at the part of it
// the range wants.
func (d *frameDecoder) load() error {
	ix, i := d.s.ix, d.next
	d.next++
	stored := (*d.cbuf)[:ix.off[i+1]-ix.off[i]]
	if _, err := io.ReadFull(d.rc, stored); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: frame %d: stored stream ends early: %w", compressionName, i, filter.ErrIntegrity)
		}
		return err
	}
	plen := int(min(ix.frame, ix.plain-i*ix.frame))
	body, sum := stored[:len(stored)-crcSize], binary.LittleEndian.Uint32(stored[len(stored)-crcSize:])
	plain := body
	crc := d.s.cs.crc
	if ix.payload[i] != 0 {
		plain = (*d.pbuf)[:plen]
		if err := d.s.cs.decompress(ix.engine, body, plain); err != nil {
			return fmt.Errorf("%s: frame %d: %w (%w)", compressionName, i, filter.ErrIntegrity, err)
		}
		if crc32.Update(crc32.Checksum(plain, crc), crc, body) != sum {
			return fmt.Errorf("%s: frame %d: checksum mismatch: %w", compressionName, i, filter.ErrIntegrity)
		}
	} else if crc32.Checksum(plain, crc) != sum {
		return fmt.Errorf("%s: frame %d: checksum mismatch: %w", compressionName, i, filter.ErrIntegrity)
	}
	d.cur = plain[d.skip:min(int64(plen), d.skip+d.left)]
	d.skip = 0
	return nil
}

func (d *frameDecoder) Close() error {
	if d.cbuf == nil {
		return nil
	}
	d.s.cs.putBuf(d.cbuf)
	d.s.cs.putBuf(d.pbuf)
	d.cbuf, d.pbuf, d.cur = nil, nil, nil
	if d.err == nil {
		d.err = errors.New("read after close")
	}
	return d.rc.Close()
}

// codecs holds what is worth reusing across instances of the filter:
// buffers, gzip and lz4 state, zstd coders. It belongs to one Info, so
// the instances a data plane builds per request or per policy share it
// and nothing is global.
type codecs struct {
	crc  *crc32.Table
	bufs [bufClasses]sync.Pool // *[]byte by size class

	// zstd's EncodeAll and DecodeAll are safe for concurrent use and keep
	// their own pool of block coders, GOMAXPROCS of them.
	zstdEnc [5]func() (*zstd.Encoder, error) // by level 1-4
	zstdDec func() (*zstd.Decoder, error)

	gzipW   [10]sync.Pool // *gzip.Writer by level
	gzipR   sync.Pool     // *gzipReader
	lz4Fast sync.Pool     // *lz4.Compressor
	lz4HC   [10]sync.Pool // *lz4.CompressorHC by level
}

func newCodecs() *codecs {
	cs := &codecs{crc: crc32.MakeTable(crc32.Castagnoli)}
	levels := [...]zstd.EncoderLevel{1: zstd.SpeedFastest, 2: zstd.SpeedDefault, 3: zstd.SpeedBetterCompression, 4: zstd.SpeedBestCompression}
	for l := 1; l < len(levels); l++ {
		cs.zstdEnc[l] = sync.OnceValues(func() (*zstd.Encoder, error) {
			return zstd.NewWriter(nil,
				zstd.WithEncoderLevel(levels[l]),
				zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
				zstd.WithEncoderCRC(false)) // the frame's CRC32C covers it
		})
	}
	cs.zstdDec = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecodeAllCapLimit(true), // never more than the frame
			zstd.WithDecoderMaxMemory(maxFrame))
	})
	return cs
}

// Buffers come in power-of-two classes from minFrame to maxFrame, each
// with slack for a frame's CRC and an engine's worst-case expansion.
const (
	minClassShift = 16 // minFrame
	bufClasses    = 9  // up to maxFrame
)

func bufSlack(n int) int { return n>>8 + 64 }

// bufClass returns the smallest class holding n bytes, or bufClasses
// when none does.
func bufClass(n int) int {
	for c := range bufClasses {
		if size := 1 << (minClassShift + c); n <= size+bufSlack(size) {
			return c
		}
	}
	return bufClasses
}

func (cs *codecs) getBuf(n int) *[]byte {
	c := bufClass(n)
	if c >= bufClasses {
		b := make([]byte, n)
		return &b
	}
	if b, ok := cs.bufs[c].Get().(*[]byte); ok {
		return b
	}
	size := 1 << (minClassShift + c)
	b := make([]byte, size+bufSlack(size))
	return &b
}

func (cs *codecs) putBuf(b *[]byte) {
	size := cap(*b)
	for c := range bufClasses {
		cls := 1 << (minClassShift + c)
		if size == cls+bufSlack(cls) {
			*b = (*b)[:cap(*b)]
			cs.bufs[c].Put(b)
			return
		}
	}
}

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (cs *codecs) gzipCompress(level int, frame, dst []byte) ([]byte, error) {
	sw := &sliceWriter{b: dst}
	zw, ok := cs.gzipW[level].Get().(*gzip.Writer)
	if ok {
		zw.Reset(sw)
	} else {
		var err error
		if zw, err = gzip.NewWriterLevel(sw, level); err != nil {
			return nil, err
		}
	}
	defer cs.gzipW[level].Put(zw)
	if _, err := zw.Write(frame); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return sw.b, nil
}

// lz4Compress returns frame compressed into dst, or nothing when it does
// not fit: dst's length is the most the caller will store. The block
// compressors' only error is that one.
func (cs *codecs) lz4Compress(level int, frame, dst []byte) []byte {
	var n int
	var err error
	if level == 0 {
		c, ok := cs.lz4Fast.Get().(*lz4.Compressor)
		if !ok {
			c = new(lz4.Compressor)
		}
		n, err = c.CompressBlock(frame, dst)
		cs.lz4Fast.Put(c)
	} else {
		c, ok := cs.lz4HC[level].Get().(*lz4.CompressorHC)
		if !ok {
			c = &lz4.CompressorHC{Level: lz4.CompressionLevel(1 << (8 + level))}
		}
		n, err = c.CompressBlock(frame, dst)
		cs.lz4HC[level].Put(c)
	}
	if err != nil {
		return nil
	}
	return dst[:n]
}

// gzipReader is a pooled gzip reader with the bytes.Reader it reads from.
type gzipReader struct {
	br bytes.Reader
	zr *gzip.Reader
}

// decompress fills plain, whose length is the frame's plaintext size,
// from payload. Any mismatch in length is an error: payload is untrusted.
func (cs *codecs) decompress(e engine, payload, plain []byte) error {
	switch e {
	case engineZstd:
		dec, err := cs.zstdDec()
		if err != nil {
			return err
		}
		out, err := dec.DecodeAll(payload, plain[:0:len(plain)])
		if err != nil {
			return err
		}
		if len(out) != len(plain) {
			return fmt.Errorf("zstd frame holds %d bytes, want %d", len(out), len(plain))
		}
		if &out[0] != &plain[0] {
			copy(plain, out) // not expected with the cap limit; stay correct anyway
		}
		return nil
	case engineGzip:
		return cs.gunzip(payload, plain)
	case engineLZ4:
		n, err := lz4.UncompressBlock(payload, plain)
		if err != nil {
			return err
		}
		if n != len(plain) {
			return fmt.Errorf("lz4 block holds %d bytes, want %d", n, len(plain))
		}
		return nil
	}
	return fmt.Errorf("engine %s unknown", e)
}

func (cs *codecs) gunzip(payload, plain []byte) error {
	g, ok := cs.gzipR.Get().(*gzipReader)
	if !ok {
		g = &gzipReader{}
	}
	defer cs.gzipR.Put(g)
	g.br.Reset(payload)
	var err error
	if g.zr == nil {
		g.zr, err = gzip.NewReader(&g.br)
	} else {
		err = g.zr.Reset(&g.br)
	}
	if err != nil {
		g.zr = nil
		return err
	}
	g.zr.Multistream(false)
	if _, err := io.ReadFull(g.zr, plain); err != nil {
		return err
	}
	// Reading on to EOF makes the reader check the member's CRC and size.
	var one [1]byte
	if n, err := g.zr.Read(one[:]); n != 0 || err != io.EOF {
		return errors.New("gzip member holds more than the frame")
	}
	if g.br.Len() != 0 {
		return errors.New("data after the gzip member")
	}
	return nil
}
