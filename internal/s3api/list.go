package s3api

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

const maxListKeys = 1000

type objectXML struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
	Owner        *owner `xml:"Owner,omitempty"`
}

type commonPrefixXML struct {
	Prefix string `xml:"Prefix"`
}

type listBucketResultV2 struct {
	XMLName               struct{}          `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string            `xml:"Name"`
	Prefix                string            `xml:"Prefix"`
	Delimiter             string            `xml:"Delimiter,omitempty"`
	MaxKeys               int               `xml:"MaxKeys"`
	KeyCount              int               `xml:"KeyCount"`
	IsTruncated           bool              `xml:"IsTruncated"`
	EncodingType          string            `xml:"EncodingType,omitempty"`
	ContinuationToken     string            `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string            `xml:"NextContinuationToken,omitempty"`
	StartAfter            string            `xml:"StartAfter,omitempty"`
	Contents              []objectXML       `xml:"Contents"`
	CommonPrefixes        []commonPrefixXML `xml:"CommonPrefixes"`
}

type listBucketResultV1 struct {
	XMLName        struct{}          `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name           string            `xml:"Name"`
	Prefix         string            `xml:"Prefix"`
	Marker         string            `xml:"Marker"`
	NextMarker     string            `xml:"NextMarker,omitempty"`
	Delimiter      string            `xml:"Delimiter,omitempty"`
	MaxKeys        int               `xml:"MaxKeys"`
	IsTruncated    bool              `xml:"IsTruncated"`
	EncodingType   string            `xml:"EncodingType,omitempty"`
	Contents       []objectXML       `xml:"Contents"`
	CommonPrefixes []commonPrefixXML `xml:"CommonPrefixes"`
}

// listParams are the parameters shared by both listing versions.
type listParams struct {
	prefix, delimiter, encoding string
	maxKeys                     int
}

func parseListParams(q url.Values) (listParams, error) {
	p := listParams{prefix: q.Get("prefix"), delimiter: q.Get("delimiter"), maxKeys: maxListKeys}
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, s3err.Newf(s3err.InvalidArgument, "Provided max-keys not an integer or within integer range")
		}
		p.maxKeys = min(n, maxListKeys)
	}
	switch e := q.Get("encoding-type"); e {
	case "", "url":
		p.encoding = e
	default:
		return p, s3err.Newf(s3err.InvalidArgument, "Invalid Encoding Method specified in Request")
	}
	return p, nil
}

// encode applies encoding-type=url to a key or prefix.
func (p listParams) encode(s string) string {
	if p.encoding != "url" {
		return s
	}
	// S3 encodes like a form value but keeps "/" readable.
	return strings.ReplaceAll(url.QueryEscape(s), "%2F", "/")
}

// skipMarker turns a marker that names a common prefix into one that sorts
// after every key under that prefix, so the next page does not repeat it.
func skipMarker(marker, prefix, delimiter string) string {
	if delimiter == "" || !strings.HasPrefix(marker, prefix) {
		return marker
	}
	rest := marker[len(prefix):]
	if i := strings.Index(rest, delimiter); i >= 0 {
		// 0xFF never occurs in UTF-8, so this sorts after every key that
		// shares the common prefix and before every key that does not.
		return prefix + rest[:i+len(delimiter)] + "\xff"
	}
	return marker
}

func (s *Server) list(req *request, p listParams, marker string) (storage.ListResult, error) {
	if p.maxKeys == 0 {
		return storage.ListResult{}, nil
	}
	res, err := s.backend.ListObjects(req.Context(), req.target.bucket, storage.ListOptions{
		Prefix: p.prefix, Delimiter: p.delimiter, Marker: skipMarker(marker, p.prefix, p.delimiter), MaxKeys: p.maxKeys,
	})
	return res, storageErr(err, req.target.bucket, "")
}

func (p listParams) contents(res storage.ListResult, withOwner *owner) ([]objectXML, []commonPrefixXML) {
	objs := make([]objectXML, 0, len(res.Objects))
	for _, o := range res.Objects {
		objs = append(objs, objectXML{
			Key: p.encode(o.Key), LastModified: isoTime(o.LastModified), ETag: quoteETag(o.Meta.ETag),
			Size: o.Meta.Size, StorageClass: "STANDARD", Owner: withOwner,
		})
	}
	var cps []commonPrefixXML
	for _, c := range res.CommonPrefixes {
		cps = append(cps, commonPrefixXML{Prefix: p.encode(c)})
	}
	return objs, cps
}

func (s *Server) listObjectsV2(w http.ResponseWriter, req *request) error {
	p, err := parseListParams(req.query)
	if err != nil {
		return err
	}
	token, startAfter := req.query.Get("continuation-token"), req.query.Get("start-after")
	marker := startAfter
	if _, ok := req.query["continuation-token"]; ok {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || token == "" {
			return s3err.Newf(s3err.InvalidArgument, "The continuation token provided is incorrect")
		}
		marker = string(raw)
	}
	res, err := s.list(req, p, marker)
	if err != nil {
		return err
	}
	var o *owner
	if req.query.Get("fetch-owner") == "true" {
		o = &owner{ID: req.tenant, DisplayName: req.tenant}
	}
	objs, cps := p.contents(res, o)
	out := listBucketResultV2{
		Name: req.target.bucket, Prefix: p.encode(p.prefix), Delimiter: p.encode(p.delimiter),
		MaxKeys: p.maxKeys, KeyCount: len(objs) + len(cps), IsTruncated: res.IsTruncated,
		EncodingType: p.encoding, ContinuationToken: token, StartAfter: p.encode(startAfter),
		Contents: objs, CommonPrefixes: cps,
	}
	if res.IsTruncated {
		out.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(res.NextMarker))
	}
	return writeXML(w, http.StatusOK, out)
}

func (s *Server) listObjectsV1(w http.ResponseWriter, req *request) error {
	p, err := parseListParams(req.query)
	if err != nil {
		return err
	}
	marker := req.query.Get("marker")
	res, err := s.list(req, p, marker)
	if err != nil {
		return err
	}
	objs, cps := p.contents(res, &owner{ID: req.tenant, DisplayName: req.tenant})
	out := listBucketResultV1{
		Name: req.target.bucket, Prefix: p.encode(p.prefix), Marker: p.encode(marker),
		Delimiter: p.encode(p.delimiter), MaxKeys: p.maxKeys, IsTruncated: res.IsTruncated,
		EncodingType: p.encoding, Contents: objs, CommonPrefixes: cps,
	}
	if res.IsTruncated {
		out.NextMarker = p.encode(res.NextMarker)
	}
	return writeXML(w, http.StatusOK, out)
}

type deleteRequest struct {
	Quiet   bool              `xml:"Quiet"`
	Objects []deleteObjectXML `xml:"Object"`
}

type deleteObjectXML struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId"`
}

