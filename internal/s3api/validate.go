package s3api

import (
	"net"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

const (
	maxKeyLength    = 1024
	maxUserMetaSize = 2 << 10
	minPartSize     = 5 << 20
	maxPartSize     = 5 << 30
	maxPartNumber   = 10000
	maxXMLBody      = 2 << 20
)

// validBucketName applies S3's naming rules for new buckets.
func validBucketName(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	first, last := b[0], b[len(b)-1]
	if first == '.' || first == '-' || last == '.' || last == '-' {
		return false
	}
	if strings.Contains(b, "..") || strings.Contains(b, ".-") || strings.Contains(b, "-.") {
		return false
	}
	if net.ParseIP(b) != nil {
		return false
	}
	if strings.HasPrefix(b, "xn--") || strings.HasPrefix(b, "sthree-") ||
		strings.HasSuffix(b, "-s3alias") || strings.HasSuffix(b, "--ol-s3") {
		return false
	}
	return true
}

// validateKey applies S3's key rules: 1 to 1024 bytes of UTF-8.
func validateKey(k string) error {
	if len(k) > maxKeyLength {
		return s3err.New(s3err.KeyTooLongError)
	}
	if k == "" || !utf8.ValidString(k) {
		return s3err.Newf(s3err.InvalidArgument, "Object key must be 1 to 1024 bytes of UTF-8")
	}
	return nil
}

// metaFromHeaders reads the client's object metadata from request headers.
func metaFromHeaders(h http.Header) (storage.ObjectMeta, error) {
	m := storage.ObjectMeta{
		ContentType:        h.Get("Content-Type"),
		ContentEncoding:    h.Get("Content-Encoding"),
		ContentDisposition: h.Get("Content-Disposition"),
		ContentLanguage:    h.Get("Content-Language"),
		CacheControl:       h.Get("Cache-Control"),
		Expires:            h.Get("Expires"),
	}
	// aws-chunked is a transfer detail of SigV4 streaming, not the object's
	// encoding.
	if m.ContentEncoding != "" {
		var kept []string
		for _, e := range strings.Split(m.ContentEncoding, ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.EqualFold(e, "aws-chunked") {
				kept = append(kept, e)
			}
		}
		m.ContentEncoding = strings.Join(kept, ",")
	}
	size := 0
	for name, vals := range h {
		lname := strings.ToLower(name)
		if !strings.HasPrefix(lname, "x-amz-meta-") {
			continue
		}
		k := strings.TrimPrefix(lname, "x-amz-meta-")
		v := strings.Join(vals, ",")
		size += len(k) + len(v)
		if m.UserMeta == nil {
			m.UserMeta = map[string]string{}
		}
		m.UserMeta[k] = v
	}
	if size > maxUserMetaSize {
		return m, s3err.Newf(s3err.MetadataTooLarge, "Your metadata headers exceed the maximum allowed metadata size of 2048 bytes (got %d).", size)
	}
	return m, nil
}

// writeMetaHeaders writes an object's metadata as response headers.
func writeMetaHeaders(h http.Header, info storage.ObjectInfo) {
	m := info.Meta
	ct := m.ContentType
	if ct == "" {
		ct = "binary/octet-stream"
	}
	h.Set("Content-Type", ct)
	set := func(k, v string) {
		if v != "" {
			h.Set(k, v)
		}
	}
	set("Content-Encoding", m.ContentEncoding)
	set("Content-Disposition", m.ContentDisposition)
	set("Content-Language", m.ContentLanguage)
	set("Cache-Control", m.CacheControl)
	set("Expires", m.Expires)
	for k, v := range m.UserMeta {
		// Lower case, as S3 sends them: boto3 hands the names to users
		// exactly as received.
		h["x-amz-meta-"+k] = []string{v}
	}
	h.Set("ETag", quoteETag(m.ETag))
	h.Set("Last-Modified", info.LastModified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	writeVersionHeader(h, info.VersionID)
	if m.PartsCount > 0 {
		h.Set("x-amz-mp-parts-count", itoa(m.PartsCount))
	}
}

func quoteETag(e string) string { return `"` + e + `"` }

func trimETag(e string) string {
	e = strings.TrimSpace(e)
	e = strings.TrimPrefix(e, "W/")
	return strings.Trim(e, `"`)
}
