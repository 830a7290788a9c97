// Package checksum owns the integrity of object bytes on upload: the MD5
// behind ETags and S3's additional checksums (CRC32, CRC32C, CRC64NVME,
// SHA1, SHA256), computed while the body streams and verified when it ends,
// against Content-MD5, x-amz-checksum-* headers or trailing headers.
//
// A PUT handler parses what the request asks for, wraps the (already
// SigV4-verified) body and hands the wrapper to the backend:
//
//	spec, err := checksum.ParseHeaders(r.Header)
//	if err != nil { ... } // *s3err.Error
//	cr := checksum.NewReader(body, spec, func(name string) string {
//		return body.Trailer().Get(name) // trailing x-amz-checksum-*
//	})
//	in := storage.PutInput{Body: cr, Seal: func(m *storage.ObjectMeta) error {
//		m.ETag, m.Size, m.Checksums = cr.MD5Hex(), cr.Size(), cr.Checksums()
//		return nil
//	}}
//
// The Reader returns an *s3err.Error instead of io.EOF when a digest does
// not match, so a backend that aborts on read errors never stores the
// object.
//
// For CompleteMultipartUpload, MultipartETag, Composite and FullObject
// derive the object's ETag and checksum from its parts'.
package checksum

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/minio/crc64nvme"

	"github.com/facet-sds/facet/internal/s3err"
)

// Algorithm is an S3 additional checksum algorithm, named in upper case as
// S3 names it in ChecksumAlgorithm and in storage.ObjectMeta.Checksums.
type Algorithm string

// The algorithms S3 defines.
const (
	CRC32     Algorithm = "CRC32"
	CRC32C    Algorithm = "CRC32C"
	CRC64NVME Algorithm = "CRC64NVME"
	SHA1      Algorithm = "SHA1"
	SHA256    Algorithm = "SHA256"
)

// Algorithms lists every algorithm, in S3's order of presentation.
func Algorithms() []Algorithm {
	return []Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256}
}

// ParseAlgorithm accepts an algorithm name in any case ("crc32c").
func ParseAlgorithm(s string) (Algorithm, bool) {
	a := Algorithm(strings.ToUpper(strings.TrimSpace(s)))
	return a, slices.Contains(Algorithms(), a)
}

// Header is the request and response header carrying a's value, e.g.
// "x-amz-checksum-crc32c".
func (a Algorithm) Header() string { return "x-amz-checksum-" + strings.ToLower(string(a)) }

// New returns a hash computing a. CRCs sum to their big-endian bytes, which
// is what S3 encodes in base64.
func (a Algorithm) New() hash.Hash {
	switch a {
	case CRC32:
		return crc32.NewIEEE()
	case CRC32C:
		return crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case CRC64NVME:
		return crc64nvme.New()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	}
	panic(fmt.Sprintf("checksum: unknown algorithm %q", string(a)))
}

// Size is the length in bytes of a's raw digest.
func (a Algorithm) Size() int {
	switch a {
	case CRC32, CRC32C:
		return 4
	case CRC64NVME:
		return 8
	case SHA1:
		return sha1.Size
	case SHA256:
		return sha256.Size
	}
	return 0
}

