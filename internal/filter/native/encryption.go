package native

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/minio/sio"

	"github.com/facet-sds/facet/internal/filter"
)

// The encryption filter seals a stream with AES-256-GCM in the DARE 2.0
// format (github.com/minio/sio): packages of up to 64 KiB of plaintext,
// each with a 16-byte header and a 16-byte tag, numbered so that none can
// be dropped, reordered or swapped. Every object gets its own random key;
// the record holds that key sealed under the tenant's data key, with the
// data key's id, so key rotation only changes which id new objects name.
//
// A package's place in the stored stream follows from its number, so a
// range read opens only the packages it overlaps.
const (
	encryptionName    = "encryption"
	encryptionVersion = 1

	dareVersion    = "2.0"
	dareCipher     = "AES-256-GCM"
	darePayload    = 64 << 10
	dareOverhead   = 32 // header + tag
	darePackage    = darePayload + dareOverhead
	objectKeySize  = 32
	sealNonceSize  = 12
	maxDarePackets = 1 << 32 // sequence numbers are 32 bits
)

var _ filter.Reversible = (*encryption)(nil)

func EncryptionInfo() *filter.Info {
	in := &filter.Info{
		Name:       encryptionName,
		Version:    encryptionVersion,
		Kind:       "native",
		Methods:    []filter.Method{filter.MethodPut},
		Stages:     []filter.Stage{filter.StageGateway, filter.StageStorage},
		Reversible: true,
		Doc: "Encrypts the stream with AES-256-GCM in the DARE 2.0 format under a per-object key " +
			"sealed with the tenant's current data key; Range GETs decrypt only the 64 KiB packages they need.",
	}
	in.Config = func() filter.Provisioner { return &encryptionConfig{info: in} }
	return in
}

// encryptionConfig is the encryption filter's configuration: it takes no
// parameters; its keys come from the host, per tenant, at request time.
type encryptionConfig struct{ info *filter.Info }

var _ filter.Provisioner = (*encryptionConfig)(nil)

func (c *encryptionConfig) Provision(env filter.Env) (filter.Filter, error) {
	if env.Keys == nil {
		return nil, filter.NotHere("%s: the server has no key provider", encryptionName)
	}
	return &encryption{info: c.info, keys: env.Keys}, nil
}

type encryption struct {
	info *filter.Info
	keys filter.KeyProvider
}

func (f *encryption) Info() *filter.Info { return f.info }

func (f *encryption) dareConfig(key []byte, seq uint32) sio.Config {
	return sio.Config{
		MinVersion:     sio.Version20,
		MaxVersion:     sio.Version20,
		CipherSuites:   []byte{sio.AES_256_GCM},
		Key:            key,
		SequenceNumber: seq,
	}
}

// Encode seals plain under a fresh object key.
func (f *encryption) Encode(ctx context.Context, req *filter.Request, plain io.Reader) (io.Reader, func() (filter.Record, error), error) {
	if req == nil || req.Tenant == "" {
		return nil, nil, fmt.Errorf("%s: request names no tenant", encryptionName)
	}
	kid, dataKey, err := f.keys.CurrentKey(ctx, req.Tenant)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: current key of tenant %q: %w", encryptionName, req.Tenant, err)
	}
	objKey := make([]byte, objectKeySize)
	if _, err := rand.Read(objKey); err != nil {
		return nil, nil, fmt.Errorf("%s: object key: %w", encryptionName, err)
	}
	aead, err := dataKeyAEAD(dataKey)
	if err != nil {
		return nil, nil, err
	}
	enc, err := sio.EncryptReader(plain, f.dareConfig(objKey, 0))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", encryptionName, err)
	}
	out := &countingReader{r: enc}
	tenant := req.Tenant
	var done *filter.Record
	rec := func() (filter.Record, error) {
		if done != nil {
			return *done, nil // the object key is gone: seal it once
		}
		if !out.eof {
			return filter.Record{}, fmt.Errorf("%s: record requested before the stream reached EOF", encryptionName)
		}
		plainSize, err := sio.DecryptedSize(uint64(out.n))
		if err != nil {
			return filter.Record{}, fmt.Errorf("%s: produced %d bytes: %w", encryptionName, out.n, err)
		}
		// Sealed only now, so that the plaintext size is authenticated
		// with the key: a stream cut at a package boundary, with a record
		// edited to match, no longer opens.
		nonce := make([]byte, sealNonceSize)
		if _, err := rand.Read(nonce); err != nil {
			return filter.Record{}, fmt.Errorf("%s: nonce: %w", encryptionName, err)
		}
		sealed := aead.Seal(nil, nonce, objKey, sealAD(tenant, kid, int64(plainSize)))
		clear(objKey)
		done = &filter.Record{
			Filter:  encryptionName,
			Version: encryptionVersion,
			Params: map[string]string{
				"dare":   dareVersion,
				"cipher": dareCipher,
				"kid":    kid,
				"sealed": base64.StdEncoding.EncodeToString(sealed),
				"nonce":  base64.StdEncoding.EncodeToString(nonce),
				"plain":  strconv.FormatUint(plainSize, 10),
			},
			Size: out.n,
		}
		return *done, nil
	}
	return out, rec, nil
}

