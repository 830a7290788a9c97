package s3api

import (
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/s3api/checksum"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

type initiateMultipartUploadResult struct {
	XMLName  struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ InitiateMultipartUploadResult"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

func (s *Server) createMultipartUpload(w http.ResponseWriter, req *request) error {
	meta, err := metaFromHeaders(req.Header)
	if err != nil {
		return err
	}
	if err := s.data.EditMeta(req.Context(), req.dataTarget(), &meta); err != nil {
		return err
	}
	if alg := strings.ToUpper(req.Header.Get("x-amz-checksum-algorithm")); alg != "" {
		meta.System = map[string]string{"checksum-algorithm": alg}
		meta.ChecksumType = strings.ToUpper(req.Header.Get("x-amz-checksum-type"))
	}
	up, err := s.backend.CreateUpload(req.Context(), req.target.bucket, req.target.key, meta)
	if err != nil {
		return storageErr(err, req.target.bucket, req.target.key)
	}
	if alg := meta.System["checksum-algorithm"]; alg != "" {
		w.Header().Set("x-amz-checksum-algorithm", alg)
	}
	return writeXML(w, http.StatusOK, initiateMultipartUploadResult{Bucket: up.Bucket, Key: up.Key, UploadID: up.UploadID})
}

// partNumber parses and validates ?partNumber=.
func partNumber(req *request) (int, error) {
	n, err := strconv.Atoi(req.query.Get("partNumber"))
	if err != nil || n < 1 || n > maxPartNumber {
		return 0, s3err.Newf(s3err.InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
	}
	return n, nil
}

func (s *Server) uploadPart(w http.ResponseWriter, req *request) error {
	n, err := partNumber(req)
	if err != nil {
		return err
	}
	bucket, key, id := req.target.bucket, req.target.key, req.query.Get("uploadId")
	up, err := s.backend.GetUpload(req.Context(), bucket, key, id)
	if err != nil {
		return storageErr(err, bucket, key)
	}
	pl, err := s.receivePayload(req, maxPartSize)
	if err != nil {
		return err
	}
	size, _ := declaredLength(req)
	part, err := s.data.PutPart(req.Context(), dataplane.PartRequest{
		Target: req.dataTarget(), UploadID: id, Number: n, Upload: up.Meta, Size: size, Body: pl,
	})
	if err != nil {
		return err
	}
	w.Header().Set("ETag", quoteETag(part.ETag))
	writeChecksumHeaders(w.Header(), part.Checksums)
	w.WriteHeader(http.StatusOK)
	return nil
}

type copyPartResult struct {
	XMLName      struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyPartResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

// copySourceRange parses x-amz-copy-source-range ("bytes=first-last"),
// which, unlike Range, must be exact and within the object.
func copySourceRange(h string, size int64) (*storage.Range, error) {
	if h == "" {
		return nil, nil
	}
	spec, ok := strings.CutPrefix(h, "bytes=")
	first, last, ok2 := strings.Cut(spec, "-")
	a, err1 := strconv.ParseInt(first, 10, 64)
	b, err2 := strconv.ParseInt(last, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil || a < 0 || b < a {
		return nil, s3err.Newf(s3err.InvalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
	}
	if b >= size {
		return nil, s3err.Newf(s3err.InvalidRange, "The requested range is not satisfiable")
	}
	return &storage.Range{Start: a, Length: b - a + 1}, nil
}

func (s *Server) uploadPartCopy(w http.ResponseWriter, req *request) error {
	n, err := partNumber(req)
	if err != nil {
		return err
	}
	ctx := req.Context()
	bucket, key, id := req.target.bucket, req.target.key, req.query.Get("uploadId")
	up, err := s.backend.GetUpload(ctx, bucket, key, id)
	if err != nil {
		return storageErr(err, bucket, key)
	}
	src, err := s.copySourceOf(req)
	if err != nil {
		return err
	}
	part, err := s.data.CopyPart(ctx, dataplane.CopyPartRequest{
		Target: req.dataTarget(), UploadID: id, Number: n, Upload: up.Meta, Source: src, Limit: maxPartSize,
		Range: func(size int64) (*storage.Range, error) {
			return copySourceRange(req.Header.Get("x-amz-copy-source-range"), size)
		},
	})
	if err != nil {
		return err
	}
	if src.VersionID != "" {
		w.Header().Set("x-amz-copy-source-version-id", src.VersionID)
	}
	return writeXML(w, http.StatusOK, copyPartResult{LastModified: isoTime(part.LastModified), ETag: quoteETag(part.ETag)})
}

type completeMultipartUpload struct {
	Parts []struct {
		PartNumber        int    `xml:"PartNumber"`
		ETag              string `xml:"ETag"`
		ChecksumCRC32     string `xml:"ChecksumCRC32"`
		ChecksumCRC32C    string `xml:"ChecksumCRC32C"`
		ChecksumSHA1      string `xml:"ChecksumSHA1"`
		ChecksumSHA256    string `xml:"ChecksumSHA256"`
		ChecksumCRC64NVME string `xml:"ChecksumCRC64NVME"`
	} `xml:"Part"`
}

type completeMultipartUploadResult struct {
	XMLName        struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CompleteMultipartUploadResult"`
	Location       string   `xml:"Location"`
	Bucket         string   `xml:"Bucket"`
	Key            string   `xml:"Key"`
	ETag           string   `xml:"ETag"`
	ChecksumCRC32  string   `xml:"ChecksumCRC32,omitempty"`
	ChecksumCRC32C string   `xml:"ChecksumCRC32C,omitempty"`
	ChecksumSHA1   string   `xml:"ChecksumSHA1,omitempty"`
	ChecksumSHA256 string   `xml:"ChecksumSHA256,omitempty"`
	ChecksumType   string   `xml:"ChecksumType,omitempty"`
}

// parseCompleteRequest decodes and validates a CompleteMultipartUpload body.
func parseCompleteRequest(body []byte) ([]storage.CompletePart, error) {
	var c completeMultipartUpload
	if err := xmlUnmarshalStrict(body, "CompleteMultipartUpload", &c); err != nil {
		return nil, err
	}
	if len(c.Parts) == 0 || len(c.Parts) > maxPartNumber {
		return nil, s3err.Newf(s3err.MalformedXML, "A CompleteMultipartUpload request must name between 1 and 10000 parts.")
	}
	parts := make([]storage.CompletePart, 0, len(c.Parts))
	prev := 0
	for _, p := range c.Parts {
		if p.PartNumber < 1 || p.PartNumber > maxPartNumber {
			return nil, s3err.Newf(s3err.InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
		}
		if p.PartNumber <= prev {
			return nil, s3err.New(s3err.InvalidPartOrder)
		}
		prev = p.PartNumber
		parts = append(parts, storage.CompletePart{Number: p.PartNumber, ETag: trimETag(p.ETag)})
	}
	return parts, nil
}

func (s *Server) completeMultipartUpload(w http.ResponseWriter, req *request) error {
	ctx := req.Context()
	bucket, key, id := req.target.bucket, req.target.key, req.query.Get("uploadId")
	up, err := s.backend.GetUpload(ctx, bucket, key, id)
	if err != nil {
		return storageErr(err, bucket, key)
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	want, err := parseCompleteRequest(body)
	if err != nil {
		return err
	}
	have, err := s.allParts(req, id)
	if err != nil {
		return err
	}
	meta := up.Meta
	meta.Size, meta.PartsCount, meta.PartSizes = 0, len(want), nil
	etags := make([]string, 0, len(want))
	chosen := make([]storage.Part, 0, len(want))
	for i, cp := range want {
		p, ok := have[cp.Number]
		if !ok || p.ETag != cp.ETag {
			return &s3err.Error{Code: s3err.InvalidPart, Bucket: bucket, Key: key,
				Message: fmt.Sprintf("Part %d could not be found or its entity tag does not match.", cp.Number)}
		}
		if i < len(want)-1 && p.Size < minPartSize {
			return &s3err.Error{Code: s3err.EntityTooSmall, Bucket: bucket, Key: key,
				Message: fmt.Sprintf("Part %d is %d bytes; every part but the last must be at least 5 MiB.", cp.Number, p.Size)}
		}
		etags = append(etags, p.ETag)
		chosen = append(chosen, p)
		meta.Size += p.Size
		meta.PartSizes = append(meta.PartSizes, p.Size)
	}
	etag, err := checksum.MultipartETag(etags)
	if err != nil {
		return s3err.Wrap(s3err.InternalError, err)
	}
	meta.ETag = etag
	meta.Checksums, meta.ChecksumType = multipartChecksum(up.Meta, chosen)
	// The upload's checksum algorithm is the parts' concern only.
	meta.System = maps.Clone(meta.System)
	delete(meta.System, "checksum-algorithm")
	info, err := s.data.Complete(ctx, dataplane.CompleteRequest{Target: req.dataTarget(), UploadID: id, Parts: want, Chosen: chosen, Meta: meta})
	if err != nil {
		return err
	}
	res := completeMultipartUploadResult{
		Location: "/" + bucket + "/" + key, Bucket: bucket, Key: key, ETag: quoteETag(info.Meta.ETag),
		ChecksumType: info.Meta.ChecksumType,
	}
	for a, v := range info.Meta.Checksums {
		switch a {
		case "CRC32":
			res.ChecksumCRC32 = v
		case "CRC32C":
			res.ChecksumCRC32C = v
		case "SHA1":
			res.ChecksumSHA1 = v
		case "SHA256":
			res.ChecksumSHA256 = v
		}
	}
	writeVersionHeader(w.Header(), info.VersionID)
	return writeXML(w, http.StatusOK, res)
}

// multipartChecksum derives the object checksum of a multipart upload
// from its parts' checksums: FULL_OBJECT (CRCs combined) when the upload
// asked for it, else COMPOSITE ("-N"). Parts lacking the checksum leave the
// object without one.
func multipartChecksum(upload storage.ObjectMeta, parts []storage.Part) (map[string]string, string) {
	alg, ok := checksum.ParseAlgorithm(upload.System["checksum-algorithm"])
	if !ok {
		return nil, ""
	}
	sums := make([]string, 0, len(parts))
	full := make([]checksum.PartSum, 0, len(parts))
	for _, p := range parts {
		v := p.Checksums[string(alg)]
		if v == "" {
			return nil, ""
		}
		sums = append(sums, v)
		full = append(full, checksum.PartSum{Sum: v, Size: p.Size})
	}
	if upload.ChecksumType == "FULL_OBJECT" {
		if v, err := checksum.FullObject(alg, full); err == nil {
			return map[string]string{string(alg): v}, "FULL_OBJECT"
		}
	}
	v, err := checksum.Composite(alg, sums)
	if err != nil {
		return nil, ""
	}
	return map[string]string{string(alg): v}, "COMPOSITE"
}

// allParts returns every uploaded part of an upload by number.
func (s *Server) allParts(req *request, id string) (map[int]storage.Part, error) {
	have := map[int]storage.Part{}
	marker := 0
	for {
		parts, truncated, err := s.backend.ListParts(req.Context(), req.target.bucket, req.target.key, id, marker, maxPartNumber)
		if err != nil {
			return nil, storageErr(err, req.target.bucket, req.target.key)
		}
		for _, p := range parts {
			have[p.Number] = p
			marker = p.Number
		}
		if !truncated || len(parts) == 0 {
			return have, nil
		}
	}
}

func (s *Server) abortMultipartUpload(w http.ResponseWriter, req *request) error {
	if err := s.backend.AbortUpload(req.Context(), req.target.bucket, req.target.key, req.query.Get("uploadId")); err != nil {
		return storageErr(err, req.target.bucket, req.target.key)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type partXML struct {
	PartNumber     int    `xml:"PartNumber"`
	LastModified   string `xml:"LastModified"`
	ETag           string `xml:"ETag"`
	Size           int64  `xml:"Size"`
	ChecksumCRC32  string `xml:"ChecksumCRC32,omitempty"`
	ChecksumCRC32C string `xml:"ChecksumCRC32C,omitempty"`
	ChecksumSHA1   string `xml:"ChecksumSHA1,omitempty"`
	ChecksumSHA256 string `xml:"ChecksumSHA256,omitempty"`
}

type listPartsResult struct {
	XMLName              struct{}  `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListPartsResult"`
	Bucket               string    `xml:"Bucket"`
	Key                  string    `xml:"Key"`
	UploadID             string    `xml:"UploadId"`
	Initiator            owner     `xml:"Initiator"`
	Owner                owner     `xml:"Owner"`
	StorageClass         string    `xml:"StorageClass"`
	PartNumberMarker     int       `xml:"PartNumberMarker"`
	NextPartNumberMarker int       `xml:"NextPartNumberMarker"`
	MaxParts             int       `xml:"MaxParts"`
	IsTruncated          bool      `xml:"IsTruncated"`
	Parts                []partXML `xml:"Part"`
}

func (s *Server) listParts(w http.ResponseWriter, req *request) error {
	bucket, key, id := req.target.bucket, req.target.key, req.query.Get("uploadId")
	marker, maxParts := 0, 1000
	if v := req.query.Get("part-number-marker"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s3err.Newf(s3err.InvalidArgument, "Part number marker must be a non-negative integer")
		}
		marker = n
	}
	if v := req.query.Get("max-parts"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s3err.Newf(s3err.InvalidArgument, "max-parts must be a non-negative integer")
		}
		maxParts = min(n, 1000)
	}
	if _, err := s.backend.GetUpload(req.Context(), bucket, key, id); err != nil {
		return storageErr(err, bucket, key)
	}
	parts, truncated, err := s.backend.ListParts(req.Context(), bucket, key, id, marker, maxParts)
	if err != nil {
		return storageErr(err, bucket, key)
	}
	o := owner{ID: req.tenant, DisplayName: req.tenant}
	res := listPartsResult{
		Bucket: bucket, Key: key, UploadID: id, Initiator: o, Owner: o, StorageClass: "STANDARD",
		PartNumberMarker: marker, MaxParts: maxParts, IsTruncated: truncated,
	}
	for _, p := range parts {
		px := partXML{PartNumber: p.Number, LastModified: isoTime(p.LastModified), ETag: quoteETag(p.ETag), Size: p.Size,
			ChecksumCRC32: p.Checksums["CRC32"], ChecksumCRC32C: p.Checksums["CRC32C"],
			ChecksumSHA1: p.Checksums["SHA1"], ChecksumSHA256: p.Checksums["SHA256"]}
		res.Parts = append(res.Parts, px)
		res.NextPartNumberMarker = p.Number
	}
	return writeXML(w, http.StatusOK, res)
}

type uploadXML struct {
	Key          string `xml:"Key"`
	UploadID     string `xml:"UploadId"`
	Initiator    owner  `xml:"Initiator"`
	Owner        owner  `xml:"Owner"`
	StorageClass string `xml:"StorageClass"`
	Initiated    string `xml:"Initiated"`
}

type listMultipartUploadsResult struct {
	XMLName            struct{}          `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListMultipartUploadsResult"`
	Bucket             string            `xml:"Bucket"`
	KeyMarker          string            `xml:"KeyMarker"`
	UploadIDMarker     string            `xml:"UploadIdMarker"`
	NextKeyMarker      string            `xml:"NextKeyMarker,omitempty"`
	NextUploadIDMarker string            `xml:"NextUploadIdMarker,omitempty"`
	Prefix             string            `xml:"Prefix"`
	Delimiter          string            `xml:"Delimiter,omitempty"`
	MaxUploads         int               `xml:"MaxUploads"`
	IsTruncated        bool              `xml:"IsTruncated"`
	EncodingType       string            `xml:"EncodingType,omitempty"`
	Uploads            []uploadXML       `xml:"Upload"`
	CommonPrefixes     []commonPrefixXML `xml:"CommonPrefixes"`
}

func (s *Server) listMultipartUploads(w http.ResponseWriter, req *request) error {
	p, err := parseListParams(req.query)
	if err != nil {
		return err
	}
	maxUploads := 1000
	if v := req.query.Get("max-uploads"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s3err.Newf(s3err.InvalidArgument, "max-uploads must be a non-negative integer")
		}
		maxUploads = min(n, 1000)
	}
	keyMarker, idMarker := req.query.Get("key-marker"), req.query.Get("upload-id-marker")
	res, err := s.backend.ListUploads(req.Context(), req.target.bucket, storage.ListUploadsOptions{
		Prefix: p.prefix, Delimiter: p.delimiter, KeyMarker: keyMarker, UploadIDMarker: idMarker, MaxUploads: maxUploads,
	})
	if err != nil {
		return storageErr(err, req.target.bucket, "")
	}
	o := owner{ID: req.tenant, DisplayName: req.tenant}
	out := listMultipartUploadsResult{
		Bucket: req.target.bucket, KeyMarker: p.encode(keyMarker), UploadIDMarker: idMarker,
		Prefix: p.encode(p.prefix), Delimiter: p.encode(p.delimiter), MaxUploads: maxUploads,
		IsTruncated: res.IsTruncated, EncodingType: p.encoding,
	}
	if res.IsTruncated {
		out.NextKeyMarker, out.NextUploadIDMarker = p.encode(res.NextKeyMarker), res.NextUploadIDMarker
	}
	for _, u := range res.Uploads {
		out.Uploads = append(out.Uploads, uploadXML{Key: p.encode(u.Key), UploadID: u.UploadID, Initiator: o, Owner: o,
			StorageClass: "STANDARD", Initiated: isoTime(u.Initiated)})
	}
	for _, c := range res.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, commonPrefixXML{Prefix: p.encode(c)})
	}
	return writeXML(w, http.StatusOK, out)
}
