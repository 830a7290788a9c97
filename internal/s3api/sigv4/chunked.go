package sigv4

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/facet-sds/facet/internal/s3err"
)

// The aws-chunked encoding (Content-Encoding: aws-chunked):
//
//	hex-size[;chunk-signature=sig]\r\n data \r\n   (repeated)
//	0[;chunk-signature=sig]\r\n
//	[name:value\r\n ...]                           (trailers)
//	[x-amz-trailer-signature:sig\r\n]
//	\r\n
//
// Each chunk signature chains from the previous one, the first from the
// request's own signature, so chunks can be neither altered, reordered,
// dropped nor replayed into another request.

type trailerMode int

const (
	trailerNone trailerMode = iota
	trailerUnsigned
	trailerSigned
)

const (
	maxChunkLine    = 4096     // a chunk header is ~90 bytes
	maxTrailerBytes = 16 << 10 // all trailer lines together
	maxTrailerLines = 64
	readBufSize     = 64 << 10
	trailerSigName  = "x-amz-trailer-signature"
)

// malformedTrailer is S3's code for trailing data it cannot parse; s3err has
// no entry for it because only this package produces it.
var malformedTrailer = s3err.Code{
	Name:    "MalformedTrailerError",
	Status:  http.StatusBadRequest,
	Message: "The request contained trailing data that was not well-formed or did not conform to our published schema.",
}

func malformedChunk(format string, args ...any) *s3err.Error {
	return s3err.Newf(s3err.InvalidRequest, "Malformed aws-chunked body: "+format, args...)
}

func badTrailer(format string, args ...any) *s3err.Error {
	return &s3err.Error{Code: malformedTrailer, Err: fmt.Errorf(format, args...)}
}

// incomplete is a body that ended early; an S3 error of the body's
// source (a RequestTimeout when the body stopped arriving) is kept.
func incomplete(err error) *s3err.Error {
	var se *s3err.Error
	if errors.As(err, &se) {
		return se
	}
	return s3err.Wrap(s3err.IncompleteBody, err)
}

// chunkSigner holds the rolling state of chunk and trailer signatures.
type chunkSigner struct {
	key     []byte
	amzDate string
	scope   string
	prev    string // hex signature of the previous chunk, or the seed
}

// verify checks got against the signature of the next element and, on
// success, makes it the previous signature.
func (s *chunkSigner) verify(kind, hashes, got string) bool {
	sts := kind + "\n" + s.amzDate + "\n" + s.scope + "\n" + s.prev + "\n" + hashes
	want := hex.EncodeToString(hmacSHA256(s.key, []byte(sts)))
	if !hmac.Equal([]byte(want), []byte(got)) {
		return false
	}
	s.prev = want
	return true
}

func (s *chunkSigner) verifyChunk(dataSum []byte, got string) bool {
	return s.verify("AWS4-HMAC-SHA256-PAYLOAD", emptySHA256+"\n"+hex.EncodeToString(dataSum), got)
}

// verifyTrailer checks the signature over the trailer lines ("name:value"),
// each followed by "\n". Signers disagree on the order of several trailers
// (as sent, or sorted), so both are tried; either way every line is covered.
func (s *chunkSigner) verifyTrailer(lines []string, got string) bool {
	try := func(lines []string) bool {
		h := sha256.New()
		for _, l := range lines {
			h.Write([]byte(l + "\n"))
		}
		return s.verify("AWS4-HMAC-SHA256-TRAILER", hex.EncodeToString(h.Sum(nil)), got)
	}
	if try(lines) {
		return true
	}
	return len(lines) > 1 && !slices.IsSorted(lines) && try(slices.Sorted(slices.Values(lines)))
}

// chunkDecoder is an io.Reader over the payload of an aws-chunked stream.
// It never buffers more than its read buffer: chunk data is passed through
// as it arrives and its signature checked when the chunk ends.
type chunkDecoder struct {
	br       *bufio.Reader
	signer   *chunkSigner // nil when chunks carry no signatures
	trailers trailerMode
	declared []string // x-amz-trailer names, lower case
	limit    int64    // announced decoded length, -1 if unknown

	decoded int64
	left    int64  // bytes of the current chunk still to read
	sig     string // the current chunk's signature
	h       hash.Hash
	trailer http.Header
	done    bool
	err     error
}

func (d *chunkDecoder) init(src io.Reader) {
	d.br = bufio.NewReaderSize(src, readBufSize)
	d.h = sha256.New()
}

func (d *chunkDecoder) fail(err error) error {
	d.err = err
	return err
}

