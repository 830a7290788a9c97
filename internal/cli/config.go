package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// applyConfig fills every flag the user did not set on the command line
// from FACET_<FLAG_NAME> in env, then from the YAML file at path (keys are
// flag names). Flags beat the environment, which beats the file.
func applyConfig(fs *pflag.FlagSet, path string, env func(string) string) error {
	fileValues := map[string]any{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read config: %w", err)
		}
		if err := yaml.Unmarshal(data, &fileValues); err != nil {
			return fmt.Errorf("parse config %s: %w", path, err)
		}
		for k := range fileValues {
			if fs.Lookup(k) == nil {
				return fmt.Errorf("config %s: unknown setting %q", path, k)
			}
		}
	}
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || firstErr != nil {
			return
		}
		envName := "FACET_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := env(envName); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				firstErr = fmt.Errorf("%s: %w", envName, err)
			}
			return
		}
		if v, ok := fileValues[f.Name]; ok {
			s := fmt.Sprint(v)
			if list, isList := v.([]any); isList {
				parts := make([]string, len(list))
				for i, e := range list {
					parts[i] = fmt.Sprint(e)
				}
				s = strings.Join(parts, ",")
			}
			if err := fs.Set(f.Name, s); err != nil {
				firstErr = fmt.Errorf("config %s: %s: %w", path, f.Name, err)
			}
		}
	})
	return firstErr
}
