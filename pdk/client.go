package pdk

import (
	"encoding/json"
	"time"
)

// Root is a directory or other resource root the client exposes.
type Root struct {
	// URI is the root's URI, typically a file:// URI.
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}

// ListRootsResult is the client's list of roots.
type ListRootsResult struct {
	Roots []*Root `json:"roots"`
	Meta  Meta    `json:"_meta,omitempty"`
}

// LoggingLevel is the severity of a log message, as in syslog.
type LoggingLevel string

// The logging levels, from least to most severe.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

// LoggingMessageParams is a log message for the client.
type LoggingMessageParams struct {
	Level LoggingLevel `json:"level"`
	// Logger optionally names the component that logs.
	Logger string `json:"logger,omitempty"`
	// Data is the message: any value that encodes to JSON. The plugin
	// schema types it as a JSON object, so [Context.Log] sends a value that
	// does not encode to an object (a string, a number, an array) as
	// {"message": value}, and nil as {}.
	Data any  `json:"data"`
	Meta Meta `json:"_meta,omitempty"`
}

// ProgressParams reports the progress of a long-running request.
type ProgressParams struct {
	// ProgressToken is the token the client sent with the request. Leave it
	// nil to use the token of the request being served. It is sent as a
	// string, as the plugin schema types it: a number as its JSON text ("3"
	// for 3). Hangar gives the client the request's own token back when the
	// texts match, and drops progress under any other token (MCP allows
	// progress only under the token of a request in progress).
	ProgressToken any `json:"progressToken,omitempty"`
	// Progress increases with each notification, even if Total is unknown.
	Progress float64 `json:"progress"`
	// Total is the total amount of work, when known.
	Total   float64 `json:"total,omitempty"`
	Message string  `json:"message,omitempty"`
	Meta    Meta    `json:"_meta,omitempty"`
}

// SamplingMessage is a message of a sampling conversation. Its content is
// a [*TextContent], [*ImageContent] or [*AudioContent].
type SamplingMessage struct {
	Role    Role    `json:"role"`
	Content Content `json:"content"`
}

// ModelPreferences are the server's preferences for model selection.
// Priorities range from 0 to 1.
type ModelPreferences struct {
	Hints                []*ModelHint `json:"hints,omitempty"`
	CostPriority         float64      `json:"costPriority,omitempty"`
	SpeedPriority        float64      `json:"speedPriority,omitempty"`
	IntelligencePriority float64      `json:"intelligencePriority,omitempty"`
}

// ModelHint suggests a model by name or family, such as "claude-3-5-sonnet"
// or "sonnet".
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// The values of [CreateMessageParams.IncludeContext].
const (
	IncludeNone       = "none"
	IncludeThisServer = "thisServer"
	IncludeAllServers = "allServers"
)

// CreateMessageParams asks the client to sample a language model.
type CreateMessageParams struct {
	Messages []*SamplingMessage `json:"messages"`
	// MaxTokens is the maximum number of tokens to sample; it is required.
	MaxTokens        int64             `json:"maxTokens"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	Temperature      float64           `json:"temperature,omitempty"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
	// IncludeContext is one of IncludeNone, IncludeThisServer and
	// IncludeAllServers.
	IncludeContext string `json:"includeContext,omitempty"`
	// Metadata is passed to the model provider; its format is
	// provider-specific.
	Metadata any  `json:"metadata,omitempty"`
	Meta     Meta `json:"_meta,omitempty"`
}

// CreateMessageResult is the client's sampled message.
type CreateMessageResult struct {
	Role    Role    `json:"role"`
	Content Content `json:"content"`
	// Model names the model that produced the message.
	Model string `json:"model"`
	// StopReason is why sampling stopped, such as "endTurn" or
	// "maxTokens".
	StopReason string `json:"stopReason,omitempty"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// UnmarshalJSON decodes the result and its text, image or audio content.
func (r *CreateMessageResult) UnmarshalJSON(data []byte) error {
	type fields CreateMessageResult
	var wire struct {
		fields
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*r = CreateMessageResult(wire.fields)
	if len(wire.Content) == 0 {
		return nil
	}
	content, err := unmarshalSamplingContent(wire.Content)
	if err != nil {
		return err
	}
	r.Content = content
	return nil
}

// ElicitParams asks the user, through the client, to fill in a form.
type ElicitParams struct {
	// Message is shown to the user.
	Message string
	// RequestedSchema is the JSON Schema of the form: an object schema
	// whose properties are primitive. Any value that marshals to JSON
	// works; a [json.RawMessage] passes through unchanged. When nil, an
	// empty object schema is sent.
	RequestedSchema any
	// Timeout, when positive, bounds the wait for the user's answer.
	Timeout time.Duration
	Meta    Meta
}

// ElicitURLParams asks the user, through the client, to visit a URL, for
// example to sign in to a third-party service.
type ElicitURLParams struct {
	// Message is shown to the user.
	Message string
	// URL is the address to open.
	URL string
	// ElicitationID identifies the elicitation; it is required. Pass it to
	// [Context.NotifyURLElicitationCompleted] when the interaction is done.
	ElicitationID string
	// Timeout, when positive, bounds the wait for the user's answer.
	Timeout time.Duration
	Meta    Meta
}

// The actions of an [ElicitResult].
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the user's answer to an elicitation.
type ElicitResult struct {
	// Action is ElicitAccept, ElicitDecline or ElicitCancel.
	Action string `json:"action"`
	// Content holds the submitted form values when Action is ElicitAccept
	// in form mode.
	Content map[string]any `json:"content,omitempty"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// elicitRequest is the input of the create_elicitation import, for both
// modes.
type elicitRequest struct {
	Mode            string `json:"mode"`
	Message         string `json:"message"`
	RequestedSchema any    `json:"requestedSchema,omitempty"`
	URL             string `json:"url,omitempty"`
	ElicitationID   string `json:"elicitationId,omitempty"`
	// Timeout is in milliseconds.
	Timeout int64 `json:"timeout,omitempty"`
	Meta    Meta  `json:"_meta,omitempty"`
}

// timeoutMillis converts d to whole milliseconds, rounding up so that a
// positive timeout never becomes zero (no timeout).
func timeoutMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