// Read implements io.Reader. It returns io.EOF only after the final chunk
// and the trailers have been read and verified.
func (d *chunkDecoder) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if d.left == 0 {
		if err := d.nextChunk(); err != nil {
			return 0, d.fail(err)
		}
		if d.done {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.br.Read(p)
	if n == 0 {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, d.fail(incomplete(err))
	}
	d.left -= int64(n)
	d.decoded += int64(n)
	d.h.Write(p[:n])
	if d.left == 0 {
		if err := d.endChunk(); err != nil {
			// The chunk's last bytes are withheld: nothing good follows.
			return 0, d.fail(err)
		}
	}
	return n, nil
}

// readLine reads one line without its "\n" or "\r\n". It returns io.EOF
// only when the stream ends cleanly before the line starts.
func (d *chunkDecoder) readLine(max int) (string, error) {
	line, err := d.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > max:
		return "", malformedChunk("line longer than %d bytes", max)
	case err == io.EOF && len(line) == 0:
		return "", io.EOF
	case err == io.EOF:
		return "", incomplete(io.ErrUnexpectedEOF)
	case err != nil:
		return "", incomplete(err)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return string(line), nil
}

// nextChunk reads a chunk header; after the final one it reads the trailers
// and sets done.
func (d *chunkDecoder) nextChunk() error {
	line, err := d.readLine(maxChunkLine)
	if err == io.EOF {
		return incomplete(io.ErrUnexpectedEOF)
	}
	if err != nil {
		return err
	}
	sizeStr, ext, _ := strings.Cut(line, ";")
	size, ok := parseChunkSize(sizeStr)
	if !ok {
		return malformedChunk("invalid chunk size %q", truncate(sizeStr, 20))
	}
	if d.signer != nil {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !ok || !isHex(sig, 64) {
			return malformedChunk("missing or invalid chunk-signature")
		}
		d.sig = strings.ToLower(sig)
	}
	if d.limit >= 0 && size > d.limit-d.decoded {
		return s3err.Newf(s3err.InvalidRequest,
			"The request body is longer than its announced length of %d bytes", d.limit)
	}
	d.h.Reset()
	if size > 0 {
		d.left = size
		return nil
	}
	if d.signer != nil && !d.signer.verifyChunk(d.h.Sum(nil), d.sig) {
		return &s3err.Error{Code: s3err.SignatureDoesNotMatch, Err: errors.New("final chunk signature mismatch")}
	}
	if err := d.readTrailers(); err != nil {
		return err
	}
	d.done = true
	return nil
}

// parseChunkSize parses 1 to 15 hex digits, so the size fits an int64.
func parseChunkSize(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(v)
	}
	return n, true
}

// endChunk reads the CRLF after a chunk's data and checks its signature.
func (d *chunkDecoder) endChunk() error {
	var crlf [2]byte
	if _, err := io.ReadFull(d.br, crlf[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return incomplete(err)
	}
	if crlf != [2]byte{'\r', '\n'} {
		return malformedChunk("chunk data not followed by CRLF")
	}
	if d.signer != nil && !d.signer.verifyChunk(d.h.Sum(nil), d.sig) {
		return &s3err.Error{Code: s3err.SignatureDoesNotMatch,
			Err: fmt.Errorf("chunk signature mismatch after %d payload bytes", d.decoded)}
	}
	return nil
}

// readTrailers reads what follows the final chunk up to the empty line that
// ends the stream. Clients differ in small ways (minio-go ends trailer lines
// with a bare LF and puts an empty line before the signature; some omit the
// last CRLF), so empty lines are skipped while declared trailers or the
// trailer signature are still due, and a clean end of stream is accepted in
// place of the final empty line.
func (d *chunkDecoder) readTrailers() error {
	var lines []string // canonical trailer lines, in the order sent
	sawSig := false
	total := 0
	for n := 0; ; n++ {
		line, err := d.readLine(maxChunkLine)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		total += len(line)
		if total > maxTrailerBytes || n >= maxTrailerLines {
			return badTrailer("trailer section too long")
		}
		if line == "" {
			if d.expectingTrailer(sawSig) {
				continue
			}
			break
		}
		if d.trailers == trailerNone {
			return badTrailer("data after the final chunk of a payload without trailers")
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return badTrailer("trailer line without a colon")
		}
		name = strings.ToLower(strings.TrimSpace(name))
		value = strings.TrimSpace(value)
		if name == trailerSigName {
			if d.trailers != trailerSigned || sawSig || !isHex(value, 64) {
				return badTrailer("unexpected or invalid %s", trailerSigName)
			}
			if !d.signer.verifyTrailer(lines, strings.ToLower(value)) {
				return &s3err.Error{Code: s3err.SignatureDoesNotMatch, Err: errors.New("trailer signature mismatch")}
			}
			sawSig = true
			continue
		}
		if sawSig {
			return badTrailer("trailer %q after the trailer signature", truncate(name, 60))
		}
		if !slices.Contains(d.declared, name) {
			return badTrailer("trailer %q not declared in x-amz-trailer", truncate(name, 60))
		}
		if d.trailer == nil {
			d.trailer = make(http.Header)
		}
		if d.trailer.Get(name) != "" {
			return badTrailer("duplicate trailer %q", name)
		}
		d.trailer.Set(name, value)
		lines = append(lines, name+":"+value)
	}
	for _, name := range d.declared {
		if d.trailer.Get(name) == "" {
			return badTrailer("declared trailer %q missing", truncate(name, 60))
		}
	}
	if d.trailers == trailerSigned && len(d.trailer) > 0 && !sawSig {
		return badTrailer("missing %s", trailerSigName)
	}
	return nil
}

// expectingTrailer reports whether the trailer section cannot end yet.
func (d *chunkDecoder) expectingTrailer(sawSig bool) bool {
	if d.trailers == trailerNone {
		return false
	}
	for _, name := range d.declared {
		if d.trailer.Get(name) == "" {
			return true
		}
	}
	return d.trailers == trailerSigned && len(d.trailer) > 0 && !sawSig
}
