package metrics

// Lat is lat: the mean duration of every request, in seconds.
func Lat() Module {
	return meanLatency{name: "lat", doc: "mean request latency", match: anyOp}
}
