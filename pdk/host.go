package pdk

import (
	"encoding/json"
	"errors"
)

// The Hangar host imports, in the Extism namespace extism:host/user.
const (
	importCreateMessage             = "create_message"
	importCreateElicitation         = "create_elicitation"
	importListRoots                 = "list_roots"
	importAskClient                 = "ask_client"
	importNotifyLoggingMessage      = "notify_logging_message"
	importNotifyProgress            = "notify_progress"
	importNotifyToolListChanged     = "notify_tool_list_changed"
	importNotifyResourceListChanged = "notify_resource_list_changed"
	importNotifyPromptListChanged   = "notify_prompt_list_changed"
	importNotifyResourceUpdated     = "notify_resource_updated"
	importNotifyURLElicitationDone  = "notify_url_elicitation_completed"
)

// ErrNoHost is returned by host calls in builds other than wasip1, where
// no Hangar host is present.
var ErrNoHost = errors.New("pdk: no Hangar host (not a wasip1 build)")

// HostError is the error of a host import that failed: for example when
// the client lacks the capability, answers with an error or does not
// answer in time.
type HostError struct {
	// Import is the name of the host import, such as "create_message".
	Import string
	// Message is the host's description of the failure.
	Message string
}

func (e *HostError) Error() string {
	return "pdk: " + e.Import + ": " + e.Message
}

// hostAPI is the part of the Extism host this package calls. Its input is
// nil for imports without input.
type hostAPI interface {
	// config returns the plugin configuration value of key.
	config(key string) (string, bool)
	// call invokes an import that returns a JSON document.
	call(name string, input []byte) ([]byte, error)
	// notify invokes an import that returns nothing.
	notify(name string, input []byte) error
}

// host is the host of this build: the Extism host in wasip1 builds, a
// stand-in returning ErrNoHost elsewhere.
var host hostAPI = defaultHost

// Config returns the value of key in the plugin's configuration (the
// config map of the plugin in Hangar's configuration file) and whether it
// is set.
func Config(key string) (string, bool) {
	return host.config(key)
}

// callJSON marshals params (unless nil), calls the value-returning import
// name and decodes its answer into result. An answer of the form
// {"error": ...} becomes a *HostError.
func callJSON(h hostAPI, name string, params, result any) error {
	var input []byte
	if params != nil {
		var err error
		if input, err = json.Marshal(params); err != nil {
			return wrapError(err, "pdk: encoding "+name+" request")
		}
	}
	output, err := h.call(name, input)
	if err != nil {
		return err
	}
	if len(output) == 0 {
		return &HostError{Import: name, Message: "empty answer"}
	}
	var failure struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(output, &failure) == nil && len(failure.Error) > 0 && string(failure.Error) != "null" {
		msg := string(failure.Error)
		_ = json.Unmarshal(failure.Error, &msg) // keep the raw JSON if it is not a string
		return &HostError{Import: name, Message: msg}
	}
	if err := json.Unmarshal(output, result); err != nil {
		return wrapError(err, "pdk: decoding "+name+" answer")
	}
	return nil
}

// notifyJSON marshals params (unless nil) and calls the notification
// import name.
func notifyJSON(h hostAPI, name string, params any) error {
	var input []byte
	if params != nil {
		var err error
		if input, err = json.Marshal(params); err != nil {
			return wrapError(err, "pdk: encoding "+name+" notification")
		}
	}
	return h.notify(name, input)
}

// wrappedError is the error wrapError returns.
type wrappedError struct {
	msg string
	err error
}

// wrapError returns an error reading msg, ": " and the text of err, which
// it wraps: what fmt.Errorf(msg+": %w", err) returns, without package fmt,
// which would cost every plugin 100 KB of code whether it formats anything
// or not.
func wrapError(err error, msg string) error {
	return &wrappedError{msg: msg, err: err}
}

func (e *wrappedError) Error() string { return e.msg + ": " + e.err.Error() }

func (e *wrappedError) Unwrap() error { return e.err }
