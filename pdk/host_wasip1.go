//go:build wasip1

package pdk

import (
	"errors"
	"strconv"

	extism "github.com/extism/go-pdk"
)

// defaultHost in wasip1 builds is the Extism host running the plugin.
var defaultHost hostAPI = extismHost{}

// extismHost calls Hangar's imports through Extism memory.
type extismHost struct{}

//go:wasmimport extism:host/user create_message
func hostCreateMessage(uint64) uint64

//go:wasmimport extism:host/user create_elicitation
func hostCreateElicitation(uint64) uint64

//go:wasmimport extism:host/user list_roots
func hostListRoots() uint64

//go:wasmimport extism:host/user ask_client
func hostAskClient(uint64) uint64

// askClient is hostAskClient once Context.Ask has run (enableAsk): a
// plugin that never calls Ask does not import ask_client, Hangar's own
// import, and runs on any host that has the plugin schema's.
var askClient func(uint64) uint64

func enableAsk() { askClient = hostAskClient }

//go:wasmimport extism:host/user notify_logging_message
func hostNotifyLoggingMessage(uint64)

//go:wasmimport extism:host/user notify_progress
func hostNotifyProgress(uint64)

//go:wasmimport extism:host/user notify_tool_list_changed
func hostNotifyToolListChanged()

//go:wasmimport extism:host/user notify_resource_list_changed
func hostNotifyResourceListChanged()

//go:wasmimport extism:host/user notify_prompt_list_changed
func hostNotifyPromptListChanged()

//go:wasmimport extism:host/user notify_resource_updated
func hostNotifyResourceUpdated(uint64)

//go:wasmimport extism:host/user notify_url_elicitation_completed
func hostNotifyURLElicitationCompleted(uint64)

func (extismHost) config(key string) (string, bool) {
	return extism.GetConfig(key)
}

// call and notify choose the import by a switch, not a map: a map would be
// built at start by every plugin, which calls none of them.

func (extismHost) call(name string, input []byte) ([]byte, error) {
	var fn func(uint64) uint64
	switch name {
	case importCreateMessage:
		fn = hostCreateMessage
	case importCreateElicitation:
		fn = hostCreateElicitation
	case importListRoots:
		fn = func(uint64) uint64 { return hostListRoots() }
	case importAskClient:
		if fn = askClient; fn == nil {
			return nil, errors.New("pdk: " + importAskClient + " called without Context.Ask")
		}
	default:
		return nil, errors.New("pdk: unknown host import " + strconv.Quote(name))
	}
	offset := withInput(input, fn)
	if offset == 0 {
		return nil, nil
	}
	mem := extism.FindMemory(offset)
	defer mem.Free()
	return mem.ReadBytes(), nil
}

func (extismHost) notify(name string, input []byte) error {
	var fn func(uint64)
	switch name {
	case importNotifyLoggingMessage:
		fn = hostNotifyLoggingMessage
	case importNotifyProgress:
		fn = hostNotifyProgress
	case importNotifyToolListChanged:
		fn = func(uint64) { hostNotifyToolListChanged() }
	case importNotifyResourceListChanged:
		fn = func(uint64) { hostNotifyResourceListChanged() }
	case importNotifyPromptListChanged:
		fn = func(uint64) { hostNotifyPromptListChanged() }
	case importNotifyResourceUpdated:
		fn = hostNotifyResourceUpdated
	case importNotifyURLElicitationDone:
		fn = hostNotifyURLElicitationCompleted
	default:
		return errors.New("pdk: unknown host import " + strconv.Quote(name))
	}
	withInput(input, func(offset uint64) uint64 {
		fn(offset)
		return 0
	})
	return nil
}

// withInput copies input, if any, to Extism memory, calls fn with its
// offset (0 without input) and frees the copy.
func withInput(input []byte, fn func(uint64) uint64) uint64 {
	if input == nil {
		return fn(0)
	}
	mem := extism.AllocateBytes(input)
	defer mem.Free()
	return fn(mem.Offset())
}
