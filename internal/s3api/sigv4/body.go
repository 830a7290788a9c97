package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/s3err"
)

// Body is a request payload being decoded and verified as it is read. Its
// Read returns the payload bytes (aws-chunked framing removed) and ends with
// io.EOF only once everything the signature covers has been checked;
// otherwise it ends with an *s3err.Error, and keeps returning it.
//
// A Body is not safe for concurrent use.
type Body struct {
	src    io.Reader
	chunks *chunkDecoder // nil unless the payload is aws-chunked

	decodedLen int64 // -1 when unknown
	n          int64

	sha  hash.Hash // non-nil when x-amz-content-sha256 is a hash
	want []byte

	err error // sticky: io.EOF after success, or an *s3err.Error
}

// DecodedLength is the payload length the client announced
// (x-amz-decoded-content-length for aws-chunked bodies, Content-Length
// otherwise), or -1 when it announced none. Read enforces it: a shorter body
// ends in IncompleteBody, a longer one in an error.
func (b *Body) DecodedLength() int64 { return b.decodedLen }

// Trailer returns the trailing headers of an aws-chunked body (keys in
// canonical form, e.g. "X-Amz-Checksum-Crc32"), after Read has returned
// io.EOF. It is nil before that, and for bodies without trailers.
func (b *Body) Trailer() http.Header {
	if b.chunks == nil || b.err != io.EOF {
		return nil
	}
	return b.chunks.trailer
}

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.src.Read(p)
	if b.decodedLen >= 0 && b.n+int64(n) > b.decodedLen {
		return 0, b.fail(s3err.Newf(s3err.InvalidRequest,
			"The request body is longer than its announced length of %d bytes", b.decodedLen))
	}
	b.n += int64(n)
	if b.sha != nil {
		b.sha.Write(p[:n])
	}
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF && n > 0:
		// Verify on the next call, so that these bytes are not delivered
		// together with a verdict on bytes the caller has not seen.
		return n, nil
	case err == io.EOF:
		return 0, b.finish()
	default:
		var se *s3err.Error
		if !errors.As(err, &se) {
			// A short or broken body is the client's fault, not ours.
			se = s3err.Wrap(s3err.IncompleteBody, err)
		}
		return 0, b.fail(se)
	}
}

func (b *Body) finish() error {
	if b.decodedLen >= 0 && b.n != b.decodedLen {
		return b.fail(&s3err.Error{Code: s3err.IncompleteBody,
			Err: fmt.Errorf("received %d of %d bytes", b.n, b.decodedLen)})
	}
	if b.sha != nil && !bytes.Equal(b.sha.Sum(nil), b.want) {
		return b.fail(s3err.New(s3err.XAmzContentSHA256Mismatch))
	}
	b.err = io.EOF
	return io.EOF
}

func (b *Body) fail(err *s3err.Error) error {
	b.err = err
	return err
}

// newBody sets up the decoding and verification that req's payload mode
// asks for. key is the derived signing key, used for chunk signatures.
func newBody(r *http.Request, req *parsedRequest, key []byte) (*Body, *s3err.Error) {
	var src io.Reader = r.Body
	if src == nil {
		src = http.NoBody
	}
	b := &Body{src: src, decodedLen: r.ContentLength}
	if b.decodedLen < 0 {
		b.decodedLen = -1
	}
	switch req.payload {
	case unsignedPayload:
		return b, nil
	case streamingSigned, streamingSignedTrailer, streamingUnsignedTrailer:
	default:
		want, err := hex.DecodeString(req.payload)
		if err != nil { // checkPayloadMode let only hashes through
			return nil, s3err.Wrap(s3err.InternalError, err)
		}
		b.sha, b.want = sha256.New(), want
		return b, nil
	}

	b.decodedLen = -1
	if v := r.Header.Get("X-Amz-Decoded-Content-Length"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, s3err.Newf(s3err.InvalidArgument, "x-amz-decoded-content-length must be a non-negative integer")
		}
		b.decodedLen = n
	}
	d := &chunkDecoder{limit: b.decodedLen}
	d.init(src)
	if req.payload != streamingUnsignedTrailer {
		d.signer = &chunkSigner{key: key, amzDate: req.amzDate, scope: req.cred.scope(), prev: req.signature}
	}
	if req.payload != streamingSigned {
		if req.payload == streamingSignedTrailer {
			d.trailers = trailerSigned
		} else {
			d.trailers = trailerUnsigned
		}
		d.declared = declaredTrailers(r.Header)
	}
	b.src, b.chunks = d, d
	return b, nil
}

// declaredTrailers lists the lower-case names in x-amz-trailer.
func declaredTrailers(h http.Header) []string {
	var names []string
	for _, v := range h.Values("X-Amz-Trailer") {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

// StripAWSChunked removes the "aws-chunked" coding from a Content-Encoding
// value: it describes the transfer of the request, not the object, and S3
// does not store it.
func StripAWSChunked(contentEncoding string) string {
	var kept []string
	for c := range strings.SplitSeq(contentEncoding, ",") {
		c = strings.TrimSpace(c)
		if c != "" && !strings.EqualFold(c, "aws-chunked") {
			kept = append(kept, c)
		}
	}
	return strings.Join(kept, ",")
}
