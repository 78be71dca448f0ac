package config

import "fmt"

// CheckName reports whether name is a valid plugin name, as plugins[].name
// must be: 1 to 64 lower-case letters, digits, "_" and "-", starting with a
// letter or digit. The error is an *Error with no position.
func CheckName(name string) error {
	if !nameRe.MatchString(name) {
		return &Error{Msg: fmt.Sprintf(`invalid plugin name %q: use 1 to 64 lower-case letters, digits, "_" and "-", starting with a letter or digit`, name)}
	}
	return nil
}
