package block

import "github.com/facet-sds/facet/internal/meta"

// MemberPath is where member i of v's stripe lives in a pool directory
// (the data locality service reports it).
func MemberPath(dir string, v meta.Volume, i int) string { return memberPath(dir, v, i) }
