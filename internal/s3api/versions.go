package s3api

import (
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// Object versioning. A backend that keeps versions (storage.Versions,
// the filesystem backend) serves S3's whole version API. On one that
// does not (the remote backend, for now) every bucket is what S3 calls
// never-versioned, where each object is its key's only version, the
// "null" version: S3 defines what the version API answers there, and the
// standard tools' clean-up (ListObjectVersions, then DeleteObjects by
// version) depends on it, so that much is served; anything naming a
// version other than "null" is refused, never ignored, and so is
// PutBucketVersioning.

// nullVersion is the id S3 gives the version of an unversioned object.
const nullVersion = storage.NullVersion

// versionedOps are the operations whose versionId query parameter names
// the version they act on.
var versionedOps = []operation{opGetObject, opHeadObject, opDeleteObject, opGetObjectACL, opSelectObjectContent}

// versions returns the backend's version API, nil when it keeps none.
func (s *Server) versions() storage.Versions {
	if s.data == nil {
		return nil
	}
	return s.data.Versions()
}

// requestVersion returns the version id a request names ("" none), after
// checking it as far as the front end can.
func (s *Server) requestVersion(req *request) (string, error) {
	if !slices.Contains(versionedOps, req.op) {
		return "", nil
	}
	vs, ok := req.query["versionId"]
	if !ok {
		return "", nil
	}
	return vs[0], s.checkVersion(vs[0], req.target.bucket, req.target.key, "versionId")
}

// checkVersion checks one version id naming bucket/key, given as the
// argument arg. Where versions are kept the backend judges the id; where
// they are not, only the null version exists: a malformed id is
// InvalidArgument and a well-formed one NoSuchVersion, as S3 answers.
func (s *Server) checkVersion(id, bucket, key, arg string) error {
	switch {
	case id == "":
		return &s3err.Error{Code: s3err.InvalidArgument, Message: "Version id cannot be the empty string",
			ArgumentName: arg, Bucket: bucket, Key: key}
	case id == nullVersion, s.versions() != nil:
		return nil
	case !wellFormedVersionID(id):
		// As the embedded backend answers an id it never makes, and S3
		// a malformed one.
		return &s3err.Error{Code: s3err.InvalidArgument, Message: "Invalid version id specified",
			ArgumentName: arg, ArgumentValue: id, Bucket: bucket, Key: key}
	}
	return &s3err.Error{Code: s3err.NoSuchVersion, Bucket: bucket, Key: key, VersionID: id}
}

// wellFormedVersionID reports whether id has the shape of the version ids
// Facet makes (32 lowercase hex digits: internal/storage/fs).
func wellFormedVersionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

type versioningConfiguration struct {
	XMLName   struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ VersioningConfiguration"`
	Status    string   `xml:"Status,omitempty"`
	MfaDelete string   `xml:"MfaDelete,omitempty"`
}

// versioningInput is a PutBucketVersioning body, in S3's namespace or
// none (clients differ).
type versioningInput struct {
	Status    string `xml:"Status"`
	MfaDelete string `xml:"MfaDelete"`
	// Other catches elements S3 does not define, which are refused.
	Other []struct {
		XMLName xml.Name
	} `xml:",any"`
}

func (s *Server) getBucketVersioning(w http.ResponseWriter, req *request) error {
	var out versioningConfiguration
	if v := s.versions(); v != nil {
		state, err := v.BucketVersioning(req.Context(), req.target.bucket)
		if err != nil {
			return storageErr(err, req.target.bucket, "")
		}
		out.Status = string(state)
	}
	return writeXML(w, http.StatusOK, out)
}

// parseVersioningConfiguration decodes a PutBucketVersioning body.
func parseVersioningConfiguration(body []byte) (storage.Versioning, error) {
	var c versioningInput
	if err := xmlUnmarshalStrict(body, "VersioningConfiguration", &c); err != nil {
		return "", err
	}
	if len(c.Other) > 0 {
		return "", s3err.Newf(s3err.MalformedXML, "The XML you provided was not well-formed or did not validate against our published schema: unknown element %q.", c.Other[0].XMLName.Local)
	}
	switch c.MfaDelete {
	case "", "Disabled":
	case "Enabled":
		return "", s3err.Newf(s3err.NotImplemented, "MFA Delete is not implemented: Facet has no MFA devices; leave MfaDelete out or Disabled.")
	default:
		return "", s3err.Newf(s3err.MalformedXML, "MfaDelete must be Enabled or Disabled, not %q.", c.MfaDelete)
	}
	switch v := storage.Versioning(c.Status); v {
	case storage.VersioningEnabled, storage.VersioningSuspended:
		return v, nil
	default:
		return "", s3err.Newf(s3err.MalformedXML, "Status must be Enabled or Suspended, not %q.", c.Status)
	}
}

func (s *Server) putBucketVersioning(w http.ResponseWriter, req *request) error {
	if req.Header.Get("x-amz-mfa") != "" {
		return s3err.Newf(s3err.NotImplemented, "The x-amz-mfa header (MFA Delete) is not implemented: Facet has no MFA devices.")
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	state, err := parseVersioningConfiguration(body)
	if err != nil {
		return err
	}
	v := s.versions()
	if v == nil {
		return s3err.Newf(s3err.NotImplemented, "Bucket versioning is not implemented on this server's storage backend (the remote S3 backend keeps one version per key); the embedded filesystem backend has it.")
	}
	if err := v.SetVersioning(req.Context(), req.target.bucket, state); err != nil {
		return storageErr(err, req.target.bucket, "")
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// versionEntryXML is a Version or a DeleteMarker of a listing; XMLName
// says which, so the two interleave in key and version order.
type versionEntryXML struct {
	XMLName      xml.Name
	Key          string `xml:"Key"`
	VersionID    string `xml:"VersionId"`
	IsLatest     bool   `xml:"IsLatest"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag,omitempty"`
	Size         *int64 `xml:"Size,omitempty"`
	Owner        *owner `xml:"Owner,omitempty"`
	StorageClass string `xml:"StorageClass,omitempty"`
}

type listVersionsResult struct {
	XMLName             struct{}          `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListVersionsResult"`
	Name                string            `xml:"Name"`
	Prefix              string            `xml:"Prefix"`
	KeyMarker           string            `xml:"KeyMarker"`
	VersionIDMarker     string            `xml:"VersionIdMarker"`
	NextKeyMarker       string            `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string            `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int               `xml:"MaxKeys"`
	Delimiter           string            `xml:"Delimiter,omitempty"`
	IsTruncated         bool              `xml:"IsTruncated"`
	Entries             []versionEntryXML // each names itself
	CommonPrefixes      []commonPrefixXML `xml:"CommonPrefixes"`
	EncodingType        string            `xml:"EncodingType,omitempty"`
}

// versionMarkers reads ListObjectVersions' key-marker and
// version-id-marker. Where versions are not kept every key has one
// version, the null one, so the page after (key, "null") is the page
// after key: the listing's marker.
func (s *Server) versionMarkers(q url.Values) (keyMarker, versionMarker string, err error) {
	keyMarker, versionMarker = q.Get("key-marker"), q.Get("version-id-marker")
	switch {
	case versionMarker == "":
	case keyMarker == "":
		err = &s3err.Error{Code: s3err.InvalidArgument, Message: "A version-id marker cannot be specified without a key marker.",
			ArgumentName: "version-id-marker", ArgumentValue: versionMarker}
	case versionMarker != nullVersion && s.versions() == nil:
		err = &s3err.Error{Code: s3err.InvalidArgument, Message: "Invalid version id specified",
			ArgumentName: "version-id-marker", ArgumentValue: versionMarker}
	}
	return keyMarker, versionMarker, err
}

// versionEntry renders one version of a listing.
func (p listParams) versionEntry(o storage.ObjectInfo, own *owner) versionEntryXML {
	e := versionEntryXML{Key: p.encode(o.Key), VersionID: o.VersionID, IsLatest: o.IsLatest,
		LastModified: isoTime(o.LastModified), Owner: own}
	if e.VersionID == "" {
		e.VersionID = nullVersion
	}
	if o.DeleteMarker {
		e.XMLName.Local = "DeleteMarker"
		return e
	}
	e.XMLName.Local = "Version"
	size := o.Meta.Size
	e.ETag, e.Size, e.StorageClass = quoteETag(o.Meta.ETag), &size, "STANDARD"
	return e
}

// listObjectVersions lists a bucket's versions and delete markers; where
// versions are not kept, its objects as their null versions, through the
// very listing ListObjects answers from.
func (s *Server) listObjectVersions(w http.ResponseWriter, req *request) error {
	p, err := parseListParams(req.query)
	if err != nil {
		return err
	}
	keyMarker, versionMarker, err := s.versionMarkers(req.query)
	if err != nil {
		return err
	}
	own := &owner{ID: req.tenant, DisplayName: req.tenant}
	out := listVersionsResult{
		Name: req.target.bucket, Prefix: p.encode(p.prefix), KeyMarker: p.encode(keyMarker),
		VersionIDMarker: versionMarker, MaxKeys: p.maxKeys, Delimiter: p.encode(p.delimiter),
		EncodingType: p.encoding,
	}
	var res storage.ListVersionsResult
	if v := s.versions(); v != nil && p.maxKeys > 0 {
		km := keyMarker
		if versionMarker == "" {
			km = skipMarker(keyMarker, p.prefix, p.delimiter)
		}
		res, err = v.ListObjectVersions(req.Context(), req.target.bucket, storage.ListVersionsOptions{
			Prefix: p.prefix, Delimiter: p.delimiter, KeyMarker: km, VersionIDMarker: versionMarker, MaxKeys: p.maxKeys,
		})
		if errors.Is(err, storage.ErrInvalidVersion) {
			return &s3err.Error{Code: s3err.InvalidArgument, Message: "Invalid version id specified",
				ArgumentName: "version-id-marker", ArgumentValue: versionMarker}
		}
		if err != nil {
			return storageErr(err, req.target.bucket, "")
		}
	} else if v == nil {
		l, err := s.list(req, p, keyMarker)
		if err != nil {
			return err
		}
		res = storage.ListVersionsResult{CommonPrefixes: l.CommonPrefixes, IsTruncated: l.IsTruncated, NextKeyMarker: l.NextMarker}
		for _, o := range l.Objects {
			o.VersionID, o.IsLatest = nullVersion, true
			res.Versions = append(res.Versions, o)
		}
		// A page that ends on a common prefix ends on no version.
		if !slices.Contains(l.CommonPrefixes, l.NextMarker) {
			res.NextVersionIDMarker = nullVersion
		}
	}
	for _, o := range res.Versions {
		out.Entries = append(out.Entries, p.versionEntry(o, own))
	}
	for _, c := range res.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, commonPrefixXML{Prefix: p.encode(c)})
	}
	if out.IsTruncated = res.IsTruncated; res.IsTruncated {
		out.NextKeyMarker, out.NextVersionIDMarker = p.encode(res.NextKeyMarker), res.NextVersionIDMarker
	}
	return writeXML(w, http.StatusOK, out)
}

// writeVersionHeader names the version an answer concerns, where the
// bucket is or was versioned.
func writeVersionHeader(h http.Header, id string) {
	if id != "" {
		h.Set("x-amz-version-id", id)
	}
}
