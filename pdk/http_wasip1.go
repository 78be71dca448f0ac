//go:build wasip1

package pdk

import extism "github.com/extism/go-pdk"

//go:wasmimport extism:host/env http_request
func extismHTTPRequest(request, body uint64) uint64

//go:wasmimport extism:host/env http_status_code
func extismHTTPStatusCode() int32

//go:wasmimport extism:host/env http_headers
func extismHTTPHeaders() uint64

// sendHTTP sends the request meta (Extism's JSON) with body (nil for none)
// through Extism's http_request, and returns the status, the response body
// and the response's header fields (JSON, or nil). The host frees meta and
// body; the answers are read and freed here.
var sendHTTP = func(meta, body []byte) (status int, out, header []byte, err error) {
	var bodyOff uint64
	if body != nil {
		b := extism.AllocateBytes(body)
		bodyOff = b.Offset()
	}
	m := extism.AllocateBytes(meta)
	off := extismHTTPRequest(m.Offset(), bodyOff)
	status = int(extismHTTPStatusCode())
	out = readFree(off)
	if status != 0 {
		header = readFree(extismHTTPHeaders())
	}
	return status, out, header, nil
}

// readFree returns a copy of the block at off (nil for 0) and frees it.
func readFree(off uint64) []byte {
	if off == 0 {
		return nil
	}
	mem := extism.FindMemory(off)
	defer mem.Free()
	return mem.ReadBytes()
}
