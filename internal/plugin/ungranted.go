package plugin

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"

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
// everything with EBADF, the error the plugin got before, and logs each
// path refused, with the grant that would allow it, as it does for an HTTP
// request to a host not granted. Runtimes resolve a path to the preopened
// directory with the longest matching name, so granted directories are
// reached as before; only what would have failed reaches this one.

// mountGrants is mountFS, plus the refusing directory at "/" when no
// grant is mounted there.
func mountGrants(name string, log *slog.Logger, mounts []config.Mount) (wazero.FSConfig, []*os.Root, error) {
	cfg, roots, err := mountFS(mounts)
	if err != nil {
		return nil, nil, err
	}
	guests := make([]string, 0, len(mounts))
	for _, m := range mounts {
		if path.Clean("/"+m.Guest) == "/" {
			return cfg, roots, nil
		}
		guests = append(guests, m.Guest)
	}
	u := &ungrantedFS{plugin: name, log: log, granted: guests, seen: map[string]bool{}}
	return cfg.(sysfs.FSConfig).WithSysFSMount(u, "/"), roots, nil
}

// maxUngrantedLogged bounds the directories whose refusals are logged as
// warnings, one each; later refusals are logged at debug.
const maxUngrantedLogged = 64

// ungrantedFS is the directory at "/" of a plugin with no grant there.
type ungrantedFS struct {
	experimentalsys.UnimplementedFS
	plugin  string
	log     *slog.Logger
	granted []string // the guest paths of the grants

	mu   sync.Mutex
	seen map[string]bool // the directories whose grant was suggested
}

func (u *ungrantedFS) String() string { return "(no grant)" }

// refuse logs that op on name (relative to "/") was refused and returns
// EBADF. dir reports that name is a directory.
func (u *ungrantedFS) refuse(op, name string, dir bool) experimentalsys.Errno {
	guest := path.Clean("/" + name)
	want := guest
	if !dir && guest != "/" {
		want = path.Dir(guest)
	}
	u.mu.Lock()
	first := !u.seen[want] && len(u.seen) < maxUngrantedLogged
	if first {
		u.seen[want] = true
	}
	u.mu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	granted := "no directory is granted"
	if len(u.granted) > 0 {
		granted = "the granted directories are " + strings.Join(u.granted, ", ")
	}
	u.log.Log(context.Background(), level, fmt.Sprintf("file access denied: %q is in no directory of grants.allowed_paths (%s); to allow it, add {host: <a directory>, guest: %s} to grants.allowed_paths of plugin %s",
		guest, granted, want, u.plugin), "op", op, "path", guest)
	return experimentalsys.EBADF
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
