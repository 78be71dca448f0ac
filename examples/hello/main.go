//go:build wasip1

// Command hello is a small Hangar plugin with everyday tools: greet,
// hash, uuid and base64.
package main

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"

	"github.com/hangar-mcp/hangar/pdk"
)

func init() {
	readOnly := &pdk.ToolAnnotations{ReadOnlyHint: true}
	pdk.AddTool(&pdk.Tool{
		Name:        "greet",
		Title:       "Greet",
		Description: "Greet someone by name.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"name": {"type": "string", "description": "Who to greet"}},
			"required": ["name"]
		}`),
		Annotations: readOnly,
	}, greet)
	pdk.AddTool(&pdk.Tool{
		Name:        "hash",
		Title:       "Hash text",
		Description: "Compute the hex digest of a UTF-8 text with md5, sha1, sha256 (default) or sha512.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"text": {"type": "string", "description": "Text to hash"},
				"algorithm": {"type": "string", "enum": ["md5", "sha1", "sha256", "sha512"], "default": "sha256"}
			},
			"required": ["text"]
		}`),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"algorithm": {"type": "string"}, "digest": {"type": "string"}},
			"required": ["algorithm", "digest"]
		}`),
		Annotations: readOnly,
	}, hashText)
	pdk.AddTool(&pdk.Tool{
		Name:        "uuid",
		Title:       "Random UUID",
		Description: "Generate random (version 4) UUIDs.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"count": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1}}
		}`),
		Annotations: readOnly,
	}, newUUIDs)
	pdk.AddTool(&pdk.Tool{
		Name:        "base64",
		Title:       "Base64",
		Description: "Encode text to standard base64, or decode base64 to text.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"text": {"type": "string"},
				"decode": {"type": "boolean", "default": false, "description": "Decode instead of encode"}
			},
			"required": ["text"]
		}`),
		Annotations: readOnly,
	}, convertBase64)
}

func greet(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if args.Name == "" {
		args.Name = "world"
	}
	greeting, ok := pdk.Config("greeting")
	if !ok {
		greeting = "Hello"
	}
	return pdk.TextResult(fmt.Sprintf("%s, %s!", greeting, args.Name)), nil
}

// hashes are the supported hash algorithms.
var hashes = map[string]func() hash.Hash{
	"md5":    md5.New,
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha512": sha512.New,
}

func hashText(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	args := struct {
		Text      string `json:"text"`
		Algorithm string `json:"algorithm"`
	}{Algorithm: "sha256"}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	newHash, ok := hashes[args.Algorithm]
	if !ok {
		return nil, fmt.Errorf("unknown algorithm %q: use md5, sha1, sha256 or sha512", args.Algorithm)
	}
	h := newHash()
	h.Write([]byte(args.Text))
	digest := hex.EncodeToString(h.Sum(nil))
	res := pdk.TextResult(digest)
	res.StructuredContent = map[string]string{"algorithm": args.Algorithm, "digest": digest}
	return res, nil
}

func newUUIDs(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	args := struct {
		Count int `json:"count"`
	}{Count: 1}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if args.Count < 1 || args.Count > 100 {
		return nil, fmt.Errorf("count must be between 1 and 100, not %d", args.Count)
	}
	ids := make([]string, args.Count)
	for i := range ids {
		ids[i] = uuid4()
	}
	return pdk.TextResult(strings.Join(ids, "\n")), nil
}

// uuid4 returns a random RFC 9562 version 4 UUID.
func uuid4() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func convertBase64(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Text   string `json:"text"`
		Decode bool   `json:"decode"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if !args.Decode {
		return pdk.TextResult(base64.StdEncoding.EncodeToString([]byte(args.Text))), nil
	}
	decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(args.Text))
	if err != nil {
		return nil, fmt.Errorf("invalid base64: %w", err)
	}
	return pdk.TextResult(string(decoded)), nil
}

// main is required by the toolchain; Hangar never calls it.
func main() {}