// deletedEntry reports one deletion as S3 does: the version it removed,
// whether that was a delete marker, or the delete marker it wrote.
func deletedEntry(key, requested string, dr storage.DeleteResult) deletedXML {
	d := deletedXML{Key: key, VersionID: requested}
	if dr.DeleteMarker {
		d.DeleteMarker, d.DeleteMarkerVersionID = true, dr.VersionID
	}
	return d
}

type deletedXML struct {
	Key                   string `xml:"Key"`
	VersionID             string `xml:"VersionId,omitempty"`
	DeleteMarker          bool   `xml:"DeleteMarker,omitempty"`
	DeleteMarkerVersionID string `xml:"DeleteMarkerVersionId,omitempty"`
}

type deleteErrorXML struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId,omitempty"`
	Code      string `xml:"Code"`
	Message   string `xml:"Message"`
}

type deleteResult struct {
	XMLName struct{}         `xml:"http://s3.amazonaws.com/doc/2006-03-01/ DeleteResult"`
	Deleted []deletedXML     `xml:"Deleted"`
	Errors  []deleteErrorXML `xml:"Error"`
}

// parseDeleteRequest decodes and validates a DeleteObjects body.
func parseDeleteRequest(body []byte) (deleteRequest, error) {
	var d deleteRequest
	if err := xmlUnmarshalStrict(body, "Delete", &d); err != nil {
		return d, err
	}
	if len(d.Objects) == 0 || len(d.Objects) > maxListKeys {
		return d, s3err.Newf(s3err.MalformedXML, "A DeleteObjects request must name between 1 and 1000 objects.")
	}
	return d, nil
}

func (s *Server) deleteObjects(w http.ResponseWriter, req *request) error {
	body, err := readBody(req)
	if err != nil {
		return err
	}
	d, err := parseDeleteRequest(body)
	if err != nil {
		return err
	}
	var res deleteResult
	for _, o := range d.Objects {
		failed := func(err error) {
			e := s3err.As(err)
			res.Errors = append(res.Errors, deleteErrorXML{Key: o.Key, VersionID: o.VersionID, Code: e.Code.Name, Message: e.Code.Message})
		}
		if err := validateKey(o.Key); err != nil {
			failed(err)
			continue
		}
		// Where versions are not kept, an entry naming the null version
		// deletes the object (what "delete every version" does in an
		// unversioned bucket); one naming another version deletes
		// nothing.
		if o.VersionID != "" {
			if err := s.checkVersion(o.VersionID, req.target.bucket, o.Key, "VersionId"); err != nil {
				failed(err)
				continue
			}
		}
		t := req.dataTarget()
		t.Key, t.VersionID = o.Key, o.VersionID
		dr, err := s.data.Delete(req.Context(), t)
		if err != nil {
			failed(err)
			continue
		}
		if !d.Quiet {
			res.Deleted = append(res.Deleted, deletedEntry(o.Key, o.VersionID, dr))
		}
	}
	return writeXML(w, http.StatusOK, res)
}
