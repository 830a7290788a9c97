// Package layering owns the checks of Facet's floor plan against `go list`:
// every package on one floor of README.md's floor table, no import going up
// a floor, nothing but a higher floor importing the S3 front end, and the
// metadata store, the policy language and the workload metrics linking
// nothing of the data path (s3select, parquet-go).
//
// The plan itself is the floor table in README.md's architecture section
// (between <!-- floors:begin --> and <!-- floors:end -->): one source, read
// by the people who add packages and by this package's test. The package
// has no code of its own; layering_test.go holds the checks and the link
// rules (sealed, mustNotLink).
//
// Only the imports of non-test files count: a test may reach upward (meta's
// contract_test.go imports s3api to check that the Store fits it).
package layering
