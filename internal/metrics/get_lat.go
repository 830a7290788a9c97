package metrics

// GetLat is get_lat: the mean duration of object reads, in seconds (to the
// response's last byte).
func GetLat() Module {
	return meanLatency{name: "get_lat", doc: "mean GetObject latency", match: isGet}
}
