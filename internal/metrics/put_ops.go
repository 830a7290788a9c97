package metrics

// PutOps is put_ops: object writes (PutObject, CopyObject, UploadPart,
// UploadPartCopy) per second.
func PutOps() Module {
	return newOpRate("put_ops", isPut)
}
