package mrtr

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// KeySize is the size of a state key: AES-256.
const KeySize = 32

// maxStateLen bounds the requestState a retry may present, before any
// work is done on it. The states this package issues are a few hundred
// characters; most of it is the principal.
const maxStateLen = 8 << 10

// stateAAD is the associated data of every sealed state: it ties the
// ciphertext to its purpose and format version, so that nothing else
// sealed with the same key could pass for a state.
var stateAAD = []byte("hangar mrtr requestState v1")

// state is what a requestState carries, sealed (AES-256-GCM) so that only
// replicas holding the key can read it and nobody can change it.
type state struct {
	Principal string `json:"p,omitempty"` // the token's subject; "" for none
	Method    string `json:"m"`
	Digest    []byte `json:"d"` // ParamsDigest of the request
	Expiry    int64  `json:"e"` // Unix milliseconds
	Use       string `json:"u"` // single-use id
	Replica   string `json:"r"` // the replica holding the call
	Call      string `json:"c"` // the call's id
}

// sealer seals states with one key and opens them with it or with older
// keys (for rotation).
type sealer struct {
	seal  cipher.AEAD
	opens []cipher.AEAD // seal first
	keys  [][]byte      // the keys of opens, for DeriveKeys
}

func newSealer(key []byte, previous [][]byte) (*sealer, error) {
	if key == nil {
		key = make([]byte, KeySize)
		rand.Read(key)
	}
	s := &sealer{}
	for i, k := range append([][]byte{key}, previous...) {
		if len(k) != KeySize {
			what := "the state key"
			if i > 0 {
				what = fmt.Sprintf("previous state key %d", i)
			}
			return nil, fmt.Errorf("%s has %d bytes: it must have %d (AES-256)", what, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		s.opens = append(s.opens, aead)
		s.keys = append(s.keys, k)
	}
	s.seal = s.opens[0]
	return s, nil
}

// sealState returns st as a requestState: base64url (unpadded) of a random
// nonce followed by the ciphertext of st's JSON.
func (s *sealer) sealState(st *state) string {
	plain, err := json.Marshal(st)
	if err != nil {
		panic(err) // strings, bytes and numbers always encode
	}
	nonce := make([]byte, s.seal.NonceSize(), s.seal.NonceSize()+len(plain)+s.seal.Overhead())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.seal.Seal(nonce, nonce, plain, stateAAD))
}

// openState authenticates and decodes a requestState and checks its
// expiry against now. Any failure but expiry is ErrStateInvalid.
func (s *sealer) openState(text string, now time.Time) (*state, error) {
	if len(text) > maxStateLen {
		return nil, fmt.Errorf("%w (longer than %d characters)", ErrStateInvalid, maxStateLen)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil || len(raw) < s.seal.NonceSize()+s.seal.Overhead() {
		return nil, ErrStateInvalid
	}
	nonce, sealed := raw[:s.seal.NonceSize()], raw[s.seal.NonceSize():]
	var plain []byte
	for _, aead := range s.opens {
		if plain, err = aead.Open(nil, nonce, sealed, stateAAD); err == nil {
			break
		}
	}
	if err != nil {
		return nil, ErrStateInvalid
	}
	var st state
	if err := json.Unmarshal(plain, &st); err != nil || st.Method == "" || st.Use == "" || st.Call == "" || len(st.Digest) != 32 {
		return nil, ErrStateInvalid
	}
	if now.UnixMilli() >= st.Expiry {
		return nil, fmt.Errorf("%w (at %s)", ErrStateExpired, time.UnixMilli(st.Expiry).UTC().Format(time.RFC3339))
	}
	return &st, nil
}
