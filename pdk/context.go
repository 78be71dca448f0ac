package pdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Context is the request being served, handed to every handler. Its
// methods reach the MCP client of the session that sent the request.
//
// A Context is valid only until its handler returns. A Context built
// outside this package, as in a plugin's unit tests, has the ID and Meta
// it is given and, outside wasip1 builds, no host: its host calls fail with
// [ErrNoHost].
type Context struct {
	// ID is the JSON-RPC id of the MCP request, as a string; it is empty
	// when there is none, as for notifications.
	ID string
	// Meta is the _meta object of the request; handlers never get a nil
	// Meta.
	Meta Meta

	host hostAPI
}

// hostAPI returns the host that serves c.
func (c *Context) hostAPI() hostAPI {
	if c.host == nil {
		return host
	}
	return c.host
}

// ProgressToken returns the progress token the client sent with the
// request (a string or a number), or nil if it sent none.
func (c *Context) ProgressToken() any {
	return c.Meta["progressToken"]
}

// CreateMessage asks the client to sample a language model and waits for
// the answer. It fails with a *HostError when the client does not support
// sampling, refuses, or does not answer in time.
func (c *Context) CreateMessage(params *CreateMessageParams) (*CreateMessageResult, error) {
	var res CreateMessageResult
	if err := callJSON(c.hostAPI(), importCreateMessage, params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Elicit asks the user, through the client, to fill in a form and waits
// for the answer. It fails with a *HostError when the client does not
// support form elicitation or does not answer within the timeout.
func (c *Context) Elicit(params *ElicitParams) (*ElicitResult, error) {
	schema := params.RequestedSchema
	if schema == nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return c.elicit(&elicitRequest{
		Mode:            "form",
		Message:         params.Message,
		RequestedSchema: schema,
		Timeout:         timeoutMillis(params.Timeout),
		Meta:            params.Meta,
	})
}

// ElicitURL asks the user, through the client, to open a URL, and waits
// for the answer, which tells whether the user agreed to open it. It fails
// with a *HostError when the client does not support URL elicitation or
// does not answer within the timeout.
func (c *Context) ElicitURL(params *ElicitURLParams) (*ElicitResult, error) {
	if params.ElicitationID == "" {
		return nil, errors.New("pdk: ElicitURL: ElicitationID is required")
	}
	return c.elicit(&elicitRequest{
		Mode:          "url",
		Message:       params.Message,
		URL:           params.URL,
		ElicitationID: params.ElicitationID,
		Timeout:       timeoutMillis(params.Timeout),
		Meta:          params.Meta,
	})
}

func (c *Context) elicit(req *elicitRequest) (*ElicitResult, error) {
	var res ElicitResult
	if err := callJSON(c.hostAPI(), importCreateElicitation, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListRoots asks the client for its roots. It fails with a *HostError
// when the client does not support roots.
func (c *Context) ListRoots() (*ListRootsResult, error) {
	var res ListRootsResult
	if err := callJSON(c.hostAPI(), importListRoots, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Log sends a log message to the client. Hangar forwards it only if its
// level is at or above the level the client set. Data that does not encode
// to a JSON object is sent as {"message": Data}, and nil as {} (see
// [LoggingMessageParams.Data]).
func (c *Context) Log(params *LoggingMessageParams) error {
	data, err := logData(params.Data)
	if err != nil {
		return wrapError(err, "pdk: encoding "+importNotifyLoggingMessage+" notification")
	}
	withData := *params
	withData.Data = data
	return notifyJSON(c.hostAPI(), importNotifyLoggingMessage, &withData)
}

// logData returns the JSON object to send as the data of a log message:
// v itself if it encodes to an object, {} for nil and {"message": v}
// otherwise.
func logData(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	switch b = bytes.TrimSpace(b); {
	case string(b) == "null":
		return json.RawMessage("{}"), nil
	case b[0] == '{':
		return b, nil
	}
	return json.Marshal(map[string]json.RawMessage{"message": b})
}

// Logf sends a text log message to the client, formatted as by
// [fmt.Sprintf]. The client gets the text as {"message": text}.
func (c *Context) Logf(level LoggingLevel, format string, args ...any) error {
	return c.Log(&LoggingMessageParams{Level: level, Data: fmt.Sprintf(format, args...)})
}

// Progress reports the progress of the request. When params.ProgressToken
// is nil the request's token is used, and if the client sent none,
// Progress sends nothing: MCP allows progress only for requests that
// asked for it. The token is sent as a string (see
// [ProgressParams.ProgressToken]).
func (c *Context) Progress(params *ProgressParams) error {
	token := params.ProgressToken
	if token == nil {
		if token = c.ProgressToken(); token == nil {
			return nil
		}
	}
	text, err := tokenString(token)
	if err != nil {
		return wrapError(err, "pdk: encoding "+importNotifyProgress+" notification")
	}
	withToken := *params
	withToken.ProgressToken = text
	return notifyJSON(c.hostAPI(), importNotifyProgress, &withToken)
}

// tokenString returns a progress token as the schema types it, a string: a
// string as it is, anything else as its JSON text.
func tokenString(token any) (string, error) {
	if s, ok := token.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(token)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// NotifyToolListChanged tells Hangar that the plugin's tools changed; it
// lists them again and informs the clients.
func (c *Context) NotifyToolListChanged() {
	_ = notifyJSON(c.hostAPI(), importNotifyToolListChanged, nil)
}

// NotifyResourceListChanged tells Hangar that the plugin's resources or
// resource templates changed; it lists them again and informs the
// clients.
func (c *Context) NotifyResourceListChanged() {
	_ = notifyJSON(c.hostAPI(), importNotifyResourceListChanged, nil)
}

// NotifyPromptListChanged tells Hangar that the plugin's prompts changed;
// it lists them again and informs the clients.
func (c *Context) NotifyPromptListChanged() {
	_ = notifyJSON(c.hostAPI(), importNotifyPromptListChanged, nil)
}

// NotifyResourceUpdated tells the clients subscribed to uri that the
// resource changed.
func (c *Context) NotifyResourceUpdated(uri string) {
	_ = notifyJSON(c.hostAPI(), importNotifyResourceUpdated, struct {
		URI string `json:"uri"`
	}{uri})
}

// NotifyURLElicitationCompleted tells the client that the out-of-band
// interaction of the URL elicitation with the given id is complete.
func (c *Context) NotifyURLElicitationCompleted(elicitationID string) {
	_ = notifyJSON(c.hostAPI(), importNotifyURLElicitationDone, struct {
		ElicitationID string `json:"elicitationId"`
	}{elicitationID})
}
