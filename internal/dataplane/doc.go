// Package dataplane owns what happens to an object's bytes between a
// protocol front end (s3api; a Swift front end later) and the backend. Its
// entry points (Plane.Get, Put, PutPart, Copy, CopyPart, Complete, Delete,
// Select; plane.go) take requests a front end parsed and authenticated,
// with no net/http types, and own what runs on the way: the request
// filters (caching, tagging, the metadata guard, the recycle bin), the
// object cache, which GET variant answers, GET transforms and select.
//
// Below them, it runs the resolved filter pipeline on a PUT stream
// (gateway stage, then storage stage), records the reverse plan of every
// reversible filter in the object's system metadata, and on GET composes
// the decoders of that recorded plan — whatever the policies say now —
// into a random-access view, so a Range GET reads only what the range
// needs. Errors are *s3err.Error values, the shared vocabulary front ends
// render.
package dataplane