// Sum returns the base64 checksum of data, as S3 shows it.
func (a Algorithm) Sum(data []byte) string {
	h := a.New()
	h.Write(data)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// validValue reports whether v is the base64 of an a-sized digest.
func (a Algorithm) validValue(v string) bool {
	raw, err := base64.StdEncoding.DecodeString(v)
	return err == nil && len(raw) == a.Size()
}

// Spec is what a request asks to be checked and computed.
type Spec struct {
	// ContentMD5 is the decoded Content-MD5 header, nil when absent.
	ContentMD5 []byte
	// Expected holds x-amz-checksum-* header values (base64).
	Expected map[Algorithm]string
	// Trailer lists the algorithms whose values arrive as trailing headers
	// (named in x-amz-trailer).
	Trailer []Algorithm
	// Compute lists algorithms to compute and store without a value to
	// check: those named by x-amz-sdk-checksum-algorithm or
	// x-amz-checksum-algorithm alone. A handler may add a default here.
	Compute []Algorithm
}

// Algorithms returns every algorithm the Spec involves, without duplicates,
// in the order of Algorithms().
func (s Spec) Algorithms() []Algorithm {
	var out []Algorithm
	for _, a := range Algorithms() {
		if _, ok := s.Expected[a]; ok || slices.Contains(s.Trailer, a) || slices.Contains(s.Compute, a) {
			out = append(out, a)
		}
	}
	return out
}

// ParseHeaders reads the checksum headers of a request: Content-MD5,
// x-amz-checksum-<algorithm>, x-amz-trailer, x-amz-sdk-checksum-algorithm
// and x-amz-checksum-algorithm. The error is an *s3err.Error: InvalidDigest
// for a malformed Content-MD5, InvalidRequest for the rest.
func ParseHeaders(h http.Header) (Spec, error) {
	var s Spec
	if vals := h.Values("Content-Md5"); len(vals) > 0 {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(vals[0]))
		if err != nil || len(raw) != md5.Size || len(vals) > 1 {
			return s, s3err.New(s3err.InvalidDigest)
		}
		s.ContentMD5 = raw
	}
	for _, a := range Algorithms() {
		vals := h.Values(a.Header())
		if len(vals) == 0 {
			continue
		}
		if len(vals) > 1 || !a.validValue(strings.TrimSpace(vals[0])) {
			return s, s3err.Newf(s3err.InvalidRequest, "Value for %s header is invalid.", a.Header())
		}
		if s.Expected == nil {
			s.Expected = make(map[Algorithm]string)
		}
		s.Expected[a] = strings.TrimSpace(vals[0])
	}
	for _, v := range h.Values("X-Amz-Trailer") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			suffix, ok := strings.CutPrefix(name, "x-amz-checksum-")
			if !ok {
				continue // not a checksum; the SigV4 layer polices trailers
			}
			a, ok := ParseAlgorithm(suffix)
			if !ok {
				return s, s3err.Newf(s3err.InvalidRequest, "The value specified in the x-amz-trailer header is not supported")
			}
			if !slices.Contains(s.Trailer, a) {
				s.Trailer = append(s.Trailer, a)
			}
		}
	}
	if len(s.Expected)+len(s.Trailer) > 1 {
		return s, s3err.Newf(s3err.InvalidRequest, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
	}
	for _, name := range []string{"X-Amz-Sdk-Checksum-Algorithm", "X-Amz-Checksum-Algorithm"} {
		v := h.Get(name)
		if v == "" {
			continue
		}
		a, ok := ParseAlgorithm(v)
		if !ok {
			return s, s3err.Newf(s3err.InvalidRequest, "Value for %s header is invalid.", strings.ToLower(name))
		}
		// The algorithm named must be the one whose value is sent.
		for _, b := range s.Algorithms() {
			if b != a {
				return s, s3err.Newf(s3err.InvalidRequest, "Value for %s header is invalid.", strings.ToLower(name))
			}
		}
		if !slices.Contains(s.Algorithms(), a) {
			s.Compute = append(s.Compute, a)
		}
	}
	return s, nil
}

// Reader computes the MD5 and the Spec's checksums of the bytes read
// through it and verifies them when the underlying reader ends. It returns
// an *s3err.Error instead of io.EOF on a mismatch, and keeps returning it.
// Its accessors are meaningful once Read has returned io.EOF.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	src     io.Reader
	spec    Spec
	trailer func(name string) string

	md5    hash.Hash
	algs   []Algorithm
	hashes []hash.Hash
	n      int64

	// pipe, when set, hashes on another goroutine (see Pipelined).
	pipe *hashPipe

	err    error // sticky: io.EOF after success
	md5Hex string
	sums   map[string]string
}

// NewReader wraps src. trailer returns the value of a trailing header by
// name (e.g. "x-amz-checksum-crc32"); it is called only after src has
// returned io.EOF, and only for the algorithms in spec.Trailer. It may be
// nil when spec.Trailer is empty.
func NewReader(src io.Reader, spec Spec, trailer func(name string) string) *Reader {
	r := &Reader{src: src, spec: spec, trailer: trailer, md5: md5.New(), algs: spec.Algorithms()}
	for _, a := range r.algs {
		r.hashes = append(r.hashes, a.New())
	}
	return r
}

