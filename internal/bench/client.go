package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// errNotFound is a 404: for a GET racing a DELETE of the same key it is a
// miss, not a failure of the server.
var errNotFound = errors.New("not found")

// s3Client is a lean S3 client: SigV4 over net/http with UNSIGNED-PAYLOAD
// (what SDKs send for streamed bodies), no retries, no checksums computed
// on the client. Every request the server sees is one the benchmark
// timed, and the client spends its CPU on signing and copying only.
type s3Client struct {
	endpoint string
	region   string
	creds    aws.Credentials
	http     *http.Client
	signer   *v4.Signer
}

func newS3Client(endpoint, region, access, secret string, conns int) *s3Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     128 << 10,
		ReadBufferSize:      128 << 10,
	}
	return &s3Client{
		endpoint: strings.TrimRight(endpoint, "/"),
		region:   region,
		creds:    aws.Credentials{AccessKeyID: access, SecretAccessKey: secret},
		http:     &http.Client{Transport: tr},
		// S3 signs the path as sent, not escaped twice.
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
	}
}

func (c *s3Client) close() { c.http.CloseIdleConnections() }

// objectPath escapes each segment of key, keeping the slashes.
func objectPath(bucket, key string) string {
	if key == "" {
		return "/" + bucket
	}
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/" + bucket + "/" + strings.Join(segs, "/")
}

// do sends one signed request. The response body is drained into buf and
// its length returned; a non-2xx status is an error naming the S3 code.
func (c *s3Client) do(ctx context.Context, method, path, query string, body io.Reader, size int64, buf []byte) (int64, error) {
	resp, err := c.send(ctx, method, path, query, body, size)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var n int64
	for {
		m, err := resp.Body.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// send signs and sends one request; a non-2xx status is an error naming
// the S3 code (errNotFound for a 404), its body closed. The caller closes
// a successful response's body.
func (c *s3Client) send(ctx context.Context, method, path, query string, body io.Reader, size int64) (*http.Response, error) {
	u := c.endpoint + path
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
		// Never nil-body: a zero-length PUT still sends Content-Length: 0.
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	req.Header.Set("x-amz-content-sha256", "UNSIGNED-PAYLOAD")
	if err := c.signer.SignHTTP(ctx, c.creds, req, "UNSIGNED-PAYLOAD", "s3", c.region, time.Now()); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, errNotFound
		}
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, s3Code(msg))
	}
	return resp, nil
}

// s3Code extracts <Code> from an S3 error body.
func s3Code(body []byte) string {
	s := string(body)
	if i := strings.Index(s, "<Code>"); i >= 0 {
		s = s[i+6:]
		if j := strings.Index(s, "</Code>"); j >= 0 {
			return s[:j]
		}
	}
	return strings.TrimSpace(s)
}

func (c *s3Client) put(ctx context.Context, bucket, key string, body io.Reader, size int64, buf []byte) error {
	_, err := c.do(ctx, http.MethodPut, objectPath(bucket, key), "", body, size, buf)
	return err
}

func (c *s3Client) get(ctx context.Context, bucket, key string, buf []byte) (int64, error) {
	return c.do(ctx, http.MethodGet, objectPath(bucket, key), "", nil, 0, buf)
}

func (c *s3Client) head(ctx context.Context, bucket, key string, buf []byte) error {
	_, err := c.do(ctx, http.MethodHead, objectPath(bucket, key), "", nil, 0, buf)
	return err
}

func (c *s3Client) delete(ctx context.Context, bucket, key string, buf []byte) error {
	_, err := c.do(ctx, http.MethodDelete, objectPath(bucket, key), "", nil, 0, buf)
	return err
}

// list reads one page of ListObjectsV2; the bytes are the XML's.
func (c *s3Client) list(ctx context.Context, bucket, prefix string, maxKeys int, buf []byte) (int64, error) {
	q := url.Values{"list-type": {"2"}, "max-keys": {strconv.Itoa(maxKeys)}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return c.do(ctx, http.MethodGet, "/"+bucket, q.Encode(), nil, 0, buf)
}

// createBucket creates bucket; one the tenant already owns is fine.
func (c *s3Client) createBucket(ctx context.Context, bucket string) error {
	_, err := c.do(ctx, http.MethodPut, "/"+bucket, "", nil, 0, make([]byte, 4096))
	if err != nil && strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
		return nil
	}
	return err
}
