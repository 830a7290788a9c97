package s3api

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/facet-sds/facet/internal/s3err"
)

// Facet does not version objects yet: every bucket is one S3 calls
// never-versioned, where each object is its key's only version, the
// "null" version. S3 defines what the version API answers there, and the
// standard tools' clean-up (ListObjectVersions, then DeleteObjects by
// version) depends on it, so that much is served; anything naming a
// version other than "null" is refused, never ignored.

// nullVersion is the id S3 gives the version of an unversioned object.
const nullVersion = "null"

// versionedOps are the operations whose versionId query parameter names
// the version they act on.
var versionedOps = []operation{opGetObject, opHeadObject, opDeleteObject, opGetObjectACL}

// checkVersionID lets a request naming the null version act on the
// object, and refuses any other version: NoSuchVersion, as S3 answers
// for a version a bucket does not have.
func checkVersionID(req *request) error {
	if !slices.Contains(versionedOps, req.op) {
		return nil
	}
	vs, ok := req.query["versionId"]
	if !ok {
		return nil
	}
	return checkVersion(vs[0], req.target.bucket, req.target.key, "versionId")
}

// checkVersion checks one version id naming bucket/key, given as the
// argument arg.
func checkVersion(id, bucket, key, arg string) error {
	switch id {
	case nullVersion:
		return nil
	case "":
		return &s3err.Error{Code: s3err.InvalidArgument, Message: "Version id cannot be the empty string",
			ArgumentName: arg, Bucket: bucket, Key: key}
	}
	return &s3err.Error{Code: s3err.NoSuchVersion, Bucket: bucket, Key: key, VersionID: id}
}

type versionXML struct {
	Key          string `xml:"Key"`
	VersionID    string `xml:"VersionId"`
	IsLatest     bool   `xml:"IsLatest"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	Owner        *owner `xml:"Owner,omitempty"`
	StorageClass string `xml:"StorageClass"`
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
	Versions            []versionXML      `xml:"Version"`
	CommonPrefixes      []commonPrefixXML `xml:"CommonPrefixes"`
	EncodingType        string            `xml:"EncodingType,omitempty"`
}

// versionMarkers reads ListObjectVersions' key-marker and
// version-id-marker. Every key has one version, the null one, so the page
// after (key, "null") is the page after key: the listing's marker.
func versionMarkers(q url.Values) (keyMarker, versionMarker string, err error) {
	keyMarker, versionMarker = q.Get("key-marker"), q.Get("version-id-marker")
	switch {
	case versionMarker == "":
	case keyMarker == "":
		err = &s3err.Error{Code: s3err.InvalidArgument, Message: "A version-id marker cannot be specified without a key marker.",
			ArgumentName: "version-id-marker", ArgumentValue: versionMarker}
	case versionMarker != nullVersion:
		err = &s3err.Error{Code: s3err.InvalidArgument, Message: "Invalid version id specified",
			ArgumentName: "version-id-marker", ArgumentValue: versionMarker}
	}
	return keyMarker, versionMarker, err
}

// listObjectVersions lists a bucket's objects as their null versions,
// through the very listing ListObjects answers from, so prefixes,
// delimiters, paging and encoding behave alike.
func (s *Server) listObjectVersions(w http.ResponseWriter, req *request) error {
	p, err := parseListParams(req.query)
	if err != nil {
		return err
	}
	keyMarker, versionMarker, err := versionMarkers(req.query)
	if err != nil {
		return err
	}
	res, err := s.list(req, p, keyMarker)
	if err != nil {
		return err
	}
	objs, cps := p.contents(res, &owner{ID: req.tenant, DisplayName: req.tenant})
	versions := make([]versionXML, 0, len(objs))
	for _, o := range objs {
		versions = append(versions, versionXML{
			Key: o.Key, VersionID: nullVersion, IsLatest: true, LastModified: o.LastModified,
			ETag: o.ETag, Size: o.Size, Owner: o.Owner, StorageClass: o.StorageClass,
		})
	}
	out := listVersionsResult{
		Name: req.target.bucket, Prefix: p.encode(p.prefix), KeyMarker: p.encode(keyMarker),
		VersionIDMarker: versionMarker, MaxKeys: p.maxKeys, Delimiter: p.encode(p.delimiter),
		IsTruncated: res.IsTruncated, Versions: versions, CommonPrefixes: cps, EncodingType: p.encoding,
	}
	if res.IsTruncated {
		out.NextKeyMarker = p.encode(res.NextMarker)
		// A page that ends on a common prefix ends on no version.
		if !slices.Contains(res.CommonPrefixes, res.NextMarker) {
			out.NextVersionIDMarker = nullVersion
		}
	}
	return writeXML(w, http.StatusOK, out)
}
