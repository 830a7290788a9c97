package s3api

import (
	"errors"
	"net/http"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

type listAllMyBucketsResult struct {
	XMLName struct{}    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListAllMyBucketsResult"`
	Owner   owner       `xml:"Owner"`
	Buckets []bucketXML `xml:"Buckets>Bucket"`
}

type bucketXML struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
}

func (s *Server) listBuckets(w http.ResponseWriter, req *request) error {
	entries, err := s.buckets.ListBuckets(req.Context(), req.tenant)
	if err != nil {
		return s3err.Wrap(s3err.InternalError, err)
	}
	res := listAllMyBucketsResult{Owner: owner{ID: req.tenant, DisplayName: req.tenant}, Buckets: []bucketXML{}}
	for _, e := range entries {
		res.Buckets = append(res.Buckets, bucketXML{Name: e.Name, CreationDate: isoTime(e.Created)})
	}
	return writeXML(w, http.StatusOK, res)
}

type createBucketConfiguration struct {
	LocationConstraint string `xml:"LocationConstraint"`
}

func (s *Server) createBucket(w http.ResponseWriter, req *request) error {
	ctx := req.Context()
	bucket := req.target.bucket
	if !validBucketName(bucket) {
		return &s3err.Error{Code: s3err.InvalidBucketName, Bucket: bucket}
	}
	if req.ContentLength > 0 || req.body.DecodedLength() > 0 {
		body, err := readBody(req)
		if err != nil {
			return err
		}
		var cfg createBucketConfiguration
		if err := xmlUnmarshalStrict(body, "CreateBucketConfiguration", &cfg); err != nil {
			return err
		}
	}
	claimErr := s.buckets.ClaimBucket(ctx, req.tenant, bucket)
	switch {
	case errors.Is(claimErr, s3err.ErrBucketOwnedByOther):
		return &s3err.Error{Code: s3err.BucketAlreadyExists, Bucket: bucket}
	case errors.Is(claimErr, s3err.ErrBucketOwnedByYou):
		// A crash between claim and backend creation leaves a claim with
		// no bucket behind it; finish the job instead of reporting success
		// for a bucket that does not exist.
		if ok, err := s.backend.BucketExists(ctx, bucket); err != nil {
			return storageErr(err, bucket, "")
		} else if ok {
			return &s3err.Error{Code: s3err.BucketAlreadyOwnedByYou, Bucket: bucket}
		}
	case claimErr != nil:
		return s3err.Wrap(s3err.InternalError, claimErr)
	}
	if err := s.backend.CreateBucket(ctx, bucket); err != nil && !errors.Is(err, storage.ErrBucketExists) {
		if claimErr == nil {
			_ = s.buckets.ReleaseBucket(ctx, req.tenant, bucket)
		}
		return storageErr(err, bucket, "")
	}
	w.Header().Set("Location", "/"+bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) deleteBucket(w http.ResponseWriter, req *request) error {
	ctx := req.Context()
	bucket := req.target.bucket
	if err := s.backend.DeleteBucket(ctx, bucket); err != nil && !errors.Is(err, storage.ErrBucketNotFound) {
		return storageErr(err, bucket, "")
	}
	if err := s.buckets.ReleaseBucket(ctx, req.tenant, bucket); err != nil && !errors.Is(err, s3err.ErrNoSuchBucket) {
		return s3err.Wrap(s3err.InternalError, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) headBucket(w http.ResponseWriter, req *request) error {
	w.Header().Set("x-amz-bucket-region", s.region)
	w.WriteHeader(http.StatusOK)
	return nil
}

type locationConstraint struct {
	XMLName struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LocationConstraint"`
	Region  string   `xml:",chardata"`
}

func (s *Server) getBucketLocation(w http.ResponseWriter, req *request) error {
	region := s.region
	if region == "us-east-1" {
		// S3 reports the classic region as an empty constraint.
		region = ""
	}
	return writeXML(w, http.StatusOK, locationConstraint{Region: region})
}

type accessControlPolicy struct {
	XMLName struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ AccessControlPolicy"`
	Owner   owner    `xml:"Owner"`
	Grants  []grant  `xml:"AccessControlList>Grant"`
}

type grant struct {
	Grantee    grantee `xml:"Grantee"`
	Permission string  `xml:"Permission"`
}

type grantee struct {
	XMLNS       string `xml:"xmlns:xsi,attr"`
	Type        string `xml:"xsi:type,attr"`
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

// getACL reports the only ACL Facet has: the owning tenant has full
// control. Tenants are isolated; there is no cross-tenant sharing yet.
func (s *Server) getACL(w http.ResponseWriter, req *request) error {
	if req.target.hasKey {
		var err error
		if v := s.versions(); v != nil && req.version != "" {
			_, err = v.HeadObjectVersion(req.Context(), req.target.bucket, req.target.key, req.version)
		} else {
			_, err = s.backend.HeadObject(req.Context(), req.target.bucket, req.target.key)
		}
		if err != nil {
			return storageErr(err, req.target.bucket, req.target.key)
		}
	}
	o := owner{ID: req.tenant, DisplayName: req.tenant}
	return writeXML(w, http.StatusOK, accessControlPolicy{Owner: o, Grants: []grant{{
		Grantee:    grantee{XMLNS: "http://www.w3.org/2001/XMLSchema-instance", Type: "CanonicalUser", ID: o.ID, DisplayName: o.DisplayName},
		Permission: "FULL_CONTROL",
	}}})
}
