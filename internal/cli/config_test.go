package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigPrecedence: on `facet gateway`'s own flags, a flag on the
// command line beats FACET_<FLAG> in the environment, which beats the YAML
// file; the file alone sets the rest (the remote backend's URL included),
// lists included; an unknown key in the file is refused by name.
func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "facet.yaml")
	yaml := "backend: s3://filekey:filesecret@s3.example:9000/facet/pfx?region=eu-west-1\n" +
		"meta: redis://file:6379/0\n" +
		"bus: nats://file:4222\n" +
		"s3-addr: 127.0.0.1:1111\n" +
		"domain: [a.example, b.example]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newGatewayCommand()
	if err := cmd.Flags().Parse([]string{"--s3-addr", "127.0.0.1:3333"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FACET_META": "redis://env:6379/1", "FACET_S3_ADDR": "127.0.0.1:2222"}
	if err := applyConfig(cmd.Flags(), path, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"s3-addr": "127.0.0.1:3333",                                                     // flag > env > file
		"meta":    "redis://env:6379/1",                                                 // env > file
		"backend": "s3://filekey:filesecret@s3.example:9000/facet/pfx?region=eu-west-1", // file
		"bus":     "nats://file:4222",
		"domain":  "[a.example,b.example]",
	} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}

	if err := os.WriteFile(path, []byte("backnd: s3://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := applyConfig(newGatewayCommand().Flags(), path, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), `unknown setting "backnd"`) {
		t.Fatalf("a misspelt key: %v", err)
	}
}
