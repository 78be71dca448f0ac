package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Paths outside every grant.
//
// A path in no granted directory is in no directory WASI preopens, and a
// plugin's own runtime refuses it, or sends it to the host with no
// directory (Go: "open /data/hello.txt: Bad file number"): Hangar never
// heard of it, and could not say which grant was missing. So, unless a
// grant is mounted at "/", Hangar mounts at "/" a directory that refuses
// everything with EBADF (errno 8), the error the plugin got before, and
// logs each path refused, with the grant that would allow it, as it does
// for an HTTP request to a host not granted. Runtimes resolve a path to
// the preopened directory with the longest matching name, so granted
// directories are reached as before; only what would have failed reaches
// this one.
//
// Each instance has a refusing directory of its own, which knows the
// instance's running call (by its clock, which holds the call's context):
// a refusal is also recorded on that call, and a call that fails says
// what it was refused and which grant to add (callState.deniedText), to
// its client as well as in the log. The text names guest paths only: the
// path the plugin asked for, and the guest paths of its grants.

// fsGrants is the file system of a plugin whose grants mount nothing at
// "/": its grants, and what the refusing directories of its instances
// share.
type fsGrants struct {
	base    sysfs.FSConfig
	plugin  string
	log     *slog.Logger
	granted []string // the guest paths of the grants

	mu   sync.Mutex
	seen map[string]bool // the directories whose grant was suggested
}

// mountGrants is mountFS, plus the refusing directory at "/" when no
// grant is mounted there. It returns the grants too, which give each
// instance a refusing directory of its own (fsGrants.config); nil when a
// grant is mounted at "/".
func mountGrants(name string, log *slog.Logger, mounts []config.Mount) (wazero.FSConfig, *fsGrants, []*os.Root, error) {
	cfg, roots, err := mountFS(mounts)
	if err != nil {
		return nil, nil, nil, err
	}
	guests := make([]string, 0, len(mounts))
	for _, m := range mounts {
		if path.Clean("/"+m.Guest) == "/" {
			return cfg, nil, roots, nil
		}
		guests = append(guests, m.Guest)
	}
	g := &fsGrants{base: cfg.(sysfs.FSConfig), plugin: name, log: log, granted: guests, seen: map[string]bool{}}
	return g.base.WithSysFSMount(&ungrantedFS{g: g}, "/"), g, roots, nil
}

// config returns cfg with the file system of an instance whose calls
// clock runs: the grants, and a refusing directory at "/" that records
// its refusals on the running call. A nil g leaves cfg as it is.
func (g *fsGrants) config(cfg wazero.ModuleConfig, clock *callClock) wazero.ModuleConfig {
	if g == nil {
		return cfg
	}
	return cfg.WithFSConfig(g.base.WithSysFSMount(&ungrantedFS{g: g, clock: clock}, "/"))
}

// maxUngrantedLogged bounds the directories whose refusals are logged as
// warnings, one each; later refusals are logged at debug.
const maxUngrantedLogged = 64

// maxDenials bounds the refusals a call records.
const maxDenials = 4

// ungrantedFS is the directory at "/" of an instance of a plugin with no
// grant there.
type ungrantedFS struct {
	experimentalsys.UnimplementedFS
	g *fsGrants
	// clock is the instance's, whose context is the running call's; nil
	// for the directory no instance has.
	clock *callClock
}

func (u *ungrantedFS) String() string { return "(no grant)" }

// refuse logs that op on name (relative to "/") was refused, records it on
// the running call, and returns EBADF. dir reports that name is a
// directory.
func (u *ungrantedFS) refuse(op, name string, dir bool) experimentalsys.Errno {
	g := u.g
	guest := path.Clean("/" + name)
	want := guest
	if !dir && guest != "/" {
		want = path.Dir(guest)
	}
	g.mu.Lock()
	first := !g.seen[want] && len(g.seen) < maxUngrantedLogged
	if first {
		g.seen[want] = true
	}
	g.mu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	granted := "no directory is granted"
	if len(g.granted) > 0 {
		granted = "the granted directories are " + strings.Join(g.granted, ", ")
	}
	msg := fmt.Sprintf("file access denied: %q is in no directory of grants.allowed_paths (%s); to allow it, add {host: <a directory>, guest: %s} to grants.allowed_paths of plugin %s",
		guest, granted, want, g.plugin)
	g.log.Log(context.Background(), level, msg, "op", op, "path", guest)
	if u.clock != nil && u.clock.ctx != nil {
		// On the instance's goroutine, in its call.
		stateFrom(u.clock.ctx).deny(msg)
	}
	return experimentalsys.EBADF
}