// sealAD binds a sealed object key to its tenant, its data key id and
// the plaintext size: a record copied to another tenant, relabelled with
// another id or describing a shorter stream fails to open.
func sealAD(tenant, kid string, plain int64) []byte {
	return []byte("facet/encryption/v1\x00" + tenant + "\x00" + kid + "\x00" + strconv.FormatInt(plain, 10))
}

func dataKeyAEAD(dataKey []byte) (cipher.AEAD, error) {
	if len(dataKey) != 32 {
		return nil, fmt.Errorf("%s: data key is %d bytes, want 32", encryptionName, len(dataKey))
	}
	block, err := aes.NewCipher(dataKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", encryptionName, err)
	}
	return cipher.NewGCM(block)
}

// darePlan is a parsed record.
type darePlan struct {
	kid           string
	sealed, nonce []byte
	plain, stored int64
}

func parseDareRecord(rec filter.Record) (*darePlan, error) {
	if err := checkRecord(rec, encryptionName, encryptionVersion); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: record: %s: %w", encryptionName, fmt.Sprintf(format, args...), filter.ErrIntegrity)
	}
	for k := range rec.Params {
		switch k {
		case "dare", "cipher", "kid", "sealed", "nonce", "plain":
		default:
			return nil, bad("unknown field %q", k)
		}
	}
	if v := rec.Params["dare"]; v != dareVersion {
		return nil, bad("DARE version %q, this server reads %s", v, dareVersion)
	}
	if v := rec.Params["cipher"]; v != dareCipher {
		return nil, bad("cipher %q, this server reads %s", v, dareCipher)
	}
	pl := &darePlan{kid: rec.Params["kid"], stored: rec.Size}
	if pl.kid == "" {
		return nil, bad("no key id")
	}
	var err error
	if pl.sealed, err = base64.StdEncoding.Strict().DecodeString(rec.Params["sealed"]); err != nil || len(pl.sealed) != objectKeySize+16 {
		return nil, bad("sealed key malformed")
	}
	if pl.nonce, err = base64.StdEncoding.Strict().DecodeString(rec.Params["nonce"]); err != nil || len(pl.nonce) != sealNonceSize {
		return nil, bad("nonce malformed")
	}
	if pl.plain, err = strconv.ParseInt(rec.Params["plain"], 10, 64); err != nil || pl.plain < 0 || pl.plain > maxPlain {
		return nil, bad("plain size %q invalid", rec.Params["plain"])
	}
	if want, err := sio.EncryptedSize(uint64(pl.plain)); err != nil || want != uint64(pl.stored) {
		return nil, bad("%d bytes of plaintext cannot be %d stored bytes", pl.plain, pl.stored)
	}
	if (pl.plain+darePayload-1)/darePayload > maxDarePackets {
		return nil, bad("%d bytes is more than DARE can number", pl.plain)
	}
	return pl, nil
}

