// Package nbd owns Facet's Network Block Device server: the fixed newstyle
// handshake (NO_ZEROES; options EXPORT_NAME, GO, INFO, LIST, ABORT and
// STARTTLS), and the transmission phase (READ, WRITE, FLUSH, TRIM,
// WRITE_ZEROES, DISC, honouring FUA) with many requests in flight per
// connection and replies in completion order. Replies are simple replies:
// structured replies are optional in the protocol and refused here.
//
// What an export is, who may open it and how its bytes are stored belong
// to the caller (the Exports interface); this package only speaks the
// protocol. It is hand-written because no Go NBD library can be had here.
package nbd

// Protocol constants, from the NBD protocol document (doc/proto.md).
const (
	nbdMagic      = 0x4e42444d41474943 // "NBDMAGIC"
	ihaveOpt      = 0x49484156454F5054 // "IHAVEOPT"
	optReplyMagic = 0x3e889045565a9

	flagFixedNewstyle = 1 << 0
	flagNoZeroes      = 1 << 1

	optExportName      = 1
	optAbort           = 2
	optList            = 3
	optStartTLS        = 5
	optInfo            = 6
	optGo              = 7
	optStructuredReply = 8

	repAck    = 1
	repServer = 2
	repInfo   = 3

	repErrUnsup     = 1<<31 + 1
	repErrPolicy    = 1<<31 + 2
	repErrInvalid   = 1<<31 + 3
	repErrTLSReqd   = 1<<31 + 5
	repErrUnknown   = 1<<31 + 6
	repErrShutdown  = 1<<31 + 7
	repErrTooBig    = 1<<31 + 9
	infoExport      = 0
	infoName        = 1
	infoDescription = 2
	infoBlockSize   = 3

	// Transmission flags.
	tfHasFlags        = 1 << 0
	tfReadOnly        = 1 << 1
	tfSendFlush       = 1 << 2
	tfSendFUA         = 1 << 3
	tfSendTrim        = 1 << 5
	tfSendWriteZeroes = 1 << 6
	tfCanMultiConn    = 1 << 8

	requestMagic     = 0x25609513
	simpleReplyMagic = 0x67446698

	cmdRead        = 0
	cmdWrite       = 1
	cmdDisc        = 2
	cmdFlush       = 3
	cmdTrim        = 4
	cmdWriteZeroes = 6

	cmdFlagFUA    = 1 << 0
	cmdFlagNoHole = 1 << 1

	// Error codes of simple replies (errno values, as the protocol fixes them).
	EPERM     = 1
	EIO       = 5
	ENOMEM    = 12
	EINVAL    = 22
	ENOSPC    = 28
	EOVERFLOW = 75
	ENOTSUP   = 95
	ESHUTDOWN = 108
)

// Sizes the server advertises and enforces.
const (
	// MaxPayload is the largest READ or WRITE served (NBD_INFO_BLOCK_SIZE
	// maximum); larger requests get EINVAL (writes have their payload
	// discarded first), and the connection goes on.
	MaxPayload = 32 << 20
	// PreferredBlock is the advertised preferred block size.
	PreferredBlock = 4096
	// maxOptionData bounds an option's payload; longer ones are
	// discarded and refused with NBD_REP_ERR_TOO_BIG.
	maxOptionData = 64 << 10
	// maxDiscard is where discarding a too long option stops being
	// worth it: the connection is closed instead.
	maxDiscard = 1 << 20
	// requestHeaderLen is the size of a request header.
	requestHeaderLen = 28
)
