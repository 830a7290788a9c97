package metrics

// Ops is ops: every request per second, whatever its operation.
func Ops() Module {
	return opRate{name: "ops", doc: "all requests per second", match: anyOp}
}
