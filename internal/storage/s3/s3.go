// Package s3 owns the remote storage backend: a storage.Backend over any
// S3-compatible object store, for gateways that keep no state of their own.
// Every Facet bucket lives under a prefix of one backend bucket, Facet's
// object metadata travels with each object (or in a sidecar when too large),
// bodies are sealed before they become visible, multipart parts are re-cut at
// Complete, and orphaned sidecars are swept. The layout, the reasons and the
// known limits are in docs/backends.md.
package s3

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/tlsconf"
)

const (
	metaKey    = "facet"     // x-amz-meta-facet: inline metadata
	metaRefKey = "facet-ref" // x-amz-meta-facet-ref: sidecar id
	// inlineLimit leaves room under S3's 2 KB user-metadata budget for the
	// header names.
	inlineLimit = 1800
)

// smallBody is the size of the first buffer a PUT reads into.
const smallBody = 64 << 10

// Options tune a Backend; zero values mean the defaults.
type Options struct {
	// PartSize is the backend part size for streamed PutObject (default
	// 8 MiB, at least 5 MiB as S3 requires).
	PartSize int
	// Timeout bounds each backend call that does not stream a body
	// (default 30 s); it also bounds each streamed part's upload and the
	// wait for a GET's response headers. A GET body is bounded by the
	// caller's context.
	Timeout time.Duration
	// SpoolDir holds multipart parts larger than PartSize until Seal has
	// accepted them (default os.TempDir()).
	SpoolDir string
	// HTTPClient overrides the HTTP client (tests).
	HTTPClient *http.Client
	// NoSweep turns the periodic sweep of orphaned metadata sidecars off.
	NoSweep bool
}

// Backend is a storage.Backend over an S3-compatible object store.
type Backend struct {
	cli      *s3.Client
	raw      *rawClient // the small calls (raw.go)
	endpoint string     // scheme://host:port, no credentials
	bucket   string
	root     string // "" or "prefix/"
	partSize int
	timeout  time.Duration
	spoolDir string
	pool     sync.Pool // part-sized buffers
	small    sync.Pool // smallBody buffers: a small PUT's whole body
	copyBufs sync.Pool // copyBuf buffers: GET bodies copied out
	// known maps a Facet bucket seen to exist to when it was (time.Time).
	known     sync.Map
	stop      chan struct{} // closed by Close: ends the sidecar sweep
	closeOnce sync.Once
}

var _ storage.Backend = (*Backend)(nil)

