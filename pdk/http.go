package pdk

import (
	"encoding/json"
	"errors"
	"strings"
)

// HTTP requests.
//
// A plugin sends HTTP requests through its host, with Extism's
// http_request: the host sends them, to the hosts the plugin's
// grants.allowed_hosts allows and nowhere else, and answers with the
// response. Hangar answers a request it refuses, or that fails, with the
// reason, which Fetch returns as an *HTTPError; under another Extism host
// such a request traps, as Extism's do.

// ErrHTTPDenied is wrapped by the error of a request the plugin's grants do
// not allow: a host not in grants.allowed_hosts, a local address reached
// through a wildcard grant, Hangar's own server. The error's message names
// the host and the grant to add.
var ErrHTTPDenied = errors.New("pdk: HTTP request denied")

// HTTPRequest is an HTTP request to send with [Fetch].
type HTTPRequest struct {
	// Method is the HTTP method, such as "GET" or "POST"; "" means GET.
	Method string
	// URL is the absolute URL to request, with scheme http or https.
	URL string
	// Header holds the request's header fields, one value each.
	Header map[string]string
	// Body is the request's body; nil sends none.
	Body []byte
}

// HTTPResponse is the response to an [HTTPRequest].
type HTTPResponse struct {
	// StatusCode is the HTTP status, such as 200.
	StatusCode int
	// Header holds the response's header fields, under their canonical
	// names ("Content-Type"); the values of a field sent several times are
	// joined with ", ".
	Header HTTPHeader
	// Body is the response's body, read whole. The host bounds its size
	// (Hangar: the plugin's memory limit, at most 50MiB).
	Body []byte
}

// HTTPHeader holds the header fields of an [HTTPResponse].
type HTTPHeader map[string]string

// Get returns the value of the header field name, whatever its case, or
// "" if there is none.
func (h HTTPHeader) Get(name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// HTTPError is the error of a request the host did not send, or that got
// no response: refused by the plugin's grants (it then wraps
// [ErrHTTPDenied]), an unreachable server, a response too large. A response
// with any status, 404 or 500 included, is not an error.
type HTTPError struct {
	// Method and URL are the request's; URL has no query, which may hold
	// credentials.
	Method, URL string
	// Message is the host's description of the failure.
	Message string
	// Denied reports a request the plugin's grants do not allow.
	Denied bool
}

func (e *HTTPError) Error() string {
	return "pdk: " + e.Method + " " + e.URL + ": " + e.Message
}

// Is reports whether target is ErrHTTPDenied and the request was denied.
func (e *HTTPError) Is(target error) bool {
	return target == ErrHTTPDenied && e.Denied
}

// Get sends a GET request for url; see [Fetch].
func Get(url string) (*HTTPResponse, error) {
	return Fetch(&HTTPRequest{URL: url})
}

// Fetch sends req through the host and returns the response, whatever its
// status. It fails with an [*HTTPError] when the host does not send the
// request (the plugin's grants do not allow its host: the error wraps
// [ErrHTTPDenied] and names the grant to add) or gets no response; outside
// wasip1 builds, where no host sends requests, with an error wrapping
// [ErrNoHost].
//
// Redirects are followed by the host, each checked against the grants
// like the first URL.
func Fetch(req *HTTPRequest) (*HTTPResponse, error) {
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = "GET"
	}
	meta, err := json.Marshal(httpMeta{URL: req.URL, Method: method, Headers: req.Header, Hangar: 1})
	if err != nil {
		return nil, httpFailure(method, req.URL, "encoding the request: "+err.Error(), false)
	}
	status, body, header, err := sendHTTP(meta, req.Body)
	if err != nil {
		return nil, err
	}
	if status == 0 {
		var f struct {
			Error  string `json:"error"`
			Denied bool   `json:"denied"`
		}
		if json.Unmarshal(body, &f) != nil || f.Error == "" {
			f.Error = "the host answered no status and no reason"
		}
		return nil, httpFailure(method, req.URL, f.Error, f.Denied)
	}
	resp := &HTTPResponse{StatusCode: status, Body: body}
	if len(header) > 0 {
		if err := json.Unmarshal(header, &resp.Header); err != nil {
			return nil, httpFailure(method, req.URL, "decoding the response's header: "+err.Error(), false)
		}
	}
	return resp, nil
}

// httpMeta is the request as Extism's http_request takes it. Hangar is
// Hangar's own field: 1 asks Hangar to answer a failure with status 0 and
// {"error", "denied"} as the body, rather than trap, and to keep the
// response's header fields for http_headers. Other Extism hosts ignore it.
type httpMeta struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers,omitempty"`
	Hangar  int               `json:"hangar"`
}

// httpFailure returns the *HTTPError of a request.
func httpFailure(method, url, msg string, denied bool) *HTTPError {
	url, _, _ = strings.Cut(url, "?")
	return &HTTPError{Method: method, URL: url, Message: msg, Denied: denied}
}
