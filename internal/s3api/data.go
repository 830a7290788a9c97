package s3api

import "github.com/facet-sds/facet/internal/dataplane"

// dataTarget names req's object to the data plane.
func (req *request) dataTarget() dataplane.Target {
	return dataplane.Target{Tenant: req.tenant, Bucket: req.target.bucket, Key: req.target.key, VersionID: req.version, Context: dataplane.ContextHeaders(req.Header)}
}
