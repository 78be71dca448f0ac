//go:build wasip1

// Command mrtr is the test plugin of internal/mrtr: its tools, prompt and
// resource ask the client for input in the middle of their execution, and
// answer with what they computed before asking, so that a test can tell
// the execution that resumed from a new one. Each execution draws a
// random nonce before it asks anything, puts it in its first question and
// in its answer, and counts itself in the instance's memory.
//
//	ask        {message?, timeout_ms?}: form elicitation of {name: string};
//	           answers {"nonce","call","action","content"} as JSON text
//	ask_twice  elicits {name}, then sends a log message and progress 1/2,
//	           elicits {age: integer}, then sends a log message and
//	           progress 2/2; answers {"nonce","first","second"}
//	sample     {prompt}: create_message; answers {"nonce","text","model"}
//	roots      list_roots; answers {"nonce","roots"}
//	url        {url}: URL elicitation, then notify_url_elicitation_completed
//	           on accept; answers {"nonce","action"}
//	touch      {mib, timeout_ms?}: allocates mib MiB and writes every page
//	           of it, then elicits {name} as ask, keeping the memory until
//	           it answers {"nonce","mib","action"}
//	count      answers how many executions of the tools above started on
//	           this instance
//	sleep      {ms, ask?, then_ms?, pad_kib?}: sleeps ms milliseconds (the
//	           sleep ends with the call's context), then, with ask, elicits
//	           {name} as ask does, then sleeps then_ms milliseconds more
//	           (even if the elicitation failed: a plugin that works on);
//	           answers {"nonce","slept_ms","content","pad"}, pad being
//	           pad_kib KiB of "x" (a large result), or the elicitation's
//	           error
//	prompt ask_prompt  elicits {name}; the message is "hello <name> <nonce>"
//	resource mrtr://ask elicits {name}; the text is "hello <name> <nonce>"
//
// A host import that fails makes the tool answer its message with isError.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o mrtr.wasm ./internal/testplugins/mrtr
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

// main is required by the toolchain; Hangar never calls it.
func main() {}

// started counts the executions that started on this instance.
var started int

func object(properties string, required ...string) json.RawMessage {
	schema := map[string]any{"type": "object", "properties": json.RawMessage(properties)}
	if len(required) > 0 {
		schema["required"] = required
	}
	b, err := json.Marshal(schema)
	if err != nil {
		panic(err) // static schemas
	}
	return b
}