// Pipelined moves hashing to a second goroutine, so that a large body's
// digests are computed while the next bytes are received and written: MD5
// alone runs at well under disk and loopback speed, and on the request's
// goroutine it would bound a large PUT's throughput. It costs two buffers
// of 128 KiB, so callers enable it for large bodies only. Call it before
// the first Read.
func (r *Reader) Pipelined() *Reader {
	sinks := append([]hash.Hash{r.md5}, r.hashes...)
	r.pipe = newHashPipe(sinks)
	return r
}

// Close stops the hashing goroutine of a Reader abandoned before EOF.
func (r *Reader) Close() error {
	if r.pipe != nil {
		r.pipe.close()
	}
	return nil
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.src.Read(p)
	if n > 0 {
		r.n += int64(n)
		if r.pipe != nil {
			r.pipe.write(p[:n])
		} else {
			r.md5.Write(p[:n])
			for _, h := range r.hashes {
				h.Write(p[:n])
			}
		}
	}
	if err == io.EOF {
		if n > 0 {
			// Judge on the next call, after the caller has these bytes.
			return n, nil
		}
		r.err = r.finish()
		return 0, r.err
	}
	if err != nil {
		// The cause (a verification failure upstream, a broken
		// connection) is the source's to report; it stays sticky here.
		r.err = err
		if r.pipe != nil {
			r.pipe.close()
		}
	}
	return n, err
}

func (r *Reader) finish() error {
	if r.pipe != nil {
		r.pipe.close()
	}
	sum := r.md5.Sum(nil)
	if r.spec.ContentMD5 != nil && !bytes.Equal(sum, r.spec.ContentMD5) {
		return s3err.New(s3err.BadDigest)
	}
	sums := make(map[string]string, len(r.algs))
	for i, a := range r.algs {
		got := base64.StdEncoding.EncodeToString(r.hashes[i].Sum(nil))
		want, ok := r.spec.Expected[a]
		if !ok && slices.Contains(r.spec.Trailer, a) {
			if r.trailer != nil {
				want = strings.TrimSpace(r.trailer(a.Header()))
			}
			if want == "" {
				return s3err.Newf(s3err.InvalidRequest, "The trailing header %s declared in x-amz-trailer is missing.", a.Header())
			}
			if !a.validValue(want) {
				return s3err.Newf(s3err.InvalidRequest, "Value for %s trailing header is invalid.", a.Header())
			}
			ok = true
		}
		if ok && got != want {
			return s3err.Newf(s3err.InvalidChecksum, "The %s you specified did not match the calculated checksum.", a)
		}
		sums[string(a)] = got
	}
	r.md5Hex = hex.EncodeToString(sum)
	if len(sums) > 0 {
		r.sums = sums
	}
	return io.EOF
}

// Size is the number of bytes read so far.
func (r *Reader) Size() int64 { return r.n }

// MD5Hex is the hex MD5 of the body (its single-part ETag), once Read has
// returned io.EOF; "" before.
func (r *Reader) MD5Hex() string { return r.md5Hex }

// Checksums maps each computed algorithm ("CRC32") to its base64 value,
// once Read has returned io.EOF; nil before, or when none was asked for. The
// caller may keep and modify the map.
func (r *Reader) Checksums() map[string]string { return r.sums }

// MultipartETag is S3's ETag of a multipart object: the MD5 of the parts'
// binary MD5s, in hex, followed by "-" and the number of parts. partETags
// are the parts' ETags in order, quoted or not.
func MultipartETag(partETags []string) (string, error) {
	h := md5.New()
	for i, e := range partETags {
		raw, err := hex.DecodeString(strings.Trim(e, `"`))
		if err != nil || len(raw) != md5.Size {
			return "", fmt.Errorf("part %d: ETag %q is not a hex MD5", i+1, e)
		}
		h.Write(raw)
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(partETags)), nil
}

// Composite is S3's COMPOSITE checksum of a multipart object: a over the
// parts' binary checksums, in base64, followed by "-" and the number of
// parts. partSums are the parts' base64 checksums in order.
func Composite(a Algorithm, partSums []string) (string, error) {
	if _, ok := ParseAlgorithm(string(a)); !ok {
		return "", fmt.Errorf("unknown checksum algorithm %q", string(a))
	}
	h := a.New()
	for i, s := range partSums {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != a.Size() {
			return "", fmt.Errorf("part %d: invalid %s checksum", i+1, a)
		}
		h.Write(raw)
	}
	return fmt.Sprintf("%s-%d", base64.StdEncoding.EncodeToString(h.Sum(nil)), len(partSums)), nil
}

