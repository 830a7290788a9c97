// Package layering owns Facet's floor plan: which floor every package of
// the module stands on, and the test (layering_test.go) that reads `go list`
// and fails when an import goes from a lower floor to a higher one, when a
// package below the S3 front end imports it, when the metadata store or the
// policy language links the data path, or when a package is missing from
// the plan. It has no code; the plan is the table in the test.
//
// Only the imports of non-test files count: a test may reach upward (meta's
// contract_test.go imports s3api to check that the Store fits it).
package layering