// Open parses s3://ACCESS:SECRET@host:port/bucket[/prefix]?region=R&tls=false[&sign_payload=true]
// and returns a Backend. tls=true (the default) speaks HTTPS, verified
// against the system's roots or against the PEM CA file ca=FILE. Credentials missing from the URL come from
// FACET_BACKEND_ACCESS_KEY / FACET_BACKEND_SECRET_KEY. Errors never contain
// the secret.
func Open(ctx context.Context, rawURL string, opts Options) (*Backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse echoes the input, secret included: do not wrap it.
		return nil, errors.New("s3 backend: malformed URL")
	}
	if u.Scheme != "s3" {
		return nil, fmt.Errorf("s3 backend: scheme %q, want s3", u.Scheme)
	}
	access, secret := os.Getenv("FACET_BACKEND_ACCESS_KEY"), os.Getenv("FACET_BACKEND_SECRET_KEY")
	if u.User != nil {
		if n := u.User.Username(); n != "" {
			access = n
		}
		if p, ok := u.User.Password(); ok && p != "" {
			secret = p
		}
	}
	if access == "" || secret == "" {
		return nil, errors.New("s3 backend: no credentials (URL user info or FACET_BACKEND_ACCESS_KEY/FACET_BACKEND_SECRET_KEY)")
	}
	path := strings.Trim(u.Path, "/")
	bucket, prefix, _ := strings.Cut(path, "/")
	if bucket == "" {
		return nil, errors.New("s3 backend: URL names no bucket (s3://host/bucket[/prefix])")
	}
	q := u.Query()
	region := q.Get("region")
	if region == "" {
		region = "us-east-1"
	}
	scheme := "https"
	switch q.Get("tls") {
	case "", "true":
	case "false":
		scheme = "http"
	default:
		return nil, fmt.Errorf("s3 backend: tls=%q: want true or false", q.Get("tls"))
	}
	caFile := q.Get("ca")
	if caFile != "" && scheme == "http" {
		return nil, errors.New("s3 backend: ca= verifies TLS; it cannot go with tls=false")
	}
	var tlsCfg *tls.Config
	if scheme == "https" {
		// The backend is verified against the system's roots, or ca='s
		// certificates; TLS 1.2 at least.
		if tlsCfg, err = tlsconf.ClientConfig(caFile); err != nil {
			return nil, fmt.Errorf("s3 backend: %w", err)
		}
	}
	endpoint := scheme + "://" + u.Host

	b := &Backend{endpoint: endpoint, bucket: bucket, partSize: opts.PartSize, timeout: opts.Timeout, spoolDir: opts.SpoolDir,
		stop: make(chan struct{})}
	if prefix != "" {
		b.root = prefix + "/"
	}
	if b.partSize < 5<<20 {
		b.partSize = 8 << 20
	}
	if b.timeout <= 0 {
		b.timeout = 30 * time.Second
	}
	b.pool.New = func() any { buf := make([]byte, b.partSize); return &buf }
	b.small.New = func() any { buf := make([]byte, smallBody); return &buf }
	b.copyBufs.New = func() any { buf := make([]byte, copyBuf); return &buf }
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			TLSClientConfig:       tlsCfg,
			ResponseHeaderTimeout: b.timeout,
			// Stored bytes pass through as they are: no transparent
			// gzip that would change what a GET streams.
			DisableCompression: true,
			// Bodies move in large reads and writes (copyBuf), so the
			// connection's own buffers need not be large; 32 KiB
			// halves the header writes and reads of small requests
			// that the 4 KiB default splits.
			WriteBufferSize: 32 << 10,
			ReadBufferSize:  32 << 10,
		}}
	}
	// The SDK hashes every body (SHA-256, read twice) for the signature
	// when the endpoint is plain HTTP, which caps a gateway's writes at the
	// speed of one hash; bodies go UNSIGNED-PAYLOAD as they do over TLS
	// (Facet keeps its own digests of what it stores). sign_payload=true
	// keeps the hash.
	var apiOpts []func(*middleware.Stack) error
	if q.Get("sign_payload") != "true" {
		apiOpts = append(apiOpts, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	}
	b.cli = s3.New(s3.Options{
		APIOptions:   apiOpts,
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		HTTPClient:   hc,
		// Facet computes its own checksums; the default "when supported"
		// would make the SDK buffer or trail every body.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// No "Expect: 100-continue" on part uploads: a backend that
		// refuses a part does so after its headers anyway, and the
		// interim response is one more write and read per part.
		ContinueHeaderThresholdBytes: -1,
	})
	b.raw = newRawClient(hc, &url.URL{Scheme: scheme, Host: u.Host}, bucket, access, secret, region, q.Get("sign_payload") == "true")
	cctx, cancel := b.call(ctx)
	defer cancel()
	if _, err := b.cli.HeadBucket(cctx, &s3.HeadBucketInput{Bucket: &b.bucket}); err != nil {
		return nil, fmt.Errorf("s3 backend: bucket %q on %s: %w", bucket, u.Host, mapErr(err))
	}
	if !opts.NoSweep {
		go b.sweepLoop()
	}
	return b, nil
}

// Close stops the sidecar sweep; the SDK client holds only idle
// connections.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() { close(b.stop) })
	return nil
}

// call bounds one backend call that moves no client stream.
func (b *Backend) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.timeout)
}

