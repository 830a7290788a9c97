package native

import (
	"fmt"
	"strconv"

	"github.com/facet-sds/facet/internal/filter"
)

// paramInt reads a resolved integer parameter.
func paramInt(p filter.Params, name string) (int64, error) {
	n, err := strconv.ParseInt(p[name], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parameter %s=%q is not an integer", name, p[name])
	}
	return n, nil
}