// deny records on the call that Hangar refused it what msg says.
func (s *callState) deny(msg string) {
	if s == nil || len(s.denied) >= maxDenials || slices.Contains(s.denied, msg) {
		return
	}
	s.denied = append(s.denied, msg)
}

// deniedText is what the call was refused, for its error; "" if nothing.
func (s *callState) deniedText() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.denied, "; ")
}

// deniedResult is out, the output of export, with what the call was
// refused added when out is a tool result that is an error: the plugin
// failed, most likely for what it was refused, and the client (often a
// model, which sees no log) is told which grant to add. Any other output
// is left as it is: the plugin got over the refusal.
func (p *Plugin) deniedResult(s *callState, export string, out []byte) []byte {
	if export != "call_tool" && export != "call" {
		return out
	}
	var res toolResult
	if json.Unmarshal(out, &res) != nil || !res.IsError {
		return out
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: s.deniedText()})
	b, err := json.Marshal(&res.CallToolResult)
	if err != nil {
		return out
	}
	return b
}

func (u *ungrantedFS) OpenFile(name string, flag experimentalsys.Oflag, _ fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if rel(name) == "." {
		// The directory itself: wazero opens it to tell it is one, and
		// the plugin may open it; reading it is refused.
		return &ungrantedDir{fs: u}, 0
	}
	return nil, u.refuse("open", name, flag&experimentalsys.O_DIRECTORY != 0)
}

func (u *ungrantedFS) Lstat(name string) (sys.Stat_t, experimentalsys.Errno) {
	return sys.Stat_t{}, u.refuse("stat", name, false)
}

func (u *ungrantedFS) Stat(name string) (sys.Stat_t, experimentalsys.Errno) {
	return sys.Stat_t{}, u.refuse("stat", name, false)
}

func (u *ungrantedFS) Readlink(name string) (string, experimentalsys.Errno) {
	return "", u.refuse("readlink", name, false)
}

func (u *ungrantedFS) Mkdir(name string, _ fs.FileMode) experimentalsys.Errno {
	return u.refuse("mkdir", name, true)
}

func (u *ungrantedFS) Chmod(name string, _ fs.FileMode) experimentalsys.Errno {
	return u.refuse("chmod", name, false)
}

func (u *ungrantedFS) Rename(from, _ string) experimentalsys.Errno {
	return u.refuse("rename", from, false)
}

func (u *ungrantedFS) Rmdir(name string) experimentalsys.Errno { return u.refuse("rmdir", name, true) }

func (u *ungrantedFS) Link(_, name string) experimentalsys.Errno {
	return u.refuse("link", name, false)
}

func (u *ungrantedFS) Symlink(_, name string) experimentalsys.Errno {
	return u.refuse("symlink", name, false)
}

func (u *ungrantedFS) Unlink(name string) experimentalsys.Errno {
	return u.refuse("unlink", name, false)
}

func (u *ungrantedFS) Utimens(name string, _, _ int64) experimentalsys.Errno {
	return u.refuse("utimens", name, false)
}

// ungrantedDir is the directory "/" of an ungrantedFS: a directory, whose
// every use is refused.
type ungrantedDir struct {
	experimentalsys.UnimplementedFile
	fs *ungrantedFS
}

func (d *ungrantedDir) IsDir() (bool, experimentalsys.Errno) { return true, 0 }

func (d *ungrantedDir) Stat() (sys.Stat_t, experimentalsys.Errno) {
	return sys.Stat_t{}, experimentalsys.EBADF
}

func (d *ungrantedDir) Readdir(int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	return nil, d.fs.refuse("list", ".", true)
}

func (d *ungrantedDir) Close() experimentalsys.Errno { return 0 }
