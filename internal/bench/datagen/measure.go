package datagen

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/klauspost/compress/zstd"
)

// Compressors measures compression ratios the way the targets are
// defined: gzip at its default level (Go's compress/gzip) and zstd at its
// default level (klauspost/compress). It is not safe for concurrent use.
type Compressors struct {
	gz   *gzip.Writer
	zs   *zstd.Encoder
	buf  bytes.Buffer
	zout []byte
}

// NewCompressors prepares reusable compressors.
func NewCompressors() (*Compressors, error) {
	zs, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, fmt.Errorf("datagen: zstd: %w", err)
	}
	c := &Compressors{zs: zs}
	c.gz, _ = gzip.NewWriterLevel(&c.buf, gzip.DefaultCompression)
	return c, nil
}

// Close releases the zstd encoder.
func (c *Compressors) Close() { c.zs.Close() }

// Gzip returns len(p) / len(gzip(p)).
func (c *Compressors) Gzip(p []byte) float64 {
	c.buf.Reset()
	c.gz.Reset(&c.buf)
	_, _ = c.gz.Write(p) // writes to a bytes.Buffer do not fail
	_ = c.gz.Close()
	return float64(len(p)) / float64(c.buf.Len())
}

// Zstd returns len(p) / len(zstd(p)).
func (c *Compressors) Zstd(p []byte) float64 {
	c.zout = c.zs.EncodeAll(p, c.zout[:0])
	return float64(len(p)) / float64(len(c.zout))
}

// Both returns the gzip and zstd ratios and their geometric mean, the
// figure the generator is calibrated on.
func (c *Compressors) Both(p []byte) (gz, zs, mean float64) {
	gz, zs = c.Gzip(p), c.Zstd(p)
	return gz, zs, math.Sqrt(gz * zs)
}

// Profile characterises a sample's compressibility chunk by chunk: the
// geometric mean of its gzip and zstd ratios, one number per ChunkSize
// bytes (SDGen keeps a few KB per chunk; one ratio is what compression
// benchmarks need).
type Profile struct {
	ChunkSize int       `json:"chunk_size" yaml:"chunk_size"`
	Chunks    []float64 `json:"chunks" yaml:"chunks"`
}

// Ratio is the profile's overall ratio (total original over total
// compressed, chunk by chunk).
func (p *Profile) Ratio() float64 {
	var compressed float64
	for _, r := range p.Chunks {
		compressed += 1 / r
	}
	return float64(len(p.Chunks)) / compressed
}

// ProfileOf characterises everything r yields. A trailing partial chunk is
// kept when it is at least a quarter chunk (smaller ones say little).
func ProfileOf(r io.Reader) (*Profile, error) {
	c, err := NewCompressors()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	p := &Profile{ChunkSize: ChunkSize}
	buf := make([]byte, ChunkSize)
	br := bufio.NewReaderSize(r, ChunkSize)
	for {
		n, err := io.ReadFull(br, buf)
		if n >= ChunkSize/4 || (n > 0 && len(p.Chunks) == 0) {
			_, _, mean := c.Both(buf[:n])
			p.Chunks = append(p.Chunks, mean)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("datagen: reading sample: %w", err)
		}
	}
	if len(p.Chunks) == 0 {
		return nil, fmt.Errorf("datagen: empty sample")
	}
	return p, nil
}

// ProfileFile characterises a sample file.
func ProfileFile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("datagen: %w", err)
	}
	defer f.Close()
	return ProfileOf(f)
}
