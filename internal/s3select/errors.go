package s3select

import (
	"errors"
	"fmt"

	"github.com/facet-sds/facet/internal/s3select/sql"
)

// Error is an S3 Select error: a code from S3's list and a message. Before
// the response started it is sent as an XML error with HTTP 400; after, as
// an error event in the stream.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Err }

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// S3 Select's request and input error codes.
const (
	CodeMalformedXML              = "MalformedXML"
	CodeMissingRequiredParameter  = "MissingRequiredParameter"
	CodeInvalidExpressionType     = "InvalidExpressionType"
	CodeInvalidDataSource         = "InvalidDataSource"
	CodeInvalidCompressionFormat  = "InvalidCompressionFormat"
	CodeInvalidFileHeaderInfo     = "InvalidFileHeaderInfo"
	CodeInvalidFieldDelimiter     = "InvalidFieldDelimiter"
	CodeInvalidQuoteCharacter     = "InvalidQuoteCharacter"
	CodeInvalidRecordDelimiter    = "InvalidRecordDelimiter"
	CodeInvalidRequestParameter   = "InvalidRequestParameter"
	CodeInvalidJSONType           = "InvalidJsonType"
	CodeInvalidQuoteFields        = "InvalidQuoteFields"
	CodeInvalidScanRange          = "InvalidScanRange"
	CodeUnsupportedScanRangeInput = "UnsupportedScanRangeInput"
	CodeCSVParsingError           = "CSVParsingError"
	CodeJSONParsingError          = "JSONParsingError"
	CodeParquetParsingError       = "ParquetParsingError"
	CodeUnsupportedParquetType    = "UnsupportedParquetType"
	CodeOverMaxRecordSize         = "OverMaxRecordSize"
	CodeOverMaxParquetBlockSize   = "OverMaxParquetBlockSize"
	CodeOverMaxColumn             = "OverMaxColumn"
	CodeTruncatedInput            = "TruncatedInput"
	CodeInternalError             = "InternalError"
)

// AsError converts any error of a select run to an *Error: SQL errors
// keep their code and position, others become InternalError.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var se *sql.Error
	if errors.As(err, &se) {
		return &Error{Code: se.Code, Message: se.Error(), Err: err}
	}
	return &Error{Code: CodeInternalError, Message: "we encountered an internal error, please try again", Err: err}
}
