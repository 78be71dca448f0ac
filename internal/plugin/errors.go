package plugin

import "errors"

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
