package tasks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// A task id is "<random>.<mac>" or "<random>.<mac>.<replica>": 128 random
// bits, the replica that holds the task, and a 128-bit HMAC-SHA256 of
// both under a key every replica derives from the shared state key. The
// random part makes ids unguessable; the replica lets any replica route a
// tasks/* request to the one holding the task (Locate), as a sealed
// requestState names its replica; the MAC means that only a replica made
// the name, so a client cannot make a replica forward anywhere else.
const (
	randLen  = 22 // base64url of 16 bytes
	macLen   = 22
	maxIDLen = randLen + 1 + macLen + 1 + 63
)

// idLabel separates the task id keys from every other use of the state
// keys (sealing requestStates): mrtr.Manager.DeriveKeys derives them.
const idLabel = "hangar tasks: task id key v1"

func idMAC(key []byte, random, replica string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(random))
	h.Write([]byte{0})
	h.Write([]byte(replica))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// newID returns a new task id for replica.
func newID(key []byte, replica string) string {
	var b [16]byte
	rand.Read(b[:])
	r := base64.RawURLEncoding.EncodeToString(b[:])
	id := r + "." + idMAC(key, r, replica)
	if replica != "" {
		id += "." + replica
	}
	return id
}

// parseID authenticates id and returns the replica it names; ok is false
// for anything this server's replicas did not make.
func parseID(keys [][]byte, id string) (replica string, ok bool) {
	if len(id) > maxIDLen {
		return "", false
	}
	parts := strings.SplitN(id, ".", 3)
	if len(parts) < 2 || len(parts[0]) != randLen || len(parts[1]) != macLen {
		return "", false
	}
	if len(parts) == 3 {
		if replica = parts[2]; !mrtr.ReplicaRE.MatchString(replica) {
			return "", false
		}
	}
	for _, k := range keys {
		if hmac.Equal([]byte(parts[1]), []byte(idMAC(k, parts[0], replica))) {
			return replica, true
		}
	}
	return "", false
}
