package pdk

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Panics.
//
// A handler that panics fails its request, and the plugin goes on serving
// the next one. Its error names what the request was for (the tool, the
// resource's URI, the prompt) and the line of the plugin that panicked,
// the first frame of the panicking goroutine outside the Go runtime, the
// standard library and this PDK:
//
//	add: panic: assignment to entry in nil map at example.com/calc/main.go:42
//
// Built with -trimpath (as `hangar new` and Hangar's tests build), the
// file is relative to its module. The goroutine's stack follows the first
// line of the error the host gets, after a blank line; Hangar logs it once
// as a warning and gives the client the first line only. All of this runs
// only once a handler has panicked.

// pdkPath is the import path of this package, whose frames (and those of
// the packages below it, such as typed) are not the plugin's.
const pdkPath = "github.com/hangar-mcp/hangar/pdk"

// serveFunc is the function that serves every export: the frames past it
// are its callers'.
const serveFunc = pdkPath + ".(*registry).serve"

// maxPanicStack bounds the stack a panic's error carries.
const maxPanicStack = 16 << 10

// maxPanicMessage bounds the message of a panic in its error: the client
// reads it, and the host logs it.
const maxPanicMessage = 4 << 10

// capMessage returns m, or its first maxPanicMessage bytes (whole UTF-8
// characters) and how much was left out.
func capMessage(m string) string {
	if len(m) <= maxPanicMessage {
		return m
	}
	n := maxPanicMessage
	for n > 0 && !utf8.RuneStart(m[n]) {
		n--
	}
	return m[:n] + "... (" + strconv.Itoa(len(m)-n) + " more bytes)"
}

// panicError is the error of a handler serving subject that panicked with
// p. It must be called by the deferred function that recovered p, so that
// the panicking frames are still on the stack.
func panicError(subject string, p any) error {
	var pcs [64]uintptr
	n := runtime.Callers(2, pcs[:]) // from the deferred function
	msg := subject + ": panic: " + capMessage(fmt.Sprint(p))
	if at := pluginFrame(pcs[:n]); at != "" {
		msg += " at " + at
	}
	return &panicErr{msg: msg, stack: goroutineStack()}
}

// panicErr is a recovered panic: its message, and the stack of the
// goroutine that panicked.
type panicErr struct {
	msg   string
	stack string
}

// Error is what the host gets: the message, a blank line and the stack.
func (e *panicErr) Error() string {
	if e.stack == "" {
		return e.msg
	}
	return e.msg + "\n\n" + e.stack
}

// pluginFrame returns "file:line" of the first of the frames pcs (from
// the innermost) that is the plugin's: outside the runtime, the standard
// library and this PDK. Only the frames the PDK's dispatch called are
// looked at, not its callers'. When none is the plugin's, it returns the
// first outside the runtime and the PDK (a plugin whose module path has no
// dot, "hello/tools", looks like the standard library), or "" (a panic of
// the PDK itself).
func pluginFrame(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	fallback := ""
	for {
		f, more := frames.Next()
		if f.Function == serveFunc {
			return fallback
		}
		if pkg := funcPackage(f.Function); f.Function != "" && pkg != "runtime" && !isPDK(pkg) {
			at := f.File + ":" + strconv.Itoa(f.Line)
			if !isStandard(pkg) {
				return at
			}
			if fallback == "" {
				fallback = at
			}
		}
		if !more {
			return fallback
		}
	}
}

// funcPackage returns the import path of the package of the function
// named fn, as runtime.Frame names it ("example.com/m/pkg.(*T).Method",
// "main.main.func1").
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// isPDK reports whether pkg is this package or one below it.
func isPDK(pkg string) bool {
	return pkg == pdkPath || strings.HasPrefix(pkg, pdkPath+"/")
}

// isStandard reports whether pkg is in Go's standard library (or the
// runtime's internals): its first element has no dot, and it is not the
// plugin's package main.
func isStandard(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return pkg != "main" && !strings.Contains(first, ".")
}

// goroutineStack returns the stack of the calling goroutine, at most
// maxPanicStack bytes of it, from the panic on: the frames of the PDK's
// recovery above it are left out.
func goroutineStack() string {
	buf := make([]byte, 4096)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) || len(buf) >= maxPanicStack {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	s := strings.TrimRight(string(buf), "\n")
	header, frames, _ := strings.Cut(s, "\n")
	if i := strings.Index(frames, "\npanic("); i >= 0 {
		s = header + frames[i:]
	}
	return s
}