// Decode opens the object key with the data key the record names.
func (f *encryption) Decode(ctx context.Context, req *filter.Request, rec filter.Record, src filter.Source) (filter.Source, error) {
	if req == nil || req.Tenant == "" {
		return nil, fmt.Errorf("%s: request names no tenant", encryptionName)
	}
	pl, err := parseDareRecord(rec)
	if err != nil {
		return nil, err
	}
	if src.Size() != pl.stored {
		return nil, fmt.Errorf("%s: stored stream holds %d bytes, record says %d: %w", encryptionName, src.Size(), pl.stored, filter.ErrIntegrity)
	}
	dataKey, err := f.keys.Key(ctx, req.Tenant, pl.kid)
	if err != nil {
		return nil, fmt.Errorf("%s: key %q of tenant %q: %w", encryptionName, pl.kid, req.Tenant, err)
	}
	aead, err := dataKeyAEAD(dataKey)
	if err != nil {
		return nil, err
	}
	objKey, err := aead.Open(nil, pl.nonce, pl.sealed, sealAD(req.Tenant, pl.kid, pl.plain))
	if err != nil {
		return nil, fmt.Errorf("%s: object key does not open under key %q (wrong key or altered record): %w", encryptionName, pl.kid, filter.ErrIntegrity)
	}
	return &dareSource{f: f, plan: pl, key: objKey, src: src}, nil
}

type dareSource struct {
	f    *encryption
	plan *darePlan
	key  []byte
	src  filter.Source
}

func (s *dareSource) Size() int64 { return s.plan.plain }

// Open decrypts the packages [off, off+n) overlaps, starting the DARE
// sequence at the first of them.
func (s *dareSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if err := filter.CheckRange(s.plan.plain, off, n); err != nil {
		return nil, fmt.Errorf("%s: %w", encryptionName, err)
	}
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	first, last := off/darePayload, (off+n-1)/darePayload
	start := first * darePackage
	end := min((last+1)*darePackage, s.plan.stored)
	rc, err := s.src.Open(ctx, start, end-start)
	if err != nil {
		return nil, err
	}
	dec, err := sio.DecryptReader(&taggedReader{r: rc}, s.f.dareConfig(s.key, uint32(first)))
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("%s: %w", encryptionName, err)
	}
	return &dareReader{rc: rc, dec: dec, skip: off - first*darePayload, left: n}, nil
}

type dareReader struct {
	rc   io.ReadCloser
	dec  io.Reader
	skip int64 // plaintext to drop before the range starts
	left int64
	err  error
}

func (r *dareReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.skip > 0 {
		if _, err := io.CopyN(io.Discard, r.dec, r.skip); err != nil {
			r.err = r.fail(err)
			return 0, r.err
		}
		r.skip = 0
	}
	if r.left == 0 {
		r.err = io.EOF
		return 0, io.EOF
	}
	// Never ask for more than the range: the reader would go on to the
	// next package, which the opened span does not hold.
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.dec.Read(p)
	r.left -= int64(n)
	if err != nil && !(err == io.EOF && r.left == 0) {
		r.err = r.fail(err)
		return n, r.err
	}
	return n, nil
}

// fail sorts a decryption error: the source's own errors pass through,
// anything else means the stored bytes are not what was sealed.
func (r *dareReader) fail(err error) error {
	var se *sourceError
	if errors.As(err, &se) {
		return se.err
	}
	if err == io.EOF {
		return fmt.Errorf("%s: stored stream ends early: %w", encryptionName, filter.ErrIntegrity)
	}
	return fmt.Errorf("%s: %w (%w)", encryptionName, filter.ErrIntegrity, err)
}

func (r *dareReader) Close() error {
	if r.err == nil {
		r.err = errors.New("read after close")
	}
	return r.rc.Close()
}

// taggedReader marks the errors of the stored stream, so that they can be
// told apart from authentication failures once sio has handed them back.
// io.EOF passes unmarked: sio needs it to find the end of the stream.
type taggedReader struct{ r io.Reader }

type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

func (t *taggedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}
