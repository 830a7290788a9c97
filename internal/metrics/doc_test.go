package metrics

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docs/bus.md documents every built-in metric as registered, and every
// subject.
func TestBusDocInStep(t *testing.T) {
	doc, err := os.ReadFile("../../docs/bus.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range NewBuiltinRegistry().Infos() {
		row := fmt.Sprintf("| `%s` | %s | %s | %s |", in.Name, in.Unit, in.Merge, in.Doc)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/bus.md lacks the row %s", row)
		}
	}
	for _, subj := range []string{SubjectNodePrefix + "<metric>", SubjectAggPrefix + "<metric>", SubjectWatchPrefix + "<kind>"} {
		if !strings.Contains(string(doc), "`"+subj+"`") {
			t.Errorf("docs/bus.md does not document %s", subj)
		}
	}
}
