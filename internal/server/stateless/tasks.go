package stateless

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// The tasks extension (io.modelcontextprotocol/tasks): a tools/call of a
// request that declares it in its own _meta capabilities may be answered
// with a task (a CreateTaskResult, resultType "task") instead of its
// result, which the client then reads with tasks/get, answers with
// tasks/update and ends with tasks/cancel. The Table of package tasks holds
// the tasks; the edge decodes, checks and encodes. A request that does not
// declare the extension, and every request of an older version, is served
// as before.

// TasksExtension is the extension's name in capabilities.extensions.
const TasksExtension = wire.TasksExtension

// localClient is the client key of an anonymous request with no address
// (stdio, in-process): one client per process.
const localClient = "local"

// taskMethod reports whether method is one of the extension's requests
// that take a taskId.
func taskMethod(method string) bool {
	return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel"
}

// declaresTasks reports whether a request's _meta declares the extension
// among the client's capabilities.
func declaresTasks(meta mcp.Meta) bool { return wire.DeclaresTasks(meta) }

// missingTasks is the error of a request that needs the extension and
// does not declare it: the core's (core.MissingTasks), which refuses a
// tool that runs only as a task the same way.
func missingTasks(what string) *jsonrpc.Error { return core.MissingTasks(what) }

// clientKey tells an anonymous request's client from others, for the
// caps on tasks: the address the HTTP layer put in ctx, else localClient.
func clientKey(ctx context.Context) string {
	if a := mrtr.ClientOf(ctx); a != "" {
		return a
	}
	return localClient
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	id        string
	responses map[string]json.RawMessage // tasks/update
}

// readTaskParams reads the params of a tasks/* request: taskId (a
// non-empty string) and, for tasks/update, inputResponses (an object).
func readTaskParams(method string, params json.RawMessage) (*taskParams, *jsonrpc.Error) {
	var p map[string]json.RawMessage
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p == nil {
		return nil, invalidParams("%s: params must be an object with taskId", method)
	}
	var id string
	if err := json.Unmarshal(p["taskId"], &id); err != nil || id == "" {
		return nil, invalidParams("%s: params.taskId must be a non-empty string", method)
	}
	out := &taskParams{id: id}
	if method == "tasks/update" {
		raw := nonNull(p["inputResponses"])
		if raw == nil || json.Unmarshal(raw, &out.responses) != nil {
			return nil, invalidParams("tasks/update: params.inputResponses must be an object of answers by input request key")
		}
	}
	return out, nil
}

// taskID returns the taskId of a tasks/* request's params, "" if none.
func taskID(params json.RawMessage) string {
	var p struct {
		TaskID *string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == nil {
		return ""
	}
	return *p.TaskID
}

// serveTask answers tasks/get, tasks/update or tasks/cancel, of owner:
// the encoded answer, or the error to answer with.
func (e *calls) serveTask(id jsonrpc.ID, method string, params json.RawMessage, meta mcp.Meta, owner tasks.Owner) ([]byte, *jsonrpc.Error) {
	if !declaresTasks(meta) {
		return nil, missingTasks(method)
	}
	p, jerr := readTaskParams(method, params)
	if jerr != nil {
		return nil, jerr
	}
	var d *tasks.Detailed
	var err error
	switch method {
	case "tasks/get":
		d, err = e.tasks.Get(owner, p.id)
	case "tasks/update":
		err = e.tasks.Update(owner, p.id, p.responses)
	case "tasks/cancel":
		err = e.tasks.Cancel(owner, p.id)
	}
	if err != nil {
		if je := tasks.RPCError(err); je != nil {
			return nil, je
		}
		return nil, rpcError(err)
	}
	b, err := e.encodeTask(id, d, "complete")
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("encoding the answer to %s: %v", method, err)}
	}
	return b, nil
}

// taskLine answers a tasks/* request over stdio: a task held by another
// replica cannot be forwarded there (the table says so).
func (e *calls) taskLine(m *message, rm *reqMeta) []byte {
	b, jerr := e.serveTask(m.id, m.method, m.params, rm.meta, tasks.Owner{Client: localClient})
	if jerr != nil {
		return wire.EncodeError(m.id, jerr)
	}
	return b
}

// marshalTask encodes a task's view (nil: an empty result) with
// resultType and serverInfo in _meta.
func (e *calls) marshalTask(d *tasks.Detailed, resultType string) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if d != nil {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, err
		}
	}
	fields["resultType"], _ = json.Marshal(resultType)
	meta, err := json.Marshal(e.withServerInfo(nil))
	if err != nil {
		return nil, err
	}
	fields["_meta"] = meta
	return json.Marshal(fields)
}

// encodeTask encodes the answer to request id with a task's view.
func (e *calls) encodeTask(id jsonrpc.ID, d *tasks.Detailed, resultType string) ([]byte, error) {
	body, err := e.marshalTask(d, resultType)
	if err != nil {
		return nil, err
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: body})
}

// taskCreated is the go-sdk path's answer to a tools/call that became a
// task: a CallToolResult for the go-sdk, marshaled as a CreateTaskResult.
type taskCreated struct {
	mcp.Result
	e *calls
	d *tasks.Detailed
}

func (r *taskCreated) MarshalJSON() ([]byte, error) { return r.e.marshalTask(r.d, "task") }

// serveTaskHTTP answers a tasks/* request over HTTP: forwarded to the
// replica that holds the task if another does, else served here.
func (e *Edge) serveTaskHTTP(w http.ResponseWriter, r *http.Request, body []byte, m *message, rm *reqMeta) {
	if id := taskID(m.params); id != "" && e.fwd != nil && declaresTasks(rm.meta) {
		// Without peers, the table says where a task of another replica is.
		replica, err := e.tasks.Locate(id)
		if err != nil {
			writeError(w, http.StatusBadRequest, m.id, tasks.RPCError(err))
			return
		}
		if replica != e.m.Replica() {
			raw, _ := json.Marshal(m.id.Raw())
			e.fwd.Forward(w, r, body, replica, raw)
			return
		}
	}
	owner := tasks.Owner{Principal: core.Subject(sdkauth.TokenInfoFromContext(r.Context())), Client: clientKey(r.Context())}
	b, jerr := e.serveTask(m.id, m.method, m.params, rm.meta, owner)
	if jerr != nil {
		status := errorStatus(jerr)
		if status == 0 {
			status = http.StatusOK
		}
		writeError(w, status, m.id, jerr)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
