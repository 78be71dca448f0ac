package cli

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLine(t *testing.T) {
	platform := " go1.26.1 " + runtime.GOOS + "/" + runtime.GOARCH
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "0de452d0a28a5bed9a9f48692602e914217c0017"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.4.0"}}, true,
			"hangar v1.4.0" + platform},
		{"checkout", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"},
			Settings: settings("-buildmode", "exe", "vcs", "git", "vcs.revision", rev, "vcs.modified", "false")}, true,
			"hangar (devel) revision " + rev + platform},
		{"modified checkout", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", rev, "vcs.modified", "true")}, true,
			"hangar (devel) revision " + rev + " (modified)" + platform},
		{"pseudo-version", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.0.0-20260501100000-0de452d0a28a"}}, true,
			"hangar v0.0.0-20260501100000-0de452d0a28a" + platform},
		{"no build info", nil, false,
			"hangar (unknown) " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH},
	} {
		if got := versionLine(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, &Env{Stdout: &out, Stderr: &errOut})
		bi, ok := debug.ReadBuildInfo()
		if want := versionLine(bi, ok) + "\n"; code != 0 || out.String() != want {
			t.Errorf("%v: exit %d, %q (stderr %q), want %q", args, code, out.String(), errOut.String(), want)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"version", "extra"}, &Env{Stdout: &out, Stderr: &errOut}); code != 2 ||
		!strings.Contains(errOut.String(), "Usage: hangar version") {
		t.Errorf("version extra: exit %d, stderr %q", code, errOut.String())
	}
}
