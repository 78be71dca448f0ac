// Package sdkdefaults sets the MCP go-sdk's compatibility settings that
// Hangar relies on, before the SDK reads them. Import it, for its side
// effect, from package main only.
//
// The SDK reads MCPGODEBUG once, when its package is initialized. Go
// initializes packages in import-path order among those whose imports are
// ready (the Go spec, "Package initialization"), and this package imports
// nothing of the SDK's, so its init runs first.
package sdkdefaults

import (
	"os"
	"strings"
)

// blockingCancelNotify makes the SDK deliver notifications/cancelled for a
// request it gave up on (an elicitation past its timeout, say) before the
// call returns. Without it the notification is sent in the background and,
// over Streamable HTTP, is often lost when the tool call's response stream
// closes first: the client keeps showing a form nobody waits for.
const blockingCancelNotify = "blockingcancelnotify=1"

func init() {
	v := os.Getenv("MCPGODEBUG")
	if strings.Contains(v, "blockingcancelnotify=") {
		return // the operator's choice wins
	}
	if v != "" {
		v += ","
	}
	os.Setenv("MCPGODEBUG", v+blockingCancelNotify)
}
