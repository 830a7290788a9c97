package obs

import "testing"

func TestClassOf(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   Class
	}{
		{200, "", ClassOK},
		{304, "NotModified", ClassOK},
		{404, "NoSuchKey", ClassClient},
		{403, "AccessDenied", ClassClient},
		{501, "NotImplemented", ClassClient},
		{500, "InternalError", ClassServer},
		{503, "SlowDown", ClassServer},
		{200, "InternalError", ClassServer}, // failed after the status went out
		{200, "CastFailed", ClassClient},    // a select's query failing on the data
	} {
		if got := ClassOf(c.status, c.code); got != c.want {
			t.Errorf("ClassOf(%d, %q) = %s, want %s", c.status, c.code, got, c.want)
		}
	}
}
