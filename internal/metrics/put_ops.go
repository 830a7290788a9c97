package metrics

// PutOps is put_ops: object writes (PutObject, CopyObject, UploadPart,
// UploadPartCopy) per second.
func PutOps() Module {
	return opRate{name: "put_ops", doc: "object writes (PutObject, CopyObject, UploadPart) per second", match: isPut}
}