func (b *Backend) objKey(bucket, key string) string { return b.root + bucket + "/" + key }

// maxKey is S3's limit on a key, here on ROOT/<bucket>/<key>: a Facet key
// near S3's own limit does not fit under the prefix.
const maxKey = 1024

// checkKey refuses what the backend cannot hold before any call.
func checkKey(full string) error {
	if len(full) > maxKey {
		return fmt.Errorf("%w: %d bytes with the prefix and bucket, S3 allows %d", storage.ErrKeyTooLong, len(full), maxKey)
	}
	return nil
}
func (b *Backend) markerKey(bucket string) string { return b.root + ".facet/buckets/" + bucket }
func (b *Backend) metaSidecar(id string) string   { return b.root + ".facet/meta/" + id }
func (b *Backend) uploadDir(uploadID string) string {
	return b.root + ".facet/uploads/" + hex.EncodeToString([]byte(uploadID)) + "/"
}

func newID() string {
	var r [16]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// mapErr turns SDK errors into storage sentinels, keeping the original.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%w: %w", storage.ErrObjectNotFound, err)
		case "NoSuchBucket":
			return fmt.Errorf("%w: %w", storage.ErrBucketNotFound, err)
		case "NoSuchUpload":
			return fmt.Errorf("%w: %w", storage.ErrUploadNotFound, err)
		case "InvalidPart", "EntityTooSmall":
			return fmt.Errorf("%w: %w", storage.ErrInvalidPart, err)
		case "InvalidPartOrder":
			return fmt.Errorf("%w: %w", storage.ErrInvalidPartOrder, err)
		case "InvalidRange":
			return fmt.Errorf("%w: %w", storage.ErrInvalidRange, err)
		case "KeyTooLongError":
			return fmt.Errorf("%w: %w", storage.ErrKeyTooLong, err)
		case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "Throttling":
			return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
		}
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	return err
}

func isNotFound(err error) bool {
	return errors.Is(err, storage.ErrObjectNotFound)
}

// encodeMeta returns the user metadata carrying m, writing a sidecar first
// when m is too large to inline.
func (b *Backend) encodeMeta(ctx context.Context, full string, m storage.ObjectMeta) (map[string]string, error) {
	js, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	enc := base64.RawURLEncoding.EncodeToString(js)
	if len(enc) <= inlineLimit {
		return map[string]string{metaKey: enc}, nil
	}
	id := newID()
	if err := b.putSmall(ctx, b.metaSidecar(id), js, sidecarTag(full)); err != nil {
		return nil, err
	}
	return map[string]string{metaRefKey: id}, nil
}

// decodeMeta reads ObjectMeta back from user metadata (and its sidecar).
func (b *Backend) decodeMeta(ctx context.Context, um map[string]string) (storage.ObjectMeta, error) {
	var m storage.ObjectMeta
	if enc, ok := um[metaKey]; ok {
		js, err := base64.RawURLEncoding.DecodeString(enc)
		if err != nil {
			return m, fmt.Errorf("s3 backend: metadata header: %w", err)
		}
		return m, json.Unmarshal(js, &m)
	}
	if id, ok := um[metaRefKey]; ok {
		js, err := b.getSmall(ctx, b.metaSidecar(id))
		if err != nil {
			return m, fmt.Errorf("s3 backend: metadata sidecar: %w", err)
		}
		return m, json.Unmarshal(js, &m)
	}
	return m, nil // an object written by someone else: no Facet metadata
}

// dropMetaRef deletes the sidecar an older version of an object pointed at.
// Best effort: a leftover sidecar costs bytes, never correctness.
func (b *Backend) dropMetaRef(ctx context.Context, um map[string]string) {
	if id, ok := um[metaRefKey]; ok {
		_ = b.deleteKey(ctx, b.metaSidecar(id))
	}
}

func jsonMeta(m storage.ObjectMeta) ([]byte, error) { return json.Marshal(m) }