// begin counts an execution and returns its nonce.
func begin() string {
	started++
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func jsonResult(v any) (*pdk.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return pdk.TextResult(string(b)), nil
}

var nameSchema = object(`{"name":{"type":"string","minLength":1}}`, "name")

func init() {
	pdk.AddTool(&pdk.Tool{Name: "ask", InputSchema: object(`{"message":{"type":"string"},"timeout_ms":{"type":"integer","minimum":0}}`)}, ask)
	pdk.AddTool(&pdk.Tool{Name: "ask_twice", InputSchema: object(`{}`)}, askTwice)
	pdk.AddTool(&pdk.Tool{Name: "sample", InputSchema: object(`{"prompt":{"type":"string"}}`, "prompt")}, sample)
	pdk.AddTool(&pdk.Tool{Name: "roots", InputSchema: object(`{}`)}, roots)
	pdk.AddTool(&pdk.Tool{Name: "url", InputSchema: object(`{"url":{"type":"string"}}`, "url")}, urlTool)
	pdk.AddTool(&pdk.Tool{Name: "touch", InputSchema: object(`{"mib":{"type":"integer","minimum":0,"maximum":4096},"timeout_ms":{"type":"integer","minimum":0}}`, "mib")}, touch)
	pdk.AddTool(&pdk.Tool{Name: "count", InputSchema: object(`{}`)}, count)
	pdk.AddTool(&pdk.Tool{Name: "sleep", InputSchema: object(`{"ms":{"type":"integer","minimum":0},"ask":{"type":"boolean"},"then_ms":{"type":"integer","minimum":0},"pad_kib":{"type":"integer","minimum":0,"maximum":65536}}`, "ms")}, sleep)
	// sleep as tools that say when their calls become tasks.
	for name, task := range map[string]pdk.TaskSupport{"sleep_never": pdk.TaskNever, "sleep_always": pdk.TaskAlways, "sleep_required": pdk.TaskRequired} {
		pdk.AddTool(&pdk.Tool{Name: name, Task: task, InputSchema: object(`{"ms":{"type":"integer","minimum":0},"ask":{"type":"boolean"},"then_ms":{"type":"integer","minimum":0},"pad_kib":{"type":"integer","minimum":0,"maximum":65536}}`, "ms")}, sleep)
	}
	pdk.AddPrompt(&pdk.Prompt{Name: "ask_prompt"}, askPrompt)
	pdk.AddResource(&pdk.Resource{URI: "mrtr://ask", Name: "ask"}, askResource)
}

func ask(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	nonce := begin()
	n := started
	args := struct {
		Message   string `json:"message"`
		TimeoutMS int64  `json:"timeout_ms"`
	}{Message: "What is your name?"}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := ctx.Elicit(&pdk.ElicitParams{
		Message:         args.Message + " " + nonce,
		RequestedSchema: nameSchema,
		Timeout:         time.Duration(args.TimeoutMS) * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	return jsonResult(map[string]any{"nonce": nonce, "call": n, "action": res.Action, "content": res.Content})
}

func askTwice(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	nonce := begin()
	first, err := ctx.Elicit(&pdk.ElicitParams{Message: "name " + nonce, RequestedSchema: nameSchema})
	if err != nil {
		return nil, err
	}
	if err := ctx.Logf(pdk.LevelInfo, "after first %s", nonce); err != nil {
		return nil, err
	}
	if err := ctx.Progress(&pdk.ProgressParams{Progress: 1, Total: 2, Message: "first"}); err != nil {
		return nil, err
	}
	second, err := ctx.Elicit(&pdk.ElicitParams{Message: "age " + nonce, RequestedSchema: object(`{"age":{"type":"integer"}}`, "age")})
	if err != nil {
		return nil, err
	}
	if err := ctx.Logf(pdk.LevelInfo, "after second %s", nonce); err != nil {
		return nil, err
	}
	if err := ctx.Progress(&pdk.ProgressParams{Progress: 2, Total: 2, Message: "second"}); err != nil {
		return nil, err
	}
	return jsonResult(map[string]any{"nonce": nonce, "first": first.Content, "second": second.Content})
}

func sample(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	nonce := begin()
	var args struct {
		Prompt string `json:"prompt"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := ctx.CreateMessage(&pdk.CreateMessageParams{
		Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: args.Prompt + " " + nonce}}},
		MaxTokens: 50,
	})
	if err != nil {
		return nil, err
	}
	text := ""
	if t, ok := res.Content.(*pdk.TextContent); ok {
		text = t.Text
	}
	return jsonResult(map[string]any{"nonce": nonce, "text": text, "model": res.Model})
}

func roots(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	nonce := begin()
	res, err := ctx.ListRoots()
	if err != nil {
		return nil, err
	}
	return jsonResult(map[string]any{"nonce": nonce, "roots": res.Roots})
}

func urlTool(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	nonce := begin()
	var args struct {
		URL string `json:"url"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := ctx.ElicitURL(&pdk.ElicitURLParams{Message: "open " + nonce, URL: args.URL, ElicitationID: "e-" + nonce})
	if err != nil {
		return nil, err
	}
	if res.Action == pdk.ElicitAccept {
		ctx.NotifyURLElicitationCompleted("e-" + nonce)
	}
	return jsonResult(map[string]any{"nonce": nonce, "action": res.Action})
}

// touch grows the instance's memory by the MiB asked for before it waits
// for the client, as a plugin that reads a large file or model and then
// asks does.
func touch(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	nonce := begin()
	var args struct {
		MiB       int   `json:"mib"`
		TimeoutMS int64 `json:"timeout_ms"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	buf := make([]byte, args.MiB<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i>>12) | 1
	}
	res, err := ctx.Elicit(&pdk.ElicitParams{
		Message:         "What is your name? " + nonce,
		RequestedSchema: nameSchema,
		Timeout:         time.Duration(args.TimeoutMS) * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	// The memory is still the call's: read it back.
	sum := 0
	for i := 0; i < len(buf); i += 4096 {
		sum += int(buf[i] & 1)
	}
	return jsonResult(map[string]any{"nonce": nonce, "mib": sum >> 8, "action": res.Action})
}

// sleep runs long, as a tool that becomes a task does: Hangar's clock
// ends the sleep, and the call, when the call's context ends.
func sleep(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	nonce := begin()
	var args struct {
		MS     int64 `json:"ms"`
		Ask    bool  `json:"ask"`
		ThenMS int64 `json:"then_ms"`
		PadKiB int   `json:"pad_kib"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	time.Sleep(time.Duration(args.MS) * time.Millisecond)
	var content map[string]any
	var askErr error
	if args.Ask {
		var res *pdk.ElicitResult
		if res, askErr = ctx.Elicit(&pdk.ElicitParams{Message: "name " + nonce, RequestedSchema: nameSchema}); askErr == nil {
			content = res.Content
		}
	}
	time.Sleep(time.Duration(args.ThenMS) * time.Millisecond)
	if askErr != nil {
		return nil, askErr
	}
	return jsonResult(map[string]any{"nonce": nonce, "slept_ms": args.MS, "content": content, "pad": strings.Repeat("x", args.PadKiB<<10)})
}

func count(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return pdk.TextResult(fmt.Sprint(started)), nil
}

func askName(ctx *pdk.Context) (string, error) {
	nonce := begin()
	res, err := ctx.Elicit(&pdk.ElicitParams{Message: "name " + nonce, RequestedSchema: nameSchema})
	if err != nil {
		return "", err
	}
	name, _ := res.Content["name"].(string)
	return "hello " + name + " " + nonce, nil
}

func askPrompt(ctx *pdk.Context, _ *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
	text, err := askName(ctx)
	if err != nil {
		return nil, err
	}
	return &pdk.GetPromptResult{Messages: []*pdk.PromptMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: text}}}}, nil
}

func askResource(ctx *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
	text, err := askName(ctx)
	if err != nil {
		return nil, err
	}
	return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{&pdk.TextResourceContents{URI: req.URI, Text: text}}}, nil
}
