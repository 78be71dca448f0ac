package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tetratelabs/wazero/sys"
)

var (
	// ErrUnknownInterface reports a module whose exports match none of the
	// plugin interfaces Hangar speaks.
	ErrUnknownInterface = errors.New("module exports neither call_tool/list_tools (v1) nor call and describe (servlet, legacy)")
	// ErrNotSupported reports an operation the plugin's interface or
	// exports do not offer.
	ErrNotSupported = errors.New("not supported by this plugin")
	// ErrTimeout reports a call that ran longer than its call timeout.
	ErrTimeout = errors.New("plugin call exceeded its time limit")
	// ErrTrap reports a call that ended in a WebAssembly trap or exit: the
	// plugin crashed (panic, unreachable, out of memory...).
	ErrTrap = errors.New("plugin crashed")
	// ErrOutputTooLarge reports a call whose output exceeded the limit.
	ErrOutputTooLarge = errors.New("plugin output exceeds the limit")
	// ErrBadOutput reports output that is not the JSON document the
	// interface requires.
	ErrBadOutput = errors.New("plugin returned malformed output")
	// ErrClosed reports a call to a closed plugin.
	ErrClosed = errors.New("plugin is closed")
	// ErrBusy reports a call that found no free instance of the plugin
	// within its time limit.
	ErrBusy = errors.New("plugin busy")
)

// PluginError is an error the plugin itself reported (with Extism's
// error_set), as opposed to a failure of the plugin.
type PluginError struct {
	Export  string
	Message string
}

func (e *PluginError) Error() string { return e.Message }

// maxLoggedStack bounds the stack of a recovered panic that is logged.
const maxLoggedStack = 16 << 10

// pluginError is the error of a call of export whose plugin reported msg,
// with what Hangar refused it during the call (see ungranted.go). A
// handler of Hangar's Go PDK that panicked reports its message, a blank
// line and the goroutine's stack (pdk/panic.go): the stack is logged, as
// a warning, within the plugin's log budget (it is the plugin's text, as
// its stderr is), and the error keeps the message.
func (p *Plugin) pluginError(s *callState, export, msg string) *PluginError {
	if first, stack, ok := strings.Cut(msg, "\n\ngoroutine "); ok && strings.Contains(first, ": panic: ") {
		msg, stack = first, "goroutine "+stack
		if len(stack) > maxLoggedStack {
			stack = stack[:maxLoggedStack] + "\n..."
		}
		if limiterFor(p.log).allow() {
			p.log.Warn("plugin handler panicked", "export", export, "error", msg, "stack", stack)
		}
	}
	if d := s.deniedText(); d != "" {
		msg += " (" + d + ")"
	}
	return &PluginError{Export: export, Message: msg}
}

// CrashError is a call that ended in a WebAssembly trap or a non-zero exit:
// the plugin crashed. It wraps ErrTrap. Its reason is what the plugin's
// language runtime wrote to stderr of the crash (a Go or Rust panic's
// message), when it wrote one, and what the trap was otherwise.
type CrashError struct {
	Plugin string
	Export string
	// Tool is the tool the call was for, when it was a tool call.
	Tool string
	// Starting reports a crash in the initialization of the guest's
	// language runtime (Go's init functions, _initialize), before the
	// export itself ran: every call crashes the same way, whatever its
	// export.
	Starting bool
	// OutOfMemory reports that the guest ran out of memory, and Memory is
	// its limit (limits.memory), in bytes.
	OutOfMemory bool
	Memory      int64
	// Reason is the panic's message or the trap; ExitCode is the exit code
	// when the guest exited (0: it did not).
	Reason   string
	ExitCode uint32
	// Denied is what Hangar refused the plugin during the call, and which
	// grant would allow it (see ungranted.go); "" if nothing.
	Denied string
}

func (e *CrashError) Error() string {
	var b strings.Builder
	if e.Starting {
		fmt.Fprintf(&b, "plugin %s crashed while starting", e.Plugin)
	} else if e.Tool != "" {
		fmt.Fprintf(&b, "plugin %s: tool %s: %s", e.Plugin, e.Tool, ErrTrap)
	} else {
		fmt.Fprintf(&b, "plugin %s: %s: %s", e.Plugin, e.Export, ErrTrap)
	}
	if e.ExitCode != 0 {
		fmt.Fprintf(&b, ": exited with code %d", e.ExitCode)
	}
	if e.OutOfMemory {
		fmt.Fprintf(&b, ": plugin ran out of memory (limits.memory %s); raise limits.memory of plugin %s if it needs more", formatBytes(e.Memory), e.Plugin)
	} else if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Denied != "" {
		b.WriteString(" (")
		b.WriteString(e.Denied)
		b.WriteString(")")
	}
	return b.String()
}

func (e *CrashError) Unwrap() error { return ErrTrap }

// crashedTool is err, the error of a call of the tool name, with the tool
// named if the plugin crashed.
func crashedTool(err error, name string) error {
	var ce *CrashError
	if errors.As(err, &ce) && !ce.Starting {
		ce.Tool = name
	}
	return err
}

// initError is the failure of the guest's runtime initialization.
type initError struct{ err error }

func (e *initError) Error() string { return "failed to initialize runtime: " + e.err.Error() }
func (e *initError) Unwrap() error { return e.err }

// formatBytes renders n bytes with the largest binary unit that divides it,
// as configurations write sizes: "64MiB".
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// crashError returns the error of a call of export that crashed with err
// (a trap or an exit), with the reason the plugin's stderr gave (see
// crashLog), and logs the trap's wasm stack trace: at debug when the
// plugin said why it crashed, which the error then reports, as a warning
// when it did not.
func (p *Plugin) crashError(s *callState, export string, err error) error {
	e := &CrashError{Plugin: p.name, Export: export, Memory: int64(p.opts.Limits.MemoryPages) * 65536, Denied: s.deniedText()}
	var ie *initError
	e.Starting = errors.As(err, &ie)
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		e.ExitCode = exit.ExitCode()
	}
	said, stack, oom := limiterFor(p.log).crash.take()
	e.OutOfMemory = oom
	msg := err.Error()
	if ie != nil {
		msg = ie.err.Error()
	}
	trace := ""
	if i := strings.Index(msg, "\nwasm stack trace:"); i >= 0 {
		msg, trace = msg[:i], msg[i:]
	}
	level := slog.LevelWarn
	switch {
	case said != "" && stack != "" && !e.Starting:
		// A Go panic no handler recovered (in a goroutine of the
		// plugin's, say): its goroutine's stack, once a call. One at
		// start fails every call alike, and is reported once.
		e.Reason = said
		p.log.Warn("plugin crashed", "export", export, "error", said, "stack", stack)
		level = slog.LevelDebug
	case said != "":
		e.Reason = said
		level = slog.LevelDebug
	case e.ExitCode == 0:
		e.Reason = msg
	}
	if trace != "" || said != "" {
		p.log.Log(context.Background(), level, "plugin crashed", "export", export, "error", msg+trace)
	}
	return e
}
