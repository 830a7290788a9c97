// Package e2e owns Facet's end-to-end tests: they build the real facet
// binary, start `facet serve` as a separate process on loopback ports, create
// tenants through `facet ctl`, and talk to it with real S3 clients
// (aws-sdk-go-v2, minio-go) and raw signed HTTP. The Python tests in py/
// do the same with boto3 and the aws cli.
package e2e
