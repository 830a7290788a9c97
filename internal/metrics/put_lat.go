package metrics

// PutLat is put_lat: the mean duration of object writes, in seconds.
func PutLat() Module {
	return meanLatency{name: "put_lat", doc: "mean object write latency", match: isPut}
}
