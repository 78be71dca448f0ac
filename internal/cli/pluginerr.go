package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// pluginError returns err, a failure of the plugin called name, naming the
// plugin once: the errors of package plugin name it already, and a crash
// while starting says all there is to say (it happens whatever the plugin
// was asked).
func pluginError(name string, err error) error {
	if err == nil {
		return nil
	}
	var crash *plugin.CrashError
	if errors.As(err, &crash) && crash.Starting {
		return crash
	}
	msg := err.Error()
	if strings.Contains(msg, "plugin "+name+":") || strings.Contains(msg, "plugin "+name+" ") {
		return err
	}
	return fmt.Errorf("plugin %s: %w", name, err)
}

// joinErrors joins errs, leaving out nils and repeated messages: the
// exports of a plugin that cannot start all fail alike.
func joinErrors(errs ...error) error {
	var out []error
	seen := map[string]bool{}
	for _, err := range errs {
		if err == nil || seen[err.Error()] {
			continue
		}
		seen[err.Error()] = true
		out = append(out, err)
	}
	return errors.Join(out...)
}
