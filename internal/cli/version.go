package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the module version hangar was built from, as the MCP server
// reports it to clients: "devel" for a build from a checkout.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// versionLine describes a build, for hangar version: the module version
// ("(devel)" when built from a checkout), the VCS revision and whether the
// checkout had changes when the build stamped them (go build does in a git
// checkout), and the Go version and platform.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	b.WriteString("hangar ")
	if !ok || bi.Main.Version == "" {
		b.WriteString("(unknown)")
	} else {
		b.WriteString(bi.Main.Version)
	}
	var rev, modified string
	if ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	if rev != "" {
		b.WriteString(" revision " + rev)
		if modified == "true" {
			b.WriteString(" (modified)")
		}
	}
	goVersion := runtime.Version()
	if ok && bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	fmt.Fprintf(&b, " %s %s/%s", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

var versionCmd = &command{
	name:  "version",
	short: "print the version",
	long: `Version prints the version of hangar: the module version, or "(devel)"
for a build from a checkout, then the VCS revision it was built from, with
"(modified)" if the checkout had uncommitted changes (go build records both
in a git checkout), then the Go version and platform. "hangar --version"
does the same.`,
}

func init() { versionCmd.run = runVersion }

func runVersion(ctx context.Context, env *Env, args []string) error {
	pos, err := versionCmd.parse(env, versionCmd.flagSet(env.Stderr), args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		versionCmd.help(env.Stderr)
		return errUsage
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintln(env.Stdout, versionLine(bi, ok))
	return nil
}