// PartSum is one part's checksum (base64) and length, for FullObject.
type PartSum struct {
	Sum  string
	Size int64
}

// FullObject is S3's FULL_OBJECT checksum of a multipart object: the CRC
// of the parts' concatenation, computed from the parts' CRCs and lengths
// alone. Only the CRC algorithms combine this way.
func FullObject(a Algorithm, parts []PartSum) (string, error) {
	var poly uint64
	var width int
	switch a {
	case CRC32:
		poly, width = 0xEDB88320, 32 // reflected polynomials
	case CRC32C:
		poly, width = 0x82F63B78, 32
	case CRC64NVME:
		poly, width = 0x9A6C9329AC4BC9B5, 64
	default:
		return "", fmt.Errorf("%s checksums cannot be combined into a full-object checksum", a)
	}
	size := width / 8
	var crc uint64 // the CRC of nothing, for every algorithm here
	for i, p := range parts {
		raw, err := base64.StdEncoding.DecodeString(p.Sum)
		if err != nil || len(raw) != size || p.Size < 0 {
			return "", fmt.Errorf("part %d: invalid %s checksum or size", i+1, a)
		}
		var c uint64
		for _, b := range raw {
			c = c<<8 | uint64(b)
		}
		crc = crcCombine(poly, width, crc, c, p.Size)
	}
	out := make([]byte, size)
	for i := range out {
		out[size-1-i] = byte(crc >> (8 * i))
	}
	return base64.StdEncoding.EncodeToString(out), nil
}

// crcCombine returns the CRC of A||B from crc1 = CRC(A), crc2 = CRC(B) and
// len2 = len(B), for a reflected CRC whose initial value and final XOR are
// both all ones (CRC-32, CRC-32C, CRC-64/NVME). It appends len2 zero bytes
// to crc1 by repeated squaring of the one-zero-bit operator in GF(2), as
// zlib's crc32_combine does.
func crcCombine(poly uint64, width int, crc1, crc2 uint64, len2 int64) uint64 {
	if len2 == 0 {
		return crc1
	}
	times := func(mat []uint64, vec uint64) uint64 {
		var sum uint64
		for i := 0; vec != 0; i, vec = i+1, vec>>1 {
			if vec&1 != 0 {
				sum ^= mat[i]
			}
		}
		return sum
	}
	square := func(dst, mat []uint64) {
		for n := range width {
			dst[n] = times(mat, mat[n])
		}
	}
	odd, even := make([]uint64, width), make([]uint64, width)
	odd[0] = poly // the operator for one zero bit
	for n, row := 1, uint64(1); n < width; n, row = n+1, row<<1 {
		odd[n] = row
	}
	square(even, odd) // two zero bits
	square(odd, even) // four
	for {
		square(even, odd) // one zero byte, then 4, 16, ...
		if len2&1 != 0 {
			crc1 = times(even, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
		square(odd, even)
		if len2&1 != 0 {
			crc1 = times(odd, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

const pipeBufSize = 128 << 10

// hashPipe feeds hashes from a goroutine through two alternating buffers.
type hashPipe struct {
	work   chan []byte
	free   chan []byte
	done   chan struct{}
	cur    []byte
	closed bool
}

func newHashPipe(sinks []hash.Hash) *hashPipe {
	p := &hashPipe{work: make(chan []byte, 1), free: make(chan []byte, 2), done: make(chan struct{})}
	p.free <- make([]byte, 0, pipeBufSize)
	p.cur = make([]byte, 0, pipeBufSize)
	go func() {
		defer close(p.done)
		for b := range p.work {
			for _, h := range sinks {
				h.Write(b)
			}
			p.free <- b[:0]
		}
	}()
	return p
}

func (p *hashPipe) write(b []byte) {
	for len(b) > 0 {
		n := copy(p.cur[len(p.cur):cap(p.cur)], b)
		p.cur = p.cur[:len(p.cur)+n]
		b = b[n:]
		if len(p.cur) == cap(p.cur) {
			p.work <- p.cur
			p.cur = <-p.free
		}
	}
}

// close hands over what is buffered and waits until every byte is hashed.
func (p *hashPipe) close() {
	if p.closed {
		return
	}
	p.closed = true
	if len(p.cur) > 0 {
		p.work <- p.cur
	}
	close(p.work)
	<-p.done
}
